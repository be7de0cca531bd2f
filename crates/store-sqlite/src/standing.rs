//! Tickets that stand apart from their order (`tickets.own_state`): what the exchange
//! took out of an order, and the event's cancellation claiming the refund of a swap's
//! buyer. See docs/ARCHITECTURE.md §9, "Undoing a sale after the exchange".

use boxoffice_domain::{EventId, Millis, Money, OrderId, SwapId};
use boxoffice_engine::ports::{StoreError, Swap};
use rusqlite::{Connection, params};

use crate::conn::db;
use crate::exchange_rows::{SWAP, swap_of};
use crate::writer::Step;

/// The swaps of an order whose payout was (or is about to be) refunded from it.
const PAID_OUT: &str = "(state IN ('moved', 'done') OR cancelled_at IS NOT NULL)";

pub(crate) fn payouts_of(conn: &Connection, order: OrderId) -> Result<Money, StoreError> {
    conn.prepare_cached(&format!(
        "SELECT COALESCE(SUM(payout), 0) FROM exchange_swaps WHERE seller_order = ?1 AND {PAID_OUT}"
    ))
    .and_then(|mut s| s.query_row([order.to_string()], |r| r.get(0)))
    .map(Money)
    .map_err(db)
}

pub(crate) fn live_swaps(conn: &Connection, event: EventId) -> Result<Vec<Swap>, StoreError> {
    let sql = format!("{SWAP} WHERE event_id = ?1 AND state != 'undone' ORDER BY created_at, id");
    let mut stmt = conn.prepare_cached(&sql).map_err(db)?;
    let rows = stmt.query_map([event.0], swap_of).map_err(db)?;
    rows.collect::<rusqlite::Result<_>>().map_err(db)
}

/// Writer job: `done → refunding` for the event's cancellation, the ticket revoked and
/// its seat given back in the ledger, or nothing.
pub(crate) fn claim_cancelled_swap(
    conn: &Connection,
    id: SwapId,
    now: Millis,
) -> Result<Step<bool>, StoreError> {
    let key = id.to_string();
    let claimed = conn
        .prepare_cached(
            "UPDATE exchange_swaps SET state = 'refunding', cancelled_at = ?2, updated_at = ?2
             WHERE id = ?1 AND state = 'done'",
        )
        .and_then(|mut s| s.execute(params![key, now.0]))
        .map_err(db)?;
    if claimed != 1 {
        return Ok(Step::Keep(false));
    }
    conn.prepare_cached(
        "UPDATE tickets SET own_state = 'refunded'
         WHERE id = (SELECT ticket_id FROM exchange_swaps WHERE id = ?1)",
    )
    .and_then(|mut s| s.execute([&key]))
    .map_err(db)?;
    // The seat (kept under the seller's order while the ticket stood apart) off its
    // holder's count, then the seat itself; a ticket claimed by an earlier swap of
    // its own has none left.
    const SEAT: &str = "s.order_id = t.order_id AND s.seat_id = t.seat_id AND s.event_id = t.event_id
         AND t.id = (SELECT ticket_id FROM exchange_swaps WHERE id = ?1)";
    conn.prepare_cached(&format!(
        "UPDATE buyer_tickets SET tickets = tickets - 1
         WHERE (event_id, buyer_id) IN (SELECT s.event_id, s.buyer_id FROM sold_seats s, tickets t WHERE {SEAT})"
    ))
    .and_then(|mut s| s.execute([&key]))
    .map_err(db)?;
    conn.prepare_cached(&format!(
        "DELETE FROM sold_seats WHERE (event_id, seat_id) IN
             (SELECT s.event_id, s.seat_id FROM sold_seats s, tickets t WHERE {SEAT})"
    ))
    .and_then(|mut s| s.execute([&key]))
    .map_err(db)?;
    Ok(Step::Keep(true))
}
