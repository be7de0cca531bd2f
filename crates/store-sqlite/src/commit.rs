//! The commit point (P1, P2, P6): an authorized order's seats become sold, the buyer's
//! ticket count grows, a history line is written (the outbox trigger announces it),
//! and the order becomes `committed`, or none of it happens. The database decides
//! conflicts: the sold_seats primary key refuses a second sale and the buyer_tickets
//! CHECK refuses a buyer over the limit; this file turns those refusals into outcomes.

use boxoffice_domain::{OrderEvent, OrderState};
use boxoffice_engine::ports::{Commit, CommitOutcome, LedgerError, Order, StoreError};
use rusqlite::{Connection, ErrorCode, ffi, params};

use crate::conn::db;
use crate::moves::{self, record};
use crate::orders;
use crate::writer::{Step, in_savepoint};

/// A refusal by a constraint that means a business answer, not a store failure.
pub(crate) enum Refusal {
    SeatTaken,
    OverLimit,
}

/// Reads the constraint behind a failed statement. SQLite names a CHECK constraint in
/// its message and reports a primary-key clash by extended code and columns.
pub(crate) fn refusal(e: &rusqlite::Error) -> Option<Refusal> {
    let rusqlite::Error::SqliteFailure(err, msg) = e else {
        return None;
    };
    if err.code != ErrorCode::ConstraintViolation {
        return None;
    }
    let msg = msg.as_deref().unwrap_or("");
    match err.extended_code {
        ffi::SQLITE_CONSTRAINT_PRIMARYKEY if msg.contains("sold_seats.") => {
            Some(Refusal::SeatTaken)
        }
        ffi::SQLITE_CONSTRAINT_CHECK if msg.contains("buyer_within_limit") => {
            Some(Refusal::OverLimit)
        }
        _ => None,
    }
}

/// Writer job. Any refusal undoes the whole job (its savepoint), so a lost commit
/// leaves no sold seat, no ticket count and no outbox row behind.
pub(crate) fn commit(conn: &Connection, c: &Commit) -> Result<Step<CommitOutcome>, StoreError> {
    let key = c.order.to_string();
    let order = orders::by_id(conn, &key)?
        .ok_or_else(|| StoreError::new(format_args!("no order {key} to commit")))?;
    if order.state != OrderState::Authorized {
        return Ok(Step::Undo(CommitOutcome::NotCommittable(order.state)));
    }
    if let Some(outcome) = sell_seats(conn, &order, c)? {
        return Ok(Step::Undo(outcome));
    }
    if let Some(outcome) = count_tickets(conn, &order, c.max_per_buyer)? {
        return Ok(Step::Undo(outcome));
    }
    conn.prepare_cached("UPDATE orders SET state = ?3, updated_at = ?2 WHERE id = ?1")
        .and_then(|mut s| s.execute(params![key, c.now.0, OrderState::Committed.as_str()]))
        .map_err(db)?;
    record(
        conn,
        &key,
        Some(OrderState::Authorized),
        OrderState::Committed,
        OrderEvent::Committed.as_str(),
        c.now,
    )?;
    Ok(Step::Keep(CommitOutcome::Committed))
}

/// Writer job: a live checkout's authorization, then its commit in a savepoint of its
/// own (nested in the job's), so a refused commit undoes only itself and the order stays
/// `authorized` for the caller to void. A refused move writes nothing.
pub(crate) fn authorize_and_commit(
    conn: &Connection,
    c: &Commit,
    reference: &str,
) -> Result<Step<Result<(Order, CommitOutcome), LedgerError>>, StoreError> {
    let moved = moves::apply(
        conn,
        c.order,
        OrderEvent::Authorized,
        Some(reference),
        c.now,
    )?;
    let authorized = match moved {
        Step::Keep(Ok(order)) => order,
        Step::Keep(Err(e)) | Step::Undo(Err(e)) => return Ok(Step::Undo(Err(e))),
        Step::Undo(Ok(_)) => {
            return Err(StoreError::new("sqlite: an authorization undid itself"));
        }
    };
    let outcome = in_savepoint(conn, |conn| commit(conn, c))?;
    Ok(Step::Keep(Ok((authorized, outcome))))
}

fn sell_seats(
    conn: &Connection,
    order: &Order,
    c: &Commit,
) -> Result<Option<CommitOutcome>, StoreError> {
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO sold_seats (event_id, seat_id, order_id, buyer_id, price, sold_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(db)?;
    let (order_id, buyer) = (order.id.to_string(), order.buyer.to_string());
    for seat in &order.seats {
        match insert.execute(params![
            order.event.0,
            seat.seat_id,
            order_id,
            buyer,
            seat.price.0,
            c.now.0
        ]) {
            Ok(_) => {}
            Err(e) => match refusal(&e) {
                Some(Refusal::SeatTaken) => {
                    return Ok(Some(CommitOutcome::SeatTaken {
                        seat_id: seat.seat_id.clone(),
                    }));
                }
                _ => return Err(db(e)),
            },
        }
    }
    Ok(None)
}

/// The ledger's half of P6 (the `buyer_within_limit` CHECK decides; the limit passed in
/// is the event's current one). Pinned with the PostgreSQL ledger by the ledger case
/// `a_buyer_over_the_limit_gets_limit_exceeded_and_no_seats`.
fn count_tickets(
    conn: &Connection,
    order: &Order,
    max: u32,
) -> Result<Option<CommitOutcome>, StoreError> {
    let result = conn
        .prepare_cached(
            "INSERT INTO buyer_tickets (event_id, buyer_id, tickets, max_tickets) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (event_id, buyer_id)
             DO UPDATE SET tickets = tickets + excluded.tickets, max_tickets = excluded.max_tickets",
        )
        .and_then(|mut s| s.execute(params![order.event.0, order.buyer.to_string(), order.seats.len() as i64, max]));
    match result {
        Ok(_) => Ok(None),
        Err(e) => match refusal(&e) {
            Some(Refusal::OverLimit) => Ok(Some(CommitOutcome::LimitExceeded)),
            _ => Err(db(e)),
        },
    }
}
