//! Ticket transfers in PostgreSQL. Each write is one transaction on the pool that
//! locks the ticket's row first (as a check-in does), so an offer, an accept, a cancel
//! and a scan of one ticket take turns on every node; every move of an offer is
//! conditional on it being open, and the unique index on open offers lets one of two
//! racing offers in. A refusal rolls the transaction back: nothing is written.

use boxoffice_domain::ticket::TicketId;
use boxoffice_domain::{BuyerId, EventId, Millis, OrderEvent, TransferId};
use boxoffice_engine::ports::{
    Accept, Accepted, StoreError, TicketFacts, TransferOffer, TransferRefusal, TransferState,
};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use crate::PostgresLedger;
use crate::conn::{corrupt, db};
use crate::handover::{self, Handover, count_move, hand_over, history_line, kept, locked_ticket};
use crate::ticket_rows::version;

type Answer<T> = Result<Result<T, TransferRefusal>, StoreError>;

/// The offer's columns in `offer_of`'s order, up to the FROM.
macro_rules! offers_sql {
    () => {
        "SELECT id, ticket_id, event_id, from_buyer, to_buyer, version, state,
            created_at, expires_at, ended_at FROM ticket_transfers "
    };
}

fn offer_of(row: &PgRow) -> Result<TransferOffer, StoreError> {
    let text = |i: usize| row.try_get::<String, _>(i).map_err(db);
    let v: i32 = row.try_get(5).map_err(db)?;
    let state = text(6)?;
    Ok(TransferOffer {
        id: text(0)?.parse().map_err(|e| corrupt("transfer id", e))?,
        ticket: text(1)?.parse().map_err(|e| corrupt("ticket id", e))?,
        event: EventId(row.try_get(2).map_err(db)?),
        from: text(3)?.parse().map_err(|e| corrupt("sender", e))?,
        to: text(4)?.parse().map_err(|e| corrupt("recipient", e))?,
        version: u32::try_from(v).map_err(|e| corrupt("offer version", e))?,
        state: TransferState::parse(&state).ok_or_else(|| corrupt("transfer state", &state))?,
        created_at: Millis(row.try_get(7).map_err(db)?),
        expires_at: Millis(row.try_get(8).map_err(db)?),
        ended_at: row.try_get::<Option<i64>, _>(9).map_err(db)?.map(Millis),
    })
}

async fn read_offer(
    conn: &mut PgConnection,
    id: TransferId,
) -> Result<Option<TransferOffer>, StoreError> {
    let row = sqlx::query(concat!(offers_sql!(), "WHERE id = $1"))
        .bind(id.to_string())
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
    row.as_ref().map(offer_of).transpose()
}

/// The ticket, locked, if `from` holds it at `version`, unscanned, its order paid for.
async fn movable(
    conn: &mut PgConnection,
    id: TicketId,
    from: BuyerId,
    v: u32,
) -> Answer<TicketFacts> {
    Ok(handover::movable(conn, id, from, v)
        .await?
        .map_err(Into::into))
}

/// The offer, if `party` may act on it and it is still open at `now`.
fn still_open(
    offer: Option<TransferOffer>,
    now: Millis,
    party: impl Fn(&TransferOffer) -> bool,
) -> Result<TransferOffer, TransferRefusal> {
    match offer {
        Some(o) if party(&o) => match o.state_at(now) {
            TransferState::Offered => Ok(o),
            ended => Err(TransferRefusal::Ended(ended)),
        },
        _ => Err(TransferRefusal::NotFound),
    }
}

impl PostgresLedger {
    pub(crate) async fn offer_transfer_tx(&self, o: &TransferOffer) -> Answer<()> {
        let o = o.clone();
        self.apart(move |c| {
            let o = o.clone();
            Box::pin(async move { offer(c, &o).await.map(kept) })
        })
        .await
    }

    pub(crate) async fn accept_transfer_tx(&self, a: &Accept) -> Answer<Accepted> {
        let a = a.clone();
        self.apart(move |c| {
            let a = a.clone();
            Box::pin(async move { accept(c, &a).await.map(kept) })
        })
        .await
    }

    pub(crate) async fn cancel_transfer_tx(
        &self,
        id: TransferId,
        by: BuyerId,
        now: Millis,
    ) -> Answer<TransferOffer> {
        self.apart(move |c| Box::pin(async move { cancel(c, id, by, now).await.map(kept) }))
            .await
    }

    pub(crate) async fn read_transfer(
        &self,
        id: TransferId,
    ) -> Result<Option<TransferOffer>, StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db)?;
        read_offer(&mut conn, id).await
    }

    pub(crate) async fn read_transfers_of(
        &self,
        buyer: BuyerId,
        limit: u32,
    ) -> Result<Vec<TransferOffer>, StoreError> {
        let sql = concat!(
            "SELECT * FROM ((",
            offers_sql!(),
            "WHERE from_buyer = $1 ORDER BY created_at DESC LIMIT $2) UNION ALL (",
            offers_sql!(),
            "WHERE to_buyer = $1 ORDER BY created_at DESC LIMIT $2)) x
             ORDER BY created_at DESC, id LIMIT $2"
        );
        let rows = sqlx::query(sql)
            .bind(buyer.to_string())
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await
            .map_err(db)?;
        rows.iter().map(offer_of).collect()
    }
}

