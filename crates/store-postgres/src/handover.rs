//! What the writes that move a ticket between holders share in PostgreSQL (transfers and
//! the exchange, renames for some of it): the ticket's row locked first, the test that
//! it may leave its holder, the hand-over of the ticket and its sold seat, both buyers'
//! counts, the order's history line, and the transaction kept or rolled back on the
//! answer. Each such write is a transaction of its own outside the writer's batches,
//! run again when it loses a race (`PostgresLedger::apart`).

use boxoffice_domain::ticket::TicketId;
use boxoffice_domain::{BuyerId, EventId, Millis, OrderId, OrderState};
use boxoffice_engine::ports::{ListingRefusal, StoreError, TicketFacts, TransferRefusal};
use sqlx::{PgConnection, Row};

use crate::conn::db;
use crate::ticket_rows::{facts, facts_sql, version};
use crate::writer::Step;

/// A write's answer as what becomes of its transaction: kept when it is a success,
/// rolled back (nothing written) when the store refused.
pub(crate) fn kept<T, R>(answer: Result<T, R>) -> Step<Result<T, R>> {
    match answer {
        Ok(v) => Step::Keep(Ok(v)),
        Err(no) => Step::Undo(Err(no)),
    }
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

/// Why a ticket may not leave its holder; each write answers it as its own refusal.
pub(crate) enum Unmovable {
    NotFound,
    /// Not with that holder, or not at that version.
    Superseded,
    CheckedIn,
    NotPaid(OrderState),
}

impl From<Unmovable> for TransferRefusal {
    fn from(no: Unmovable) -> TransferRefusal {
        match no {
            Unmovable::NotFound => TransferRefusal::NotFound,
            Unmovable::Superseded => TransferRefusal::Superseded,
            Unmovable::CheckedIn => TransferRefusal::CheckedIn,
            Unmovable::NotPaid(s) => TransferRefusal::NotPaid(s),
        }
    }
}

impl From<Unmovable> for ListingRefusal {
    fn from(no: Unmovable) -> ListingRefusal {
        match no {
            Unmovable::NotFound => ListingRefusal::NotFound,
            Unmovable::Superseded => ListingRefusal::Superseded,
            Unmovable::CheckedIn => ListingRefusal::CheckedIn,
            Unmovable::NotPaid(s) => ListingRefusal::NotPaid(s),
        }
    }
}

/// The ticket, locked, if `holder` holds it at `v`, unscanned, its order paid for.
pub(crate) async fn movable(
    conn: &mut PgConnection,
    id: TicketId,
    holder: BuyerId,
    v: u32,
) -> Result<Result<TicketFacts, Unmovable>, StoreError> {
    let Some(f) = locked_ticket(conn, id).await? else {
        return Ok(Err(Unmovable::NotFound));
    };
    Ok(if f.ticket.holder != holder || f.ticket.version != v {
        Err(Unmovable::Superseded)
    } else if f.checked_in.is_some() {
        Err(Unmovable::CheckedIn)
    } else if f.order_state != OrderState::Confirmed {
        Err(Unmovable::NotPaid(f.order_state))
    } else {
        Ok(f)
    })
}

/// A ticket going from `from` to `to`, with the seat it was sold for.
pub(crate) struct Handover<'a> {
    pub ticket: TicketId,
    /// The version it must still be at; it moves to the next.
    pub version: u32,
    pub event: EventId,
    pub seat: &'a str,
    /// The order that sold the seat.
    pub order: OrderId,
    pub from: BuyerId,
    pub to: BuyerId,
    pub now: Millis,
    /// Whether the ticket stands apart from its order from now on (`own_state`
    /// confirmed), as one sold on through the exchange does.
    pub stands_apart: bool,
}

/// The ticket to `to` at the next version, nameless, and its sold seat with it: `false`
/// when either row was not as `h` says (nothing is moved then).
pub(crate) async fn hand_over(
    conn: &mut PgConnection,
    h: &Handover<'_>,
) -> Result<bool, StoreError> {
    let moved = sqlx::query(
        "WITH ticket AS (
             UPDATE tickets SET holder_id = $3, version = version + 1, attendee = NULL,
                 issued_at = $4, own_state = CASE WHEN $9 THEN 'confirmed' ELSE own_state END
             WHERE id = $1 AND version = $2 RETURNING id
         ), seat AS (
             UPDATE sold_seats SET buyer_id = $3
             WHERE event_id = $5 AND seat_id = $6 AND order_id = $7 AND buyer_id = $8
             RETURNING seat_id
         ) SELECT (SELECT count(*) FROM ticket), (SELECT count(*) FROM seat)",
    )
    .bind(h.ticket.to_string())
    .bind(version(h.version))
    .bind(h.to.to_string())
    .bind(h.now.0)
    .bind(h.event.0)
    .bind(h.seat)
    .bind(h.order.to_string())
    .bind(h.from.to_string())
    .bind(h.stands_apart)
    .fetch_one(&mut *conn)
    .await
    .map_err(db)?;
    let (tickets, seats): (i64, i64) =
        (moved.try_get(0).map_err(db)?, moved.try_get(1).map_err(db)?);
    Ok(tickets == 1 && seats == 1)
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

/// A line `event` of the order's history, with `detail`, its state (confirmed) as it
/// was; the outbox trigger announces it.
pub(crate) async fn history_line(
    conn: &mut PgConnection,
    order: OrderId,
    event: &str,
    detail: &serde_json::Value,
    now: Millis,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO order_events (order_id, from_state, to_state, event, at, detail)
         VALUES ($1, $2, $2, $3, $4, $5::jsonb)",
    )
    .bind(order.to_string())
    .bind(OrderState::Confirmed.as_str())
    .bind(event)
    .bind(now.0)
    .bind(detail.to_string())
    .execute(&mut *conn)
    .await
    .map(drop)
    .map_err(db)
}
