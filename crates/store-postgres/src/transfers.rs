//! Ticket transfers in PostgreSQL. Each write is one transaction on the pool that
//! locks the ticket's row first (as a check-in does), so an offer, an accept, a cancel
//! and a scan of one ticket take turns on every node; every move of an offer is
//! conditional on it being open, and the unique index on open offers lets one of two
//! racing offers in. A refusal rolls the transaction back: nothing is written.

use boxoffice_domain::ticket::TicketId;
use boxoffice_domain::{BuyerId, EventId, Millis, OrderEvent, OrderState, TransferId};
use boxoffice_engine::ports::{
    Accept, Accepted, StoreError, TicketFacts, TransferOffer, TransferRefusal, TransferState,
};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Postgres, Row, Transaction};

use crate::PostgresLedger;
use crate::conn::{corrupt, db};
use crate::ticket_rows::{facts, facts_sql, version};

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

/// Locks the ticket's row, then reads it with its order and check-in in a statement of
/// its own (which, under read committed, sees whatever the lock's last holder wrote).
pub(crate) async fn locked_ticket(
    conn: &mut PgConnection,
    id: TicketId,
) -> Result<Option<TicketFacts>, StoreError> {
    let locked = sqlx::query("SELECT 1 FROM tickets WHERE id = $1 FOR UPDATE")
        .bind(id.to_string())
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
    if locked.is_none() {
        return Ok(None);
    }
    let row = sqlx::query(concat!(facts_sql!(), "WHERE t.id = $1"))
        .bind(id.to_string())
        .fetch_one(&mut *conn)
        .await
        .map_err(db)?;
    facts(&row).map(Some)
}

