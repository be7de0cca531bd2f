//! Order writes other than the commit: the first insert (one order per hold) and the
//! conditional state moves of the order state machine, each appended to the history.

use boxoffice_domain::{Millis, OrderEvent, OrderId, OrderState};
use boxoffice_engine::ports::{InsertOrder, LedgerError, Order, StoreError, TicketRow};
use rusqlite::{Connection, params};

use crate::conn::db;
use crate::writer::Step;
use crate::{orders, ticket_rows};

/// Appends one line to the order's history (`from` is `None` for the creation).
pub(crate) fn record(
    conn: &Connection,
    order: &str,
    from: Option<OrderState>,
    to: OrderState,
    event: &str,
    at: Millis,
) -> Result<(), StoreError> {
    conn.prepare_cached("INSERT INTO order_events (order_id, from_state, to_state, event, at) VALUES (?1, ?2, ?3, ?4, ?5)")
        .and_then(|mut s| s.execute(params![order, from.map(OrderState::as_str), to.as_str(), event, at.0]))
        .map(drop)
        .map_err(db)
}

/// Writer job. The hold's UNIQUE constraint makes a retried checkout find the first
/// order instead of writing a second one. An order naming a seat the ledger has already
/// sold is not written (the hot store offered a seat it had lost track of).
pub(crate) fn insert(conn: &Connection, order: &Order) -> Result<Step<InsertOrder>, StoreError> {
    let id = order.id.to_string();
    let hold = order.hold.to_string();
    // The one writer runs this and a cancellation's start in turn: an order inserted
    // before it is seen by the refund job's first pass, and none is inserted after.
    if cancelled(conn, order.event)? {
        return Ok(Step::Undo(match orders::by_hold(conn, &hold)? {
            Some(existing) => InsertOrder::Exists(existing),
            None => InsertOrder::EventCancelled,
        }));
    }
    if let Some(seat_id) = first_sold(conn, order)? {
        // A retried checkout whose order exists answers with it, even once its seats sold.
        return Ok(Step::Undo(match orders::by_hold(conn, &hold)? {
            Some(existing) => InsertOrder::Exists(existing),
            None => InsertOrder::SeatSold { seat_id },
        }));
    }
    let seats = serde_json::to_string(&order.seats).map_err(StoreError::new)?;
    let inserted = conn
        .prepare_cached(
            "INSERT INTO orders (id, hold_id, event_id, buyer_id, seats, total, currency, state, payment_ref, created_at, updated_at, attempts, next_attempt_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) ON CONFLICT (hold_id) DO NOTHING",
        )
        .and_then(|mut s| {
            s.execute(params![
                id,
                hold,
                order.event.0,
                order.buyer.to_string(),
                seats,
                order.total.0,
                order.currency,
                order.state.as_str(),
                order.payment_ref,
                order.created_at.0,
                order.updated_at.0,
                order.attempts,
                order.next_attempt_at.0
            ])
        })
        .map_err(db)?;
    if inserted == 0 {
        let existing = orders::by_hold(conn, &hold)?;
        return existing
            .map(|o| Step::Undo(InsertOrder::Exists(o)))
            .ok_or_else(|| StoreError::new("sqlite: hold conflict without an order"));
    }
    let created = OrderEvent::CREATED;
    record(conn, &id, None, order.state, created, order.created_at)?;
    Ok(Step::Keep(InsertOrder::Inserted))
}

/// Whether the event's cancellation has started.
fn cancelled(conn: &Connection, event: boxoffice_domain::EventId) -> Result<bool, StoreError> {
    conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM event_cancellations WHERE event_id = ?1)")
        .and_then(|mut s| s.query_row([event.0], |r| r.get(0)))
        .map_err(db)
}

/// The first of the order's seats that the ledger has sold, if any.
fn first_sold(conn: &Connection, order: &Order) -> Result<Option<String>, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT 1 FROM sold_seats WHERE event_id = ?1 AND seat_id = ?2")
        .map_err(db)?;
    for seat in &order.seats {
        if stmt
            .exists(params![order.event.0, seat.seat_id])
            .map_err(db)?
        {
            return Ok(Some(seat.seat_id.clone()));
        }
    }
    Ok(None)
}

/// Writer job: moves the order if the state machine allows it. Events that move seats
/// are refused here: only `commit` may make an order own seats and only `cancel_sale`
/// may take them back, or P2 would break silently.
pub(crate) fn apply(
    conn: &Connection,
    id: OrderId,
    event: OrderEvent,
    payment_ref: Option<&str>,
    now: Millis,
) -> Result<Step<Result<Order, LedgerError>>, StoreError> {
    let key = id.to_string();
    let Some(mut order) = orders::by_id(conn, &key)? else {
        return Ok(Step::Undo(Err(LedgerError::NotFound)));
    };
    let from = order.state;
    let to = match from.apply(event) {
        Ok(to) if !event.moves_seats() => to,
        _ => return Ok(Step::Undo(Err(LedgerError::Conflict(from)))),
    };
    // A new state starts the sweep's attempt count again.
    let changed = conn
        .prepare_cached(
            "UPDATE orders SET state = ?3, payment_ref = COALESCE(?4, payment_ref), updated_at = ?5,
                attempts = CASE WHEN ?2 = ?3 THEN attempts ELSE 0 END
             WHERE id = ?1 AND state = ?2",
        )
        .and_then(|mut s| s.execute(params![key, from.as_str(), to.as_str(), payment_ref, now.0]))
        .map_err(db)?;
    if changed != 1 {
        return Err(StoreError::new("sqlite: order changed under the writer"));
    }
    record(conn, &key, Some(from), to, event.as_str(), now)?;
    if let Some(reference) = payment_ref {
        conn.prepare_cached("INSERT INTO payments (order_id, kind, reference, amount, at) VALUES (?1, ?2, ?3, ?4, ?5)")
            .and_then(|mut s| s.execute(params![key, event.as_str(), reference, order.total.0, now.0]))
            .map_err(db)?;
        order.payment_ref = Some(reference.to_string());
    }
    if to != from {
        order.attempts = 0;
    }
    order.state = to;
    order.updated_at = now;
    if to == OrderState::Confirmed && from != to {
        // Paid: its tickets exist from this transaction on (no ticket without money).
        ticket_rows::insert_rows(conn, &TicketRow::first_of(&order, now)?)?;
    }
    Ok(Step::Keep(Ok(order)))
}

/// Writer job: counts one more sweep attempt and sets the next, if the order is still
/// as the sweep read it.
pub(crate) fn claim_attempt(
    conn: &Connection,
    order: &Order,
    next_attempt_at: Millis,
) -> Result<Step<bool>, StoreError> {
    let changed = conn
        .prepare_cached(
            "UPDATE orders SET attempts = attempts + 1, next_attempt_at = ?4
             WHERE id = ?1 AND state = ?2 AND next_attempt_at = ?3",
        )
        .and_then(|mut s| {
            s.execute(params![
                order.id.to_string(),
                order.state.as_str(),
                order.next_attempt_at.0,
                next_attempt_at.0
            ])
        })
        .map_err(db)?;
    Ok(if changed == 1 {
        Step::Keep(true)
    } else {
        Step::Undo(false)
    })
}
