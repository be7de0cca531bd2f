//! Cancelling a sale that can no longer be paid for (P2 undone the other way): the
//! order's sold seats are deleted, its buyer's ticket count lowered, an
//! `order_cancelled` outbox row and a history line written, and the order moved to
//! `cancelling`, or none of it happens. The inverse of `commit`, and like it the only
//! write allowed to change which seats an order owns.

use boxoffice_domain::{Millis, OrderEvent, OrderId, OrderNotice};
use boxoffice_engine::ports::{LedgerError, Order, StoreError};
use rusqlite::{Connection, params};

use crate::conn::db;
use crate::moves::record;
use crate::orders;
use crate::writer::Step;

/// Writer job: the sale undone by `event` (`CaptureAbandoned` for `cancel_sale`,
/// `CancelRequested` for `revoke_sale`), if the order's state allows it.
pub(crate) fn cancel_sale(
    conn: &Connection,
    id: OrderId,
    event: OrderEvent,
    now: Millis,
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
    let freed = conn
        .prepare_cached("DELETE FROM sold_seats WHERE order_id = ?1")
        .and_then(|mut s| s.execute([&key]))
        .map_err(db)?;
    conn.prepare_cached(
        "UPDATE buyer_tickets SET tickets = tickets - ?3 WHERE event_id = ?1 AND buyer_id = ?2",
    )
    .and_then(|mut s| {
        s.execute(params![
            order.event.0,
            order.buyer.to_string(),
            freed as i64
        ])
    })
    .map_err(db)?;
    conn.prepare_cached(
        "UPDATE orders SET state = ?3, updated_at = ?4, attempts = 0 WHERE id = ?1 AND state = ?2",
    )
    .and_then(|mut s| s.execute(params![key, from.as_str(), to.as_str(), now.0]))
    .map_err(db)?;
    record(conn, &key, Some(from), to, event.as_str(), now)?;
    write_outbox(conn, &order, now)?;
    (order.state, order.updated_at, order.attempts) = (to, now, 0);
    Ok(Step::Keep(Ok(order)))
}

fn write_outbox(conn: &Connection, order: &Order, now: Millis) -> Result<(), StoreError> {
    let payload = serde_json::json!({
        "order_id": order.id,
        "event_id": order.event,
        "buyer_id": order.buyer,
        "hold_id": order.hold,
        "seats": order.seats,
        "cancelled_at": now,
    });
    conn.prepare_cached(
        "INSERT INTO outbox (order_id, kind, payload, created_at) VALUES (?1, ?2, ?3, ?4)",
    )
    .and_then(|mut s| {
        s.execute(params![
            order.id.to_string(),
            OrderNotice::Cancelled.as_str(),
            payload.to_string(),
            now.0
        ])
    })
    .map(drop)
    .map_err(db)
}
