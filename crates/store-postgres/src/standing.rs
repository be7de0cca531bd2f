//! Tickets that stand apart from their order (`tickets.own_state`): what the exchange
//! took out of an order, and the event's cancellation claiming the refund of a swap's
//! buyer. See docs/ARCHITECTURE.md §9, "Undoing a sale after the exchange".

use boxoffice_domain::{EventId, Millis, Money, OrderId, SwapId};
use boxoffice_engine::ports::{StoreError, Swap};
use sqlx::PgConnection;

use crate::conn::db;
use crate::exchange_rows::{swap_of, swap_sql};

pub(crate) async fn payouts_of(conn: &mut PgConnection, order: OrderId) -> Result<Money, StoreError> {
    let sum: i64 = sqlx::query_scalar(
        "SELECT COALESCE(SUM(payout), 0)::bigint FROM exchange_swaps
         WHERE seller_order = $1 AND (state IN ('moved', 'done') OR cancelled_at IS NOT NULL)",
    )
    .bind(order.to_string())
    .fetch_one(conn)
    .await
    .map_err(db)?;
    Ok(Money(sum))
}

pub(crate) async fn live_swaps(conn: &mut PgConnection, event: EventId) -> Result<Vec<Swap>, StoreError> {
    let found = sqlx::query(concat!(
        swap_sql!(),
        "WHERE event_id = $1 AND state != 'undone' ORDER BY created_at, id"
    ))
    .bind(event.0)
    .fetch_all(conn)
    .await
    .map_err(db)?;
    found.iter().map(swap_of).collect()
}

/// `done → refunding` for the event's cancellation, the ticket revoked and its seat
/// given back in the ledger, or nothing. The ticket's row is locked first, as every
/// write of a ticket does.
pub(crate) async fn claim_cancelled_swap(
    conn: &mut PgConnection,
    id: SwapId,
    now: Millis,
) -> Result<bool, StoreError> {
    let claimed: i64 = sqlx::query_scalar(
        "WITH locked AS (
             SELECT t.id FROM tickets t JOIN exchange_swaps w ON w.ticket_id = t.id
             WHERE w.id = $1 FOR UPDATE OF t
         ), claimed AS (
             UPDATE exchange_swaps SET state = 'refunding', cancelled_at = $2, updated_at = $2
             WHERE id = $1 AND state = 'done' AND EXISTS (SELECT 1 FROM locked)
             RETURNING ticket_id
         ), ticket AS (
             UPDATE tickets t SET own_state = 'refunded' FROM claimed c WHERE t.id = c.ticket_id
             RETURNING t.event_id, t.order_id, t.seat_id
         ), freed AS (
             DELETE FROM sold_seats s USING ticket t
             WHERE s.event_id = t.event_id AND s.order_id = t.order_id AND s.seat_id = t.seat_id
             RETURNING s.event_id, s.buyer_id
         ), counts AS (
             UPDATE buyer_tickets g SET tickets = g.tickets - 1
             FROM freed f WHERE g.event_id = f.event_id AND g.buyer_id = f.buyer_id
         )
         SELECT count(*) FROM claimed",
    )
    .bind(id.to_string())
    .bind(now.0)
    .fetch_one(conn)
    .await
    .map_err(db)?;
    Ok(claimed == 1)
}
