//! Tickets that stand apart from their order (`tickets.own_state`): what the exchange
//! took out of an order, the event's cancellation claiming the refund of a swap's
//! buyer, and one ticket cancelled on its own. See docs/ARCHITECTURE.md §9, "Undoing a sale after the exchange".

use boxoffice_domain::ticket::{SeatLabel, TicketId};
use boxoffice_domain::{EventId, Millis, Money, OrderEvent, OrderId, OrderState, SwapId};
use boxoffice_engine::ports::{CancelledTicket, StoreError, Swap, TicketCancelRefusal};
use rusqlite::{Connection, OptionalExtension, params};

use crate::conn::{corrupt, db};
use crate::exchange_rows::{SWAP, swap_of};
use crate::orders::parse_state;
use crate::ticket_rows::ticket;
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
    const SEAT: &str =
        "s.order_id = t.order_id AND s.seat_id = t.seat_id AND s.event_id = t.event_id
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

/// The columns `cancelled_of` reads.
const CANCELLED: &str = "SELECT id, order_id, event_id, seat_id, refund_amount, own_state,
    cancelled_at FROM tickets";

fn cancelled_of(
    r: &rusqlite::Row<'_>,
) -> rusqlite::Result<(String, String, i64, String, i64, String, i64)> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
    ))
}

fn parse_cancelled(
    raw: (String, String, i64, String, i64, String, i64),
) -> Result<CancelledTicket, StoreError> {
    let (id, order, event, seat, amount, state, at) = raw;
    Ok(CancelledTicket {
        ticket: id.parse().map_err(|e| corrupt("ticket id", e))?,
        order: order.parse().map_err(|e| corrupt("order id", e))?,
        event: EventId(event),
        seat: SeatLabel::try_from(seat).map_err(|e| corrupt("seat label", e))?,
        amount: Money(amount),
        state: parse_state(&state)?,
        cancelled_at: Millis(at),
    })
}