/// The ticket, locked, if `from` holds it at `version`, unscanned, its order paid for.
async fn movable(
    conn: &mut PgConnection,
    id: TicketId,
    from: BuyerId,
    v: u32,
) -> Answer<TicketFacts> {
    let Some(f) = locked_ticket(conn, id).await? else {
        return Ok(Err(TransferRefusal::NotFound));
    };
    Ok(if f.ticket.holder != from || f.ticket.version != v {
        Err(TransferRefusal::Superseded)
    } else if f.checked_in.is_some() {
        Err(TransferRefusal::CheckedIn)
    } else if f.order_state != OrderState::Confirmed {
        Err(TransferRefusal::NotPaid(f.order_state))
    } else {
        Ok(f)
    })
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

/// Commits the transaction when `answer` is a success; rolls it back otherwise.
async fn settle<T>(tx: Transaction<'_, Postgres>, answer: Result<T, TransferRefusal>) -> Answer<T> {
    match answer {
        Ok(v) => {
            tx.commit().await.map_err(db)?;
            Ok(Ok(v))
        }
        Err(no) => {
            tx.rollback().await.map_err(db)?;
            Ok(Err(no))
        }
    }
}

impl PostgresLedger {
    pub(crate) async fn offer_transfer_tx(&self, o: &TransferOffer) -> Answer<()> {
        let mut tx = self.pool().begin().await.map_err(db)?;
        // `movable` locks the ticket's row, as a listing does: a listing and an offer
        // of one ticket take turns, and a listed ticket is not offered beside it.
        let answer = match movable(&mut tx, o.ticket, o.from, o.version).await? {
            Err(no) => Err(no),
            Ok(_) if listed(&mut tx, o.ticket).await? => Err(TransferRefusal::Listed),
            Ok(_) => open(&mut tx, o).await?,
        };
        settle(tx, answer).await
    }

    pub(crate) async fn accept_transfer_tx(&self, a: &Accept) -> Answer<Accepted> {
        let mut tx = self.pool().begin().await.map_err(db)?;
        let answer = accept(&mut tx, a).await?;
        settle(tx, answer).await
    }

    pub(crate) async fn cancel_transfer_tx(
        &self,
        id: TransferId,
        by: BuyerId,
        now: Millis,
    ) -> Answer<TransferOffer> {
        let mut tx = self.pool().begin().await.map_err(db)?;
        let answer = cancel(&mut tx, id, by, now).await?;
        settle(tx, answer).await
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
    let moved = sqlx::query(
        "WITH ticket AS (
             UPDATE tickets SET holder_id = $3, version = version + 1, attendee = NULL,
                 issued_at = $4
             WHERE id = $1 AND version = $2 RETURNING id
         ), seat AS (
             UPDATE sold_seats SET buyer_id = $3
             WHERE event_id = $5 AND seat_id = $6 AND order_id = $7 AND buyer_id = $8
             RETURNING seat_id
         ) SELECT (SELECT count(*) FROM ticket), (SELECT count(*) FROM seat)",
    )
    .bind(t.id.to_string())
    .bind(version(t.version))
    .bind(a.by.to_string())
    .bind(a.now.0)
    .bind(t.event.0)
    .bind(t.seat.as_str())
    .bind(t.order.to_string())
    .bind(offer.from.to_string())
    .fetch_one(&mut *conn)
    .await
    .map_err(db)?;
    let (tickets, seats): (i64, i64) =
        (moved.try_get(0).map_err(db)?, moved.try_get(1).map_err(db)?);
    if tickets != 1 || seats != 1 {
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

/// One ticket off the sender's count and onto the recipient's; `false` when the
/// recipient's would pass the limit (the `buyer_within_limit` CHECK, P6). The two
/// rows are written in buyer order, so two transfers the opposite way never deadlock.
pub(crate) async fn count_move(
    conn: &mut PgConnection,
    event: EventId,
    from: BuyerId,
    to: BuyerId,
    max: u32,
) -> Result<bool, StoreError> {
    let (from, to) = (from.to_string(), to.to_string());
    let lower =
        "UPDATE buyer_tickets SET tickets = tickets - 1 WHERE event_id = $1 AND buyer_id = $2";
    let raise = "INSERT INTO buyer_tickets (event_id, buyer_id, tickets, max_tickets)
        VALUES ($1, $2, 1, $3) ON CONFLICT (event_id, buyer_id)
        DO UPDATE SET tickets = buyer_tickets.tickets + 1, max_tickets = excluded.max_tickets";
    let max = i32::try_from(max).unwrap_or(i32::MAX);
    let steps = if from < to {
        [(lower, &from), (raise, &to)]
    } else {
        [(raise, &to), (lower, &from)]
    };
    for (sql, buyer) in steps {
        let mut q = sqlx::query(sql).bind(event.0).bind(buyer);
        if sql == raise {
            q = q.bind(max);
        }
        match q.execute(&mut *conn).await {
            Ok(_) => {}
            Err(e) if constraint(&e) == Some("buyer_within_limit") => return Ok(false),
            Err(e) => return Err(db(e)),
        }
    }
    Ok(true)
}

fn constraint(e: &sqlx::Error) -> Option<&str> {
    e.as_database_error().and_then(|d| d.constraint())
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
    let confirmed = OrderState::Confirmed.as_str();
    sqlx::query(
        "INSERT INTO order_events (order_id, from_state, to_state, event, at, detail)
         VALUES ($1, $2, $2, $3, $4, $5::jsonb)",
    )
    .bind(facts.ticket.order.to_string())
    .bind(confirmed)
    .bind(OrderEvent::TRANSFERRED)
    .bind(now.0)
    .bind(detail.to_string())
    .execute(&mut *conn)
    .await
    .map(drop)
    .map_err(db)
}

/// Whether the ticket has a live listing (open, or reserved by a swap).
async fn listed(conn: &mut PgConnection, ticket: TicketId) -> Result<bool, StoreError> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM exchange_listings WHERE ticket_id = $1
             AND state IN ('open', 'reserved'))",
    )
    .bind(ticket.to_string())
    .fetch_one(conn)
    .await
    .map_err(db)
}
