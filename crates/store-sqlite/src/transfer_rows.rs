//! Ticket transfers in SQLite: offers, and the accept that moves a ticket, its sold
//! seat and both buyers' ticket counts in one writer job (so in one transaction, and
//! never racing another write on this file). A refusal undoes the job's savepoint.

use boxoffice_domain::ticket::TicketId;
use boxoffice_domain::{BuyerId, EventId, Millis, OrderEvent, OrderState, TransferId};
use boxoffice_engine::ports::{
    Accept, Accepted, StoreError, TicketFacts, TransferOffer, TransferRefusal, TransferState,
};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::commit::{Refusal, refusal};
use crate::conn::{corrupt, db};
use crate::ticket_rows::ticket;
use crate::writer::Step;

type Answer<T> = Step<Result<T, TransferRefusal>>;

const COLUMNS: &str = "SELECT id, ticket_id, event_id, from_buyer, to_buyer, version, state,
    created_at, expires_at, ended_at FROM ticket_transfers";

fn offer_of(r: &Row<'_>) -> rusqlite::Result<RawOffer> {
    Ok(RawOffer {
        id: r.get(0)?,
        ticket: r.get(1)?,
        event: r.get(2)?,
        from: r.get(3)?,
        to: r.get(4)?,
        version: r.get(5)?,
        state: r.get(6)?,
        created_at: r.get(7)?,
        expires_at: r.get(8)?,
        ended_at: r.get(9)?,
    })
}

struct RawOffer {
    id: String,
    ticket: String,
    event: i64,
    from: String,
    to: String,
    version: u32,
    state: String,
    created_at: i64,
    expires_at: i64,
    ended_at: Option<i64>,
}

impl RawOffer {
    fn parse(self) -> Result<TransferOffer, StoreError> {
        Ok(TransferOffer {
            id: self.id.parse().map_err(|e| corrupt("transfer id", e))?,
            ticket: self.ticket.parse().map_err(|e| corrupt("ticket id", e))?,
            event: EventId(self.event),
            from: self.from.parse().map_err(|e| corrupt("sender", e))?,
            to: self.to.parse().map_err(|e| corrupt("recipient", e))?,
            version: self.version,
            state: TransferState::parse(&self.state)
                .ok_or_else(|| corrupt("transfer state", &self.state))?,
            created_at: Millis(self.created_at),
            expires_at: Millis(self.expires_at),
            ended_at: self.ended_at.map(Millis),
        })
    }
}

pub(crate) fn transfer(
    conn: &Connection,
    id: TransferId,
) -> Result<Option<TransferOffer>, StoreError> {
    let raw = conn
        .prepare_cached(&format!("{COLUMNS} WHERE id = ?1"))
        .and_then(|mut s| s.query_row([id.to_string()], offer_of).optional())
        .map_err(db)?;
    raw.map(RawOffer::parse).transpose()
}