/// Writer job: one ticket's cancellation claimed (see the port), or a refusal and
/// nothing written.
pub(crate) fn cancel_ticket(
    conn: &Connection,
    id: TicketId,
    now: Millis,
) -> Result<Step<Result<CancelledTicket, TicketCancelRefusal>>, StoreError> {
    use TicketCancelRefusal as No;
    let key = id.to_string();
    let Some(facts) = ticket(conn, id)? else {
        return Ok(Step::Undo(Err(No::NotFound)));
    };
    let own: Option<String> = conn
        .prepare_cached("SELECT own_state FROM tickets WHERE id = ?1")
        .and_then(|mut s| s.query_row([&key], |r| r.get(0)))
        .map_err(db)?;
    let t = &facts.ticket;
    let order = t.order.to_string();
    let refusal = match own.as_deref() {
        Some("refunding" | "cancelled") => Some(No::AlreadyCancelled),
        Some(_) => Some(No::Exchanged),
        None if facts.order_state != OrderState::Confirmed => {
            Some(No::NotConfirmed(facts.order_state))
        }
        None if facts.checked_in.is_some() => Some(No::CheckedIn),
        None => None,
    };
    if let Some(no) = refusal {
        return Ok(Step::Undo(Err(no)));
    }
    let busy: bool = conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM exchange_listings WHERE ticket_id = ?1
                    AND state IN ('open', 'reserved'))
                 OR EXISTS (SELECT 1 FROM exchange_swaps WHERE ticket_id = ?1
                    AND state IN ('reserved', 'charged'))
                 OR EXISTS (SELECT 1 FROM ticket_transfers WHERE ticket_id = ?1
                    AND state = 'offered' AND expires_at > ?2)",
        )
        .and_then(|mut s| s.query_row(params![key, now.0], |r| r.get(0)))
        .map_err(db)?;
    if busy {
        return Ok(Step::Undo(Err(No::Listed)));
    }
    let following: u32 = conn
        .prepare_cached("SELECT COUNT(*) FROM tickets WHERE order_id = ?1 AND own_state IS NULL")
        .and_then(|mut s| s.query_row([&order], |r| r.get(0)))
        .map_err(db)?;
    if following <= 1 {
        return Ok(Step::Undo(Err(No::LastTicket)));
    }
    let seat: Option<(i64, String)> = conn
        .prepare_cached(
            "SELECT price, buyer_id FROM sold_seats WHERE event_id = ?1 AND seat_id = ?2 AND order_id = ?3",
        )
        .and_then(|mut s| {
            s.query_row(params![t.event.0, t.seat.as_str(), order], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
        })
        .map_err(db)?;
    let Some((price, holder)) = seat else {
        return Err(StoreError::new(
            "sqlite: a confirmed order's ticket has no sold seat",
        ));
    };
    conn.prepare_cached(
        "UPDATE tickets SET own_state = 'refunding', refund_amount = ?2, cancelled_at = ?3
         WHERE id = ?1 AND own_state IS NULL",
    )
    .and_then(|mut s| s.execute(params![key, price, now.0]))
    .map_err(db)?;
    conn.prepare_cached(
        "UPDATE buyer_tickets SET tickets = tickets - 1 WHERE event_id = ?1 AND buyer_id = ?2",
    )
    .and_then(|mut s| s.execute(params![t.event.0, holder]))
    .map_err(db)?;
    conn.prepare_cached(
        "DELETE FROM sold_seats WHERE event_id = ?1 AND seat_id = ?2 AND order_id = ?3",
    )
    .and_then(|mut s| s.execute(params![t.event.0, t.seat.as_str(), order]))
    .map_err(db)?;
    let detail = serde_json::json!({
        "ticket_id": id,
        "seat_id": t.seat.as_str(),
        "amount": price,
    });
    let confirmed = OrderState::Confirmed.as_str();
    conn.prepare_cached(
        "INSERT INTO order_events (order_id, from_state, to_state, event, at, detail)
         VALUES (?1, ?2, ?2, ?3, ?4, ?5)",
    )
    .and_then(|mut s| {
        s.execute(params![
            order,
            confirmed,
            OrderEvent::TICKET_CANCELLED,
            now.0,
            detail.to_string()
        ])
    })
    .map_err(db)?;
    Ok(Step::Keep(Ok(CancelledTicket {
        ticket: id,
        order: t.order,
        event: t.event,
        seat: t.seat.clone(),
        amount: Money(price),
        state: OrderState::Refunding,
        cancelled_at: now,
    })))
}

/// Writer job: `refunding → cancelled`.
pub(crate) fn ticket_refunded(conn: &Connection, id: TicketId) -> Result<Step<bool>, StoreError> {
    conn.prepare_cached(
        "UPDATE tickets SET own_state = 'cancelled' WHERE id = ?1 AND own_state = 'refunding'",
    )
    .and_then(|mut s| s.execute([id.to_string()]))
    .map(|n| Step::Keep(n == 1))
    .map_err(db)
}

pub(crate) fn tickets_refunding(
    conn: &Connection,
    before: Millis,
    limit: u32,
) -> Result<Vec<CancelledTicket>, StoreError> {
    let sql = format!(
        "{CANCELLED} WHERE own_state = 'refunding' AND cancelled_at < ?1
         ORDER BY cancelled_at, id LIMIT ?2"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(db)?;
    let rows = stmt
        .query_map(params![before.0, limit], cancelled_of)
        .map_err(db)?;
    rows.map(|r| r.map_err(db).and_then(parse_cancelled))
        .collect()
}

pub(crate) fn cancelled_parts(conn: &Connection, order: OrderId) -> Result<Money, StoreError> {
    conn.prepare_cached(
        "SELECT COALESCE(SUM(refund_amount), 0) FROM tickets
         WHERE order_id = ?1 AND own_state IN ('refunding', 'cancelled')",
    )
    .and_then(|mut s| s.query_row([order.to_string()], |r| r.get(0)))
    .map(Money)
    .map_err(db)
}
