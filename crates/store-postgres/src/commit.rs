//! The commit point (P1, P2, P6): an authorized order's seats become sold, the buyer's
//! ticket count grows, an `order_committed` outbox row and a history line are written,
//! and the order becomes `committed`, or none of it happens. The database decides
//! conflicts: the `sold_seats_pkey` primary key refuses a second sale and the
//! `buyer_within_limit` CHECK refuses a buyer over the limit; this file turns those
//! named refusals into outcomes. All writes are one statement, so a commit costs the
//! writer two round trips (read the order, write) besides its savepoint.

use boxoffice_domain::OrderState;
use boxoffice_engine::ports::{Commit, CommitOutcome, Order, StoreError};
use sqlx::PgConnection;

use crate::conn::{constraint, db};
use crate::moves::committed_names;
use crate::orders;
use crate::writer::Step;

/// Every sub-statement hangs off `moved`, so if another node moved the order first
/// nothing at all is written and the count says so.
const COMMIT: &str = "
    WITH moved AS (
        UPDATE orders SET state = $9, updated_at = $5
        WHERE id = $1 AND state = $8
        RETURNING id
    ), seats AS (
        INSERT INTO sold_seats (event_id, seat_id, order_id, buyer_id, price, sold_at)
        SELECT $2, s.seat_id, m.id, $3, s.price, $5
        FROM moved m, UNNEST($6::text[], $7::bigint[]) AS s (seat_id, price)
    ), tickets AS (
        INSERT INTO buyer_tickets (event_id, buyer_id, tickets, max_tickets)
        SELECT $2, $3, cardinality($6::text[]), $4 FROM moved
        ON CONFLICT (event_id, buyer_id) DO UPDATE
        SET tickets = buyer_tickets.tickets + excluded.tickets, max_tickets = excluded.max_tickets
    ), history AS (
        INSERT INTO order_events (order_id, from_state, to_state, event, at)
        SELECT id, $8, $9, $10, $5 FROM moved
    ), outbox AS (
        INSERT INTO outbox (order_id, kind, payload, created_at)
        SELECT id, 'order_committed', $11::jsonb, $5 FROM moved
    )
    SELECT count(*) FROM moved";

/// Writer job. Any refusal undoes the whole job (its savepoint), so a lost commit
/// leaves no sold seat, no ticket count and no outbox row behind.
pub(crate) async fn commit(
    conn: &mut PgConnection,
    c: &Commit,
) -> Result<Step<CommitOutcome>, StoreError> {
    let key = c.order.to_string();
    let order = orders::by_id(&mut *conn, &key)
        .await?
        .ok_or_else(|| StoreError::new(format_args!("no order {key} to commit")))?;
    if order.state != OrderState::Authorized {
        return Ok(Step::Undo(CommitOutcome::NotCommittable(order.state)));
    }
    let (from, to, event) = committed_names();
    let seat_ids: Vec<&str> = order.seats.iter().map(|s| s.seat_id.as_str()).collect();
    let prices: Vec<i64> = order.seats.iter().map(|s| s.price.0).collect();
    let written = sqlx::query_scalar::<_, i64>(COMMIT)
        .bind(&key)
        .bind(order.event.0)
        .bind(order.buyer.to_string())
        .bind(i32::try_from(c.max_per_buyer).unwrap_or(i32::MAX))
        .bind(c.now.0)
        .bind(&seat_ids)
        .bind(&prices)
        .bind(from)
        .bind(to)
        .bind(event)
        .bind(payload(&order, c).to_string())
        .fetch_one(&mut *conn)
        .await;
    match written {
        Ok(1) => Ok(Step::Keep(CommitOutcome::Committed)),
        // Moved by someone else between the read and the write: report what it is now.
        Ok(_) => {
            let state = orders::by_id(&mut *conn, &key).await?.map(|o| o.state);
            Ok(Step::Undo(CommitOutcome::NotCommittable(
                state.unwrap_or(order.state),
            )))
        }
        Err(e) => match constraint(&e) {
            Some("sold_seats_pkey") => Ok(Step::Undo(CommitOutcome::SeatTaken {
                seat_id: taken_seat(&e, &order),
            })),
            Some("buyer_within_limit") => Ok(Step::Undo(CommitOutcome::LimitExceeded)),
            _ => Err(db(e)),
        },
    }
}

/// Which of the order's seats clashed. The transaction is aborted until the savepoint
/// is rolled back, so it cannot be asked; the key is in the error's detail
/// (`Key (event_id, seat_id)=(7, S-1-3) already exists.`, translated with the server's
/// `lc_messages`), so the seat whose label closes the key there is the one.
fn taken_seat(e: &sqlx::Error, order: &Order) -> String {
    let detail = e
        .as_database_error()
        .and_then(|d| d.try_downcast_ref::<sqlx::postgres::PgDatabaseError>())
        .and_then(|d| d.detail())
        .unwrap_or("");
    let seats = || order.seats.iter().map(|s| &s.seat_id);
    seats()
        .find(|label| detail.contains(&format!(", {label})")))
        .or_else(|| seats().next())
        .cloned()
        .unwrap_or_default()
}

/// What subscribers learn about the sale; the same document the SQLite ledger writes.
fn payload(order: &Order, c: &Commit) -> serde_json::Value {
    serde_json::json!({
        "order_id": order.id,
        "event_id": order.event,
        "buyer_id": order.buyer,
        "hold_id": order.hold,
        "seats": order.seats,
        "total": order.total,
        "currency": order.currency,
        "committed_at": c.now,
    })
}