/// The newest offers made or received, each side read by its own index.
pub(crate) fn transfers_of(
    conn: &Connection,
    buyer: BuyerId,
    limit: u32,
) -> Result<Vec<TransferOffer>, StoreError> {
    let sql = format!(
        "SELECT * FROM ({COLUMNS} WHERE from_buyer = ?1 ORDER BY created_at DESC LIMIT ?2)
         UNION ALL SELECT * FROM ({COLUMNS} WHERE to_buyer = ?1 ORDER BY created_at DESC LIMIT ?2)
         ORDER BY created_at DESC, id LIMIT ?2"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(db)?;
    let rows = stmt
        .query_map(params![buyer.to_string(), limit], offer_of)
        .map_err(db)?;
    rows.map(|r| r.map_err(db).and_then(RawOffer::parse))
        .collect()
}

/// The ticket, if `from` holds it at `version`, unscanned, with its order paid for.
fn movable(
    conn: &Connection,
    id: TicketId,
    from: BuyerId,
    version: u32,
) -> Result<Result<TicketFacts, TransferRefusal>, StoreError> {
    let Some(facts) = ticket(conn, id)? else {
        return Ok(Err(TransferRefusal::NotFound));
    };
    Ok(
        if facts.ticket.holder != from || facts.ticket.version != version {
            Err(TransferRefusal::Superseded)
        } else if facts.checked_in.is_some() {
            Err(TransferRefusal::CheckedIn)
        } else if facts.order_state != OrderState::Confirmed {
            Err(TransferRefusal::NotPaid(facts.order_state))
        } else {
            Ok(facts)
        },
    )
}

/// Writer job: closes a lapsed offer of the ticket, then opens this one unless another
/// is open (the unique index on open offers decides).
pub(crate) fn offer(conn: &Connection, o: &TransferOffer) -> Result<Answer<()>, StoreError> {
    if let Err(no) = movable(conn, o.ticket, o.from, o.version)? {
        return Ok(Step::Undo(Err(no)));
    }
    // A listed ticket is not offered beside its listing (the listing refuses a ticket
    // with an open offer, so the two never stand together).
    if listed(conn, o.ticket)? {
        return Ok(Step::Undo(Err(TransferRefusal::Listed)));
    }
    conn.prepare_cached(
        "UPDATE ticket_transfers SET state = 'expired', ended_at = ?2
         WHERE ticket_id = ?1 AND state = 'offered' AND expires_at <= ?2",
    )
    .and_then(|mut s| s.execute(params![o.ticket.to_string(), o.created_at.0]))
    .map_err(db)?;
    let added = conn
        .prepare_cached(
            "INSERT INTO ticket_transfers (id, ticket_id, event_id, from_buyer, to_buyer, version,
                 state, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'offered', ?7, ?8) ON CONFLICT DO NOTHING",
        )
        .and_then(|mut s| {
            s.execute(params![
                o.id.to_string(),
                o.ticket.to_string(),
                o.event.0,
                o.from.to_string(),
                o.to.to_string(),
                o.version,
                o.created_at.0,
                o.expires_at.0
            ])
        })
        .map_err(db)?;
    Ok(if added == 1 {
        Step::Keep(Ok(()))
    } else {
        Step::Undo(Err(TransferRefusal::AlreadyOffered))
    })
}

/// Writer job: the accept, all of it or nothing.
pub(crate) fn accept(conn: &Connection, a: &Accept) -> Result<Answer<Accepted>, StoreError> {
    let offer = match open_offer(conn, a.transfer, a.now, |o| o.to == a.by)? {
        Ok(o) => o,
        Err(no) => return Ok(Step::Undo(Err(no))),
    };
    let facts = match movable(conn, offer.ticket, offer.from, offer.version)? {
        Ok(f) => f,
        Err(no) => return Ok(Step::Undo(Err(no))),
    };
    end(conn, &offer, TransferState::Accepted, a.now)?;
    let t = &facts.ticket;
    let moved = conn
        .prepare_cached(
            "UPDATE tickets SET holder_id = ?3, version = version + 1, attendee = NULL,
                 issued_at = ?4
             WHERE id = ?1 AND version = ?2",
        )
        .and_then(|mut s| {
            s.execute(params![
                t.id.to_string(),
                t.version,
                a.by.to_string(),
                a.now.0
            ])
        })
        .map_err(db)?;
    let seat = conn
        .prepare_cached(
            "UPDATE sold_seats SET buyer_id = ?4
             WHERE event_id = ?1 AND seat_id = ?2 AND order_id = ?3 AND buyer_id = ?5",
        )
        .and_then(|mut s| {
            s.execute(params![
                t.event.0,
                t.seat.as_str(),
                t.order.to_string(),
                a.by.to_string(),
                offer.from.to_string()
            ])
        })
        .map_err(db)?;
    if moved != 1 || seat != 1 {
        return Ok(Step::Undo(Err(TransferRefusal::Superseded)));
    }
    if !count_move(conn, t.event, offer.from, a.by, a.max_per_buyer)? {
        return Ok(Step::Undo(Err(TransferRefusal::LimitExceeded)));
    }
    history(conn, &offer, t.seat.as_str(), a.now)?;
    let ticket = ticket(conn, t.id)?
        .ok_or_else(|| StoreError::new("sqlite: transferred ticket vanished"))?
        .ticket;
    let offer = transfer(conn, offer.id)?
        .ok_or_else(|| StoreError::new("sqlite: accepted offer vanished"))?;
    Ok(Step::Keep(Ok(Accepted { offer, ticket })))
}

