//! Order writes other than the commit: the first insert (one order per hold) and the
//! conditional state moves of the order state machine. Each write and its history line
//! (and payment row) go in one statement: one round trip on the commit path.

use boxoffice_domain::{Millis, OrderEvent, OrderId, OrderState};
use boxoffice_engine::ports::{InsertOrder, LedgerError, Order, StoreError, TicketRow};
use sqlx::PgConnection;

use crate::conn::db;
use crate::writer::Step;
use crate::{orders, ticket_rows};

/// The hold's UNIQUE constraint makes a retried checkout find the first order instead
/// of writing a second one; ON CONFLICT waits for a racing insert from another node. An
/// order naming a seat the ledger has already sold is not written (the hot store offered
/// a seat it had lost track of): the second column names that seat.
const INSERT: &str = "
    WITH cancelled AS (
        SELECT EXISTS (SELECT 1 FROM event_cancellations WHERE event_id = $3) AS yes
    ), taken AS (
        SELECT s.seat_id FROM sold_seats s
        WHERE s.event_id = $3
          AND s.seat_id IN (SELECT e->>'seat_id' FROM jsonb_array_elements($5::jsonb) e)
        LIMIT 1
    ), ins AS (
        INSERT INTO orders (id, hold_id, event_id, buyer_id, seats, total, currency, state,
                            payment_ref, created_at, updated_at, attempts, next_attempt_at)
        SELECT $1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10, $11, $12, $13
        WHERE NOT EXISTS (SELECT 1 FROM taken) AND NOT (SELECT yes FROM cancelled)
        ON CONFLICT (hold_id) DO NOTHING
        RETURNING id
    ), history AS (
        INSERT INTO order_events (order_id, from_state, to_state, event, at)
        SELECT id, NULL, $8, $14, $10 FROM ins
    )
    SELECT (SELECT count(*) FROM ins), (SELECT seat_id FROM taken), (SELECT yes FROM cancelled)";

/// The move happens only from the state it was computed from; payments get a row when
/// the provider gave a reference. A new state starts the sweep's attempt count again.
const MOVE: &str = "
    WITH moved AS (
        UPDATE orders SET state = $3, payment_ref = COALESCE($4, payment_ref), updated_at = $5,
            attempts = CASE WHEN $2 = $3 THEN attempts ELSE 0 END
        WHERE id = $1 AND state = $2
        RETURNING id, total
    ), history AS (
        INSERT INTO order_events (order_id, from_state, to_state, event, at)
        SELECT id, $2, $3, $6, $5 FROM moved
    ), payment AS (
        INSERT INTO payments (order_id, kind, reference, amount, at)
        SELECT id, $6, $4, total, $5 FROM moved WHERE $4::text IS NOT NULL
    )
    SELECT count(*) FROM moved";

/// Writer job.
pub(crate) async fn insert(
    conn: &mut PgConnection,
    order: &Order,
) -> Result<Step<InsertOrder>, StoreError> {
    let hold = order.hold.to_string();
    let seats = serde_json::to_string(&order.seats).map_err(StoreError::new)?;
    let (inserted, taken, cancelled): (i64, Option<String>, bool) = sqlx::query_as(INSERT)
        .bind(order.id.to_string())
        .bind(&hold)
        .bind(order.event.0)
        .bind(order.buyer.to_string())
        .bind(seats)
        .bind(order.total.0)
        .bind(&order.currency)
        .bind(order.state.as_str())
        .bind(&order.payment_ref)
        .bind(order.created_at.0)
        .bind(order.updated_at.0)
        .bind(i32::try_from(order.attempts).unwrap_or(i32::MAX))
        .bind(order.next_attempt_at.0)
        .bind(OrderEvent::CREATED)
        .fetch_one(&mut *conn)
        .await
        .map_err(db)?;
    if inserted == 1 {
        return Ok(Step::Keep(InsertOrder::Inserted));
    }
    // A retried checkout whose order exists answers with it, even once its seats sold.
    let existing = orders::by_hold(&mut *conn, &hold).await?;
    if existing.is_none() && cancelled {
        return Ok(Step::Undo(InsertOrder::EventCancelled));
    }
    if let (None, Some(seat_id)) = (&existing, taken) {
        return Ok(Step::Undo(InsertOrder::SeatSold { seat_id }));
    }
    existing
        .map(|o| Step::Undo(InsertOrder::Exists(o)))
        .ok_or_else(|| StoreError::new("postgres: hold conflict without an order"))
}

/// Writer job: moves the order if the state machine allows it. Events that move seats
/// are refused here: only `commit` may make an order own seats and only `cancel_sale`
/// may take them back, or P2 would break silently.
pub(crate) async fn apply(
    conn: &mut PgConnection,
    id: OrderId,
    event: OrderEvent,
    payment_ref: Option<&str>,
    now: Millis,
) -> Result<Step<Result<Order, LedgerError>>, StoreError> {
    let key = id.to_string();
    // Another node may move the order between the read and the update; the update is
    // conditional, so a lost race just reads the new state and decides again.
    for _ in 0..3 {
        let Some(mut order) = orders::by_id(&mut *conn, &key).await? else {
            return Ok(Step::Undo(Err(LedgerError::NotFound)));
        };
        let from = order.state;
        let to = match from.apply(event) {
            Ok(to) if !event.moves_seats() => to,
            _ => return Ok(Step::Undo(Err(LedgerError::Conflict(from)))),
        };
        let moved: i64 = sqlx::query_scalar(MOVE)
            .bind(&key)
            .bind(from.as_str())
            .bind(to.as_str())
            .bind(payment_ref)
            .bind(now.0)
            .bind(event.as_str())
            .fetch_one(&mut *conn)
            .await
            .map_err(db)?;
        if moved == 1 {
            if let Some(reference) = payment_ref {
                order.payment_ref = Some(reference.to_string());
            }
            if to != from {
                order.attempts = 0;
            }
            order.state = to;
            order.updated_at = now;
            if to == OrderState::Confirmed && from != to {
                // Paid: its tickets exist from this transaction on (no ticket without
                // money).
                let rows = TicketRow::first_of(&order, now)?;
                ticket_rows::insert_tickets(&mut *conn, &rows).await?;
            }
            return Ok(Step::Keep(Ok(order)));
        }
    }
    Err(StoreError::new(format_args!(
        "postgres: order {key} keeps changing under the writer"
    )))
}

const CLAIM: &str = "
    UPDATE orders SET attempts = attempts + 1, next_attempt_at = $4
    WHERE id = $1 AND state = $2 AND next_attempt_at = $3";

/// Writer job: counts one more sweep attempt and sets the next, if the order is still
/// as the sweep read it.
pub(crate) async fn claim_attempt(
    conn: &mut PgConnection,
    order: &Order,
    next_attempt_at: Millis,
) -> Result<Step<bool>, StoreError> {
    let done = sqlx::query(CLAIM)
        .bind(order.id.to_string())
        .bind(order.state.as_str())
        .bind(order.next_attempt_at.0)
        .bind(next_attempt_at.0)
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    Ok(if done.rows_affected() == 1 {
        Step::Keep(true)
    } else {
        Step::Undo(false)
    })
}