/// Closes a lapsed offer of the ticket, then opens this one unless another is open.
async fn open(conn: &mut PgConnection, o: &TransferOffer) -> Answer<()> {
    sqlx::query(
        "UPDATE ticket_transfers SET state = 'expired', ended_at = $2
         WHERE ticket_id = $1 AND state = 'offered' AND expires_at <= $2",
    )
    .bind(o.ticket.to_string())
    .bind(o.created_at.0)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    let added = sqlx::query(
        "INSERT INTO ticket_transfers (id, ticket_id, event_id, from_buyer, to_buyer, version,
             state, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'offered', $7, $8) ON CONFLICT DO NOTHING",
    )
    .bind(o.id.to_string())
    .bind(o.ticket.to_string())
    .bind(o.event.0)
    .bind(o.from.to_string())
    .bind(o.to.to_string())
    .bind(version(o.version))
    .bind(o.created_at.0)
    .bind(o.expires_at.0)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(if added.rows_affected() == 1 {
        Ok(())
    } else {
        Err(TransferRefusal::AlreadyOffered)
    })
}

async fn offer(conn: &mut PgConnection, o: &TransferOffer) -> Answer<()> {
    // `movable` locks the ticket's row, as a listing does: a listing and an offer of one
    // ticket take turns, and a listed ticket is not offered beside it.
    match movable(conn, o.ticket, o.from, o.version).await? {
        Err(no) => Ok(Err(no)),
        Ok(_) if listed(conn, o.ticket).await? => Ok(Err(TransferRefusal::Listed)),
        Ok(_) => open(conn, o).await,
    }
}

async fn accept(conn: &mut PgConnection, a: &Accept) -> Answer<Accepted> {
    // The ticket's lock first, as every writer of a ticket takes it, then the offer.
    let Some(peek) = read_offer(conn, a.transfer).await? else {
        return Ok(Err(TransferRefusal::NotFound));
    };
    let facts = match movable(conn, peek.ticket, peek.from, peek.version).await? {
        Ok(f) => f,
        Err(no) => {
            // A refusal about the ticket only counts once the offer itself is good.
            let offer = read_offer(conn, a.transfer).await?;
            return Ok(still_open(offer, a.now, |o| o.to == a.by).and(Err(no)));
        }
    };
    let offer = match still_open(read_offer(conn, a.transfer).await?, a.now, |o| o.to == a.by) {
        Ok(o) if o.version == facts.ticket.version => o,
        Ok(_) => return Ok(Err(TransferRefusal::Superseded)),
        Err(no) => return Ok(Err(no)),
    };
    end(conn, &offer, TransferState::Accepted, a.now).await?;
    let t = &facts.ticket;
    let handed = Handover {
        ticket: t.id,
        version: t.version,
        event: t.event,
        seat: t.seat.as_str(),
        order: t.order,
        from: offer.from,
        to: a.by,
        now: a.now,
        stands_apart: false,
    };
    if !hand_over(conn, &handed).await? {
        return Ok(Err(TransferRefusal::Superseded));
    }
    if !count_move(conn, t.event, offer.from, a.by, a.max_per_buyer).await? {
        return Ok(Err(TransferRefusal::LimitExceeded));
    }
    history(conn, &offer, &facts, a.now).await?;
    let ticket = locked_ticket(conn, t.id)
        .await?
        .ok_or_else(|| StoreError::new("postgres: transferred ticket vanished"))?
        .ticket;
    let offer = read_offer(conn, offer.id)
        .await?
        .ok_or_else(|| StoreError::new("postgres: accepted offer vanished"))?;
    Ok(Ok(Accepted { offer, ticket }))
}

async fn cancel(
    conn: &mut PgConnection,
    id: TransferId,
    by: BuyerId,
    now: Millis,
) -> Answer<TransferOffer> {
    let Some(peek) = read_offer(conn, id).await? else {
        return Ok(Err(TransferRefusal::NotFound));
    };
    locked_ticket(conn, peek.ticket).await?;
    let offer = match still_open(read_offer(conn, id).await?, now, |o| o.from == by) {
        Ok(o) => o,
        Err(no) => return Ok(Err(no)),
    };
    end(conn, &offer, TransferState::Cancelled, now).await?;
    let ended = read_offer(conn, id)
        .await?
        .ok_or_else(|| StoreError::new("postgres: cancelled offer vanished"))?;
    Ok(Ok(ended))
}

async fn end(
    conn: &mut PgConnection,
    offer: &TransferOffer,
    to: TransferState,
    now: Millis,
) -> Result<(), StoreError> {
    let ended = sqlx::query(
        "UPDATE ticket_transfers SET state = $2, ended_at = $3 WHERE id = $1 AND state = 'offered'",
    )
    .bind(offer.id.to_string())
    .bind(to.as_str())
    .bind(now.0)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    if ended.rows_affected() != 1 {
        return Err(StoreError::new(
            "postgres: offer changed under its ticket's lock",
        ));
    }
    Ok(())
}

/// The `transferred` line of the order's history, which the outbox trigger announces.
async fn history(
    conn: &mut PgConnection,
    offer: &TransferOffer,
    facts: &TicketFacts,
    now: Millis,
) -> Result<(), StoreError> {
    let detail = serde_json::json!({
        "ticket_id": offer.ticket,
        "seat_id": facts.ticket.seat.as_str(),
        "from_buyer_id": offer.from,
        "to_buyer_id": offer.to,
        "version": offer.version + 1,
    });
    let order = facts.ticket.order;
    history_line(conn, order, OrderEvent::TRANSFERRED, &detail, now).await
}

/// Whether the ticket has a live listing (open, or reserved by a swap).
pub(crate) async fn listed(conn: &mut PgConnection, ticket: TicketId) -> Result<bool, StoreError> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM exchange_listings WHERE ticket_id = $1
             AND state IN ('open', 'reserved'))",
    )
    .bind(ticket.to_string())
    .fetch_one(conn)
    .await
    .map_err(db)
}
