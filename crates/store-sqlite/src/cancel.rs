//! Cancelling a sale that can no longer be paid for (P2 undone the other way): the
//! order's sold seats are deleted, their holders' ticket counts lowered, a history line
//! written (the outbox trigger announces it), and the order moved to `cancelling`, or
//! none of it happens. The inverse of `commit`, and like it the only
//! write allowed to change which seats an order owns.

use boxoffice_domain::{Millis, OrderEvent, OrderId};
use boxoffice_engine::ports::{LedgerError, Order, StoreError};
use rusqlite::{Connection, params};

use crate::conn::db;
use crate::moves::record;
use crate::orders;
use crate::writer::Step;

/// A sold seat `s` of order `?1` that still follows the order: its ticket (if written)
/// does not stand apart.
const OWN: &str = "s.seat_id NOT IN (SELECT t.seat_id FROM tickets t
     WHERE t.order_id = ?1 AND t.own_state IS NOT NULL)";

/// Writer job: the sale undone by `event` (`CaptureAbandoned` for `cancel_sale`,
/// `CancelRequested` for `revoke_sale`), if the order's state allows it.
pub(crate) fn cancel_sale(
    conn: &Connection,
    id: OrderId,
    event: OrderEvent,
    now: Millis,
    unless_used: bool,
) -> Result<Step<Result<Order, LedgerError>>, StoreError> {
    debug_assert!(event.gives_seats_back());
    let key = id.to_string();
    let Some(mut order) = orders::by_id(conn, &key)? else {
        return Ok(Step::Undo(Err(LedgerError::NotFound)));
    };
    let from = order.state;
    let Ok(to) = from.apply(event) else {
        return Ok(Step::Undo(Err(LedgerError::Conflict(from))));
    };
    if unless_used {
        let buyer = order.buyer.to_string();
        if used_by_its_buyer(conn, &key, &buyer)? {
            return Ok(Step::Undo(Err(LedgerError::Used)));
        }
        if given_away(conn, &key, &buyer)? {
            return Ok(Step::Undo(Err(LedgerError::GivenAway)));
        }
    }
    // Each seat off the count of the buyer who holds it now (a transferred ticket's
    // seat is its recipient's), then the seats themselves. A seat whose ticket stands
    // apart from the order (sold on through the exchange) is its swap buyer's: kept.
    conn.prepare_cached(&format!(
        "UPDATE buyer_tickets SET tickets = tickets - (
             SELECT COUNT(*) FROM sold_seats s
             WHERE s.order_id = ?1 AND s.buyer_id = buyer_tickets.buyer_id AND {OWN})
         WHERE event_id = ?2
           AND buyer_id IN (SELECT buyer_id FROM sold_seats s WHERE s.order_id = ?1 AND {OWN})"
    ))
    .and_then(|mut s| s.execute(params![key, order.event.0]))
    .map_err(db)?;
    conn.prepare_cached(&format!(
        "DELETE FROM sold_seats AS s WHERE s.order_id = ?1 AND {OWN}"
    ))
    .and_then(|mut s| s.execute([&key]))
    .map_err(db)?;
    conn.prepare_cached(
        "UPDATE orders SET state = ?3, updated_at = ?4, attempts = 0 WHERE id = ?1 AND state = ?2",
    )
    .and_then(|mut s| s.execute(params![key, from.as_str(), to.as_str(), now.0]))
    .map_err(db)?;
    record(conn, &key, Some(from), to, event.as_str(), now)?;
    (order.state, order.updated_at, order.attempts) = (to, now, 0);
    Ok(Step::Keep(Ok(order)))
}

/// Whether a ticket of the order is held by someone else by transfer (a ticket sold on
/// through the exchange, or cancelled alone, stands apart: `own_state` set).
fn given_away(conn: &Connection, order: &str, buyer: &str) -> Result<bool, StoreError> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM tickets t
                        WHERE t.order_id = ?1 AND t.holder_id <> ?2 AND t.own_state IS NULL)",
    )
    .and_then(|mut s| s.query_row(params![order, buyer], |r| r.get(0)))
    .map_err(db)
}

/// Whether a ticket of the order that its buyer still holds was admitted at a gate.
fn used_by_its_buyer(conn: &Connection, order: &str, buyer: &str) -> Result<bool, StoreError> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM tickets t JOIN checkins c ON c.ticket_id = t.id
                        WHERE t.order_id = ?1 AND t.holder_id = ?2)",
    )
    .and_then(|mut s| s.query_row(params![order, buyer], |r| r.get(0)))
    .map_err(db)
}
