//! Tickets that stand apart from their order (`tickets.own_state`): what the exchange
//! took out of an order, the event's cancellation claiming the refund of a swap's
//! buyer, and one ticket cancelled on its own. See docs/ARCHITECTURE.md §9, "Undoing a sale after the exchange".

use boxoffice_domain::ticket::{SeatLabel, TicketId};
use boxoffice_domain::{EventId, Millis, Money, OrderEvent, OrderId, OrderState, SwapId};
use boxoffice_engine::ports::{CancelledTicket, StoreError, Swap, TicketCancelRefusal};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use crate::conn::{corrupt, db};
use crate::exchange_rows::{swap_of, swap_sql};
use crate::orders::parse_state;
use crate::ticket_rows::{facts, facts_sql};

pub(crate) async fn payouts_of(
    conn: &mut PgConnection,
    order: OrderId,
) -> Result<Money, StoreError> {
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

pub(crate) async fn live_swaps(
    conn: &mut PgConnection,
    event: EventId,
) -> Result<Vec<Swap>, StoreError> {
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

macro_rules! cancelled_sql {
    () => {
        "SELECT id, order_id, event_id, seat_id, refund_amount, own_state, cancelled_at
         FROM tickets "
    };
}

fn cancelled_of(r: &PgRow) -> Result<CancelledTicket, StoreError> {
    let text = |i: usize| r.try_get::<String, _>(i).map_err(db);
    let num = |i: usize| r.try_get::<i64, _>(i).map_err(db);
    Ok(CancelledTicket {
        ticket: text(0)?.parse().map_err(|e| corrupt("ticket id", e))?,
        order: text(1)?.parse().map_err(|e| corrupt("order id", e))?,
        event: EventId(num(2)?),
        seat: SeatLabel::try_from(text(3)?).map_err(|e| corrupt("seat label", e))?,
        amount: Money(num(4)?),
        state: parse_state(&text(5)?)?,
        cancelled_at: Millis(num(6)?),
    })
}

/// One ticket's cancellation claimed (see the port), or a refusal. The order's
/// tickets are locked first, in id order as the order's revocation locks them: claims
/// of one order's tickets take turns (so the last one following it is never
/// cancelled), and a check-in, transfer or swap of the ticket waits or has committed.
/// Refusals write nothing; the caller rolls back.
pub(crate) async fn cancel_ticket(
    conn: &mut PgConnection,
    id: TicketId,
    now: Millis,
) -> Result<Result<CancelledTicket, TicketCancelRefusal>, StoreError> {
    use TicketCancelRefusal as No;
    let key = id.to_string();
    let order: Option<String> = sqlx::query_scalar("SELECT order_id FROM tickets WHERE id = $1")
        .bind(&key)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
    let Some(order) = order else {
        return Ok(Err(No::NotFound));
    };
    sqlx::query("SELECT id FROM tickets WHERE order_id = $1 ORDER BY id FOR UPDATE")
        .bind(&order)
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    let row = sqlx::query(concat!(facts_sql!(), "WHERE t.id = $1"))
        .bind(&key)
        .fetch_one(&mut *conn)
        .await
        .map_err(db)?;
    let f = facts(&row)?;
    let (own, following, busy): (Option<String>, i64, bool) = sqlx::query_as(
        "SELECT (SELECT own_state FROM tickets WHERE id = $1),
                (SELECT count(*) FROM tickets WHERE order_id = $2 AND own_state IS NULL),
                EXISTS (SELECT 1 FROM exchange_listings WHERE ticket_id = $1
                        AND state IN ('open', 'reserved'))
                 OR EXISTS (SELECT 1 FROM exchange_swaps WHERE ticket_id = $1
                        AND state IN ('reserved', 'charged'))
                 OR EXISTS (SELECT 1 FROM ticket_transfers WHERE ticket_id = $1
                        AND state = 'offered' AND expires_at > $3)",
    )
    .bind(&key)
    .bind(&order)
    .bind(now.0)
    .fetch_one(&mut *conn)
    .await
    .map_err(db)?;
    let refusal = match own.as_deref() {
        Some("refunding" | "cancelled") => Some(No::AlreadyCancelled),
        Some(_) => Some(No::Exchanged),
        None if f.order_state != OrderState::Confirmed => Some(No::NotConfirmed(f.order_state)),
        None if f.checked_in.is_some() => Some(No::CheckedIn),
        None if busy => Some(No::Listed),
        None if following <= 1 => Some(No::LastTicket),
        None => None,
    };
    if let Some(no) = refusal {
        return Ok(Err(no));
    }
    let t = &f.ticket;
    let price: Option<i64> = sqlx::query_scalar(
        "WITH freed AS (
             DELETE FROM sold_seats WHERE event_id = $1 AND seat_id = $2 AND order_id = $3
             RETURNING event_id, buyer_id, price
         ), counts AS (
             UPDATE buyer_tickets g SET tickets = g.tickets - 1
             FROM freed f WHERE g.event_id = f.event_id AND g.buyer_id = f.buyer_id
         ), ticket AS (
             UPDATE tickets SET own_state = 'refunding', cancelled_at = $5,
                 refund_amount = (SELECT price FROM freed)
             WHERE id = $4 AND own_state IS NULL
         ), history AS (
             INSERT INTO order_events (order_id, from_state, to_state, event, at, detail)
             SELECT $3, 'confirmed', 'confirmed', $6, $5,
                 jsonb_build_object('ticket_id', $4::text, 'seat_id', $2::text, 'amount', price)
             FROM freed
         )
         SELECT price FROM freed",
    )
    .bind(t.event.0)
    .bind(t.seat.as_str())
    .bind(&order)
    .bind(&key)
    .bind(now.0)
    .bind(OrderEvent::TICKET_CANCELLED)
    .fetch_optional(&mut *conn)
    .await
    .map_err(db)?;
    let Some(price) = price else {
        return Err(StoreError::new(
            "postgres: a confirmed order's ticket has no sold seat",
        ));
    };
    Ok(Ok(CancelledTicket {
        ticket: id,
        order: t.order,
        event: t.event,
        seat: t.seat.clone(),
        amount: Money(price),
        state: OrderState::Refunding,
        cancelled_at: now,
    }))
}

pub(crate) async fn ticket_refunded(
    conn: &mut PgConnection,
    id: TicketId,
) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "UPDATE tickets SET own_state = 'cancelled' WHERE id = $1 AND own_state = 'refunding'",
    )
    .bind(id.to_string())
    .execute(conn)
    .await
    .map_err(db)?;
    Ok(done.rows_affected() == 1)
}

pub(crate) async fn tickets_refunding(
    conn: &mut PgConnection,
    before: Millis,
    limit: u32,
) -> Result<Vec<CancelledTicket>, StoreError> {
    let sql = concat!(
        cancelled_sql!(),
        "WHERE own_state = 'refunding' AND cancelled_at < $1 ORDER BY cancelled_at, id LIMIT $2"
    );
    let found = sqlx::query(sql)
        .bind(before.0)
        .bind(i64::from(limit))
        .fetch_all(conn)
        .await
        .map_err(db)?;
    found.iter().map(cancelled_of).collect()
}

pub(crate) async fn cancelled_parts(
    conn: &mut PgConnection,
    order: OrderId,
) -> Result<Money, StoreError> {
    let sum: i64 = sqlx::query_scalar(
        "SELECT COALESCE(SUM(refund_amount), 0)::bigint FROM tickets
         WHERE order_id = $1 AND own_state IN ('refunding', 'cancelled')",
    )
    .bind(order.to_string())
    .fetch_one(conn)
    .await
    .map_err(db)?;
    Ok(Money(sum))
}