/// Writer job: the holder withdraws an open offer.
pub(crate) fn cancel(
    conn: &Connection,
    id: TransferId,
    by: BuyerId,
    now: Millis,
) -> Result<Answer<TransferOffer>, StoreError> {
    let offer = match open_offer(conn, id, now, |o| o.from == by)? {
        Ok(o) => o,
        Err(no) => return Ok(Step::Undo(Err(no))),
    };
    end(conn, &offer, TransferState::Cancelled, now)?;
    let ended =
        transfer(conn, id)?.ok_or_else(|| StoreError::new("sqlite: cancelled offer vanished"))?;
    Ok(Step::Keep(Ok(ended)))
}

/// The offer, if `party` may act on it and it is still open at `now`.
fn open_offer(
    conn: &Connection,
    id: TransferId,
    now: Millis,
    party: impl Fn(&TransferOffer) -> bool,
) -> Result<Result<TransferOffer, TransferRefusal>, StoreError> {
    Ok(match transfer(conn, id)? {
        Some(o) if party(&o) => match o.state_at(now) {
            TransferState::Offered => Ok(o),
            ended => Err(TransferRefusal::Ended(ended)),
        },
        _ => Err(TransferRefusal::NotFound),
    })
}

fn end(
    conn: &Connection,
    offer: &TransferOffer,
    to: TransferState,
    now: Millis,
) -> Result<(), StoreError> {
    let ended = conn
        .prepare_cached(
            "UPDATE ticket_transfers SET state = ?2, ended_at = ?3 WHERE id = ?1 AND state = 'offered'",
        )
        .and_then(|mut s| s.execute(params![offer.id.to_string(), to.as_str(), now.0]))
        .map_err(db)?;
    if ended != 1 {
        return Err(StoreError::new("sqlite: offer changed under the writer"));
    }
    Ok(())
}

/// One ticket off the sender's count and onto the recipient's; `false` when the
/// recipient's count would pass the limit (the `buyer_within_limit` CHECK, P6).
fn count_move(
    conn: &Connection,
    event: EventId,
    from: BuyerId,
    to: BuyerId,
    max: u32,
) -> Result<bool, StoreError> {
    conn.prepare_cached(
        "UPDATE buyer_tickets SET tickets = tickets - 1 WHERE event_id = ?1 AND buyer_id = ?2",
    )
    .and_then(|mut s| s.execute(params![event.0, from.to_string()]))
    .map_err(db)?;
    let added = conn
        .prepare_cached(
            "INSERT INTO buyer_tickets (event_id, buyer_id, tickets, max_tickets) VALUES (?1, ?2, 1, ?3)
             ON CONFLICT (event_id, buyer_id)
             DO UPDATE SET tickets = tickets + 1, max_tickets = excluded.max_tickets",
        )
        .and_then(|mut s| s.execute(params![event.0, to.to_string(), max]));
    match added {
        Ok(_) => Ok(true),
        Err(e) => match refusal(&e) {
            Some(Refusal::OverLimit) => Ok(false),
            _ => Err(db(e)),
        },
    }
}

/// The `transferred` line of the order's history, which the outbox trigger announces.
fn history(
    conn: &Connection,
    offer: &TransferOffer,
    seat: &str,
    now: Millis,
) -> Result<(), StoreError> {
    let detail = serde_json::json!({
        "ticket_id": offer.ticket,
        "seat_id": seat,
        "from_buyer_id": offer.from,
        "to_buyer_id": offer.to,
        "version": offer.version + 1,
    });
    let order: String = conn
        .prepare_cached("SELECT order_id FROM tickets WHERE id = ?1")
        .and_then(|mut s| s.query_row([offer.ticket.to_string()], |r| r.get(0)))
        .map_err(db)?;
    let confirmed = OrderState::Confirmed.as_str();
    conn.prepare_cached(
        "INSERT INTO order_events (order_id, from_state, to_state, event, at, detail)
         VALUES (?1, ?2, ?2, ?3, ?4, ?5)",
    )
    .and_then(|mut s| {
        s.execute(params![
            order,
            confirmed,
            OrderEvent::TRANSFERRED,
            now.0,
            detail.to_string()
        ])
    })
    .map(drop)
    .map_err(db)
}

/// Whether the ticket has a live listing (open, or reserved by a swap).
pub(crate) fn listed(conn: &Connection, ticket: TicketId) -> Result<bool, StoreError> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM exchange_listings WHERE ticket_id = ?1
             AND state IN ('open', 'reserved'))",
    )
    .and_then(|mut s| s.query_row([ticket.to_string()], |r| r.get(0)))
    .map_err(db)
}
