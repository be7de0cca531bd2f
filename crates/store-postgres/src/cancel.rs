//! Cancelling a sale that can no longer be paid for: the order's sold seats are
//! deleted, their holders' ticket counts lowered, a history line written, and the
//! order moved to `cancelling`, or none of it happens. The inverse of the commit, and
//! like it the only write allowed to change which seats an order owns. One statement:
//! one round trip.

use boxoffice_domain::{Millis, OrderEvent, OrderId};
use boxoffice_engine::ports::{LedgerError, Order, StoreError};
use sqlx::PgConnection;

use crate::conn::db;
use crate::orders;
use crate::writer::Step;

/// Each data-modifying part runs once; each holder's ticket count drops by their seats
/// deleted (a transferred ticket's seat counts for its recipient). A seat whose ticket
/// stands apart from the order (sold on through the exchange) is its swap buyer's:
/// kept. The history line is
/// announced by the outbox trigger.
const CANCEL: &str = "
    WITH moved AS (
        UPDATE orders SET state = $3, updated_at = $4, attempts = 0
        WHERE id = $1 AND state = $2
        RETURNING id, event_id
    ), freed AS (
        DELETE FROM sold_seats s USING moved m WHERE s.order_id = m.id
          AND NOT EXISTS (SELECT 1 FROM tickets t WHERE t.order_id = s.order_id
                AND t.seat_id = s.seat_id AND t.own_state IS NOT NULL)
        RETURNING s.event_id, s.buyer_id
    ), tickets AS (
        UPDATE buyer_tickets g SET tickets = g.tickets - f.n
        FROM (SELECT event_id, buyer_id, count(*) AS n FROM freed GROUP BY event_id, buyer_id) f
        WHERE g.event_id = f.event_id AND g.buyer_id = f.buyer_id
    ), history AS (
        INSERT INTO order_events (order_id, from_state, to_state, event, at)
        SELECT id, $2, $3, $5, $4 FROM moved
    )
    SELECT count(*) FROM moved";

/// Whether a ticket of the order is held by someone else by transfer (a ticket sold on
/// through the exchange, or cancelled alone, stands apart: `own_state` set).
const GIVEN_AWAY: &str = "
    SELECT EXISTS (SELECT 1 FROM tickets t
                   WHERE t.order_id = $1 AND t.holder_id <> $2 AND t.own_state IS NULL)";

/// Whether a ticket of the order that its buyer still holds was admitted at a gate.
const USED: &str = "
    SELECT EXISTS (SELECT 1 FROM tickets t JOIN checkins c ON c.ticket_id = t.id
                   WHERE t.order_id = $1 AND t.holder_id = $2)";

/// Writer job: the sale undone by `event` (`CaptureAbandoned` for `cancel_sale`,
/// `CancelRequested` for `revoke_sale`), if the order's state allows it.
pub(crate) async fn cancel_sale(
    conn: &mut PgConnection,
    id: OrderId,
    event: OrderEvent,
    now: Millis,
    unless_used: bool,
) -> Result<Step<Result<Order, LedgerError>>, StoreError> {
    debug_assert!(event.gives_seats_back());
    let key = id.to_string();
    // The order's tickets locked first, as every write of a ticket does: an exchange
    // moving one of them now has committed (the ticket stands apart, its seat is kept)
    // or waits until the order is no longer confirmed (and then cannot move it).
    sqlx::query("SELECT id FROM tickets WHERE order_id = $1 ORDER BY id FOR UPDATE")
        .bind(&key)
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    // Another node may move the order between the read and the update; the update is
    // conditional, so a lost race just reads the new state and decides again.
    for _ in 0..3 {
        let Some(mut order) = orders::by_id(&mut *conn, &key).await? else {
            return Ok(Step::Undo(Err(LedgerError::NotFound)));
        };
        let from = order.state;
        let Ok(to) = from.apply(event) else {
            return Ok(Step::Undo(Err(LedgerError::Conflict(from))));
        };
        // Read after the tickets' locks (a check-in locks its ticket first): a scan
        // has committed, and is seen, or waits until this claim is made and then
        // finds the order no longer confirmed.
        if unless_used {
            let used: bool = sqlx::query_scalar(USED)
                .bind(&key)
                .bind(order.buyer.to_string())
                .fetch_one(&mut *conn)
                .await
                .map_err(db)?;
            if used {
                return Ok(Step::Undo(Err(LedgerError::Used)));
            }
            let given: bool = sqlx::query_scalar(GIVEN_AWAY)
                .bind(&key)
                .bind(order.buyer.to_string())
                .fetch_one(&mut *conn)
                .await
                .map_err(db)?;
            if given {
                return Ok(Step::Undo(Err(LedgerError::GivenAway)));
            }
        }
        let moved: i64 = sqlx::query_scalar(CANCEL)
            .bind(&key)
            .bind(from.as_str())
            .bind(to.as_str())
            .bind(now.0)
            .bind(event.as_str())
            .fetch_one(&mut *conn)
            .await
            .map_err(db)?;
        if moved == 1 {
            (order.state, order.updated_at, order.attempts) = (to, now, 0);
            return Ok(Step::Keep(Ok(order)));
        }
    }
    Err(StoreError::new(format_args!(
        "postgres: order {key} keeps changing under the writer"
    )))
}
