//! Order rows: how an `Order` is laid out in the `orders` table, and the order reads
//! shared by the read path and the writer.

use boxoffice_domain::{EventId, HoldId, Millis, Money, OrderState};
use boxoffice_engine::ports::{DueOrders, EventOrders, Order, OrderSeat, StoreError};
use sqlx::postgres::PgRow;
use sqlx::{PgExecutor, Row};

use crate::conn::{corrupt, db};

/// `seats` is read as text so serde_json, not a second JSON type, parses it.
macro_rules! order_columns {
    () => {
        "id, hold_id, event_id, buyer_id, seats::text, total, currency, state, payment_ref, created_at, updated_at, attempts, next_attempt_at"
    };
}

const BY_ID: &str = concat!("SELECT ", order_columns!(), " FROM orders WHERE id = $1");
const BY_HOLD: &str = concat!(
    "SELECT ",
    order_columns!(),
    " FROM orders WHERE hold_id = $1"
);
const OF_BUYER: &str = concat!(
    "SELECT ",
    order_columns!(),
    " FROM orders
      WHERE buyer_id = $1
        AND (state IN ('committed', 'pending_capture', 'confirmed')
             OR id IN (SELECT id FROM orders WHERE buyer_id = $1
                       ORDER BY created_at DESC, id COLLATE \"C\" DESC LIMIT $2))
      ORDER BY created_at, id COLLATE \"C\""
);
const DUE: &str = concat!(
    "SELECT ",
    order_columns!(),
    " FROM orders WHERE state = ANY($1) AND updated_at <= $2 AND next_attempt_at <= $3",
    " AND (next_attempt_at, id) > ($4, $5) ORDER BY next_attempt_at, id LIMIT $6"
);

const OF_EVENT: &str = concat!(
    "SELECT ",
    order_columns!(),
    " FROM orders WHERE event_id = $1 AND id COLLATE \"C\" > $2",
    " ORDER BY id COLLATE \"C\" LIMIT $3"
);

fn parse(row: &PgRow) -> Result<Order, StoreError> {
    let text = |i: usize| row.try_get::<String, _>(i).map_err(db);
    let int = |i: usize| row.try_get::<i64, _>(i).map_err(db);
    Ok(Order {
        id: text(0)?.parse().map_err(|e| corrupt("order id", e))?,
        hold: text(1)?
            .parse::<HoldId>()
            .map_err(|e| corrupt("hold id", e))?,
        event: EventId(int(2)?),
        buyer: text(3)?.parse().map_err(|e| corrupt("buyer id", e))?,
        seats: serde_json::from_str::<Vec<OrderSeat>>(&text(4)?)
            .map_err(|e| corrupt("order seats", e))?,
        total: Money(int(5)?),
        currency: text(6)?,
        state: parse_state(&text(7)?)?,
        payment_ref: row.try_get(8).map_err(db)?,
        created_at: Millis(int(9)?),
        updated_at: Millis(int(10)?),
        attempts: u32::try_from(row.try_get::<i32, _>(11).map_err(db)?)
            .map_err(|e| corrupt("order attempts", e))?,
        next_attempt_at: Millis(int(12)?),
    })
}

pub(crate) fn parse_state(s: &str) -> Result<OrderState, StoreError> {
    OrderState::parse(s).ok_or_else(|| corrupt("order state", s))
}

pub(crate) async fn by_id<'e>(
    conn: impl PgExecutor<'e>,
    id: &str,
) -> Result<Option<Order>, StoreError> {
    let row = sqlx::query(BY_ID)
        .bind(id)
        .fetch_optional(conn)
        .await
        .map_err(db)?;
    row.as_ref().map(parse).transpose()
}

pub(crate) async fn by_hold<'e>(
    conn: impl PgExecutor<'e>,
    hold: &str,
) -> Result<Option<Order>, StoreError> {
    let row = sqlx::query(BY_HOLD)
        .bind(hold)
        .fetch_optional(conn)
        .await
        .map_err(db)?;
    row.as_ref().map(parse).transpose()
}

pub(crate) async fn of_buyer<'e>(
    conn: impl PgExecutor<'e>,
    buyer: &str,
    limit: usize,
) -> Result<Vec<Order>, StoreError> {
    let rows = sqlx::query(OF_BUYER)
        .bind(buyer)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(conn)
        .await
        .map_err(db)?;
    rows.iter().map(parse).collect()
}

/// A page of the recovery sweep's work list (see `DueOrders`).
pub(crate) async fn due<'e>(
    conn: impl PgExecutor<'e>,
    q: &DueOrders<'_>,
) -> Result<Vec<Order>, StoreError> {
    let names: Vec<&str> = q.states.iter().map(|s| s.as_str()).collect();
    let (after_at, after_id) = q
        .after
        .map_or((i64::MIN, String::new()), |(at, id)| (at.0, id.to_string()));
    let rows = sqlx::query(DUE)
        .bind(names)
        .bind(q.idle_since.0)
        .bind(q.due_at.0)
        .bind(after_at)
        .bind(after_id)
        .bind(i64::try_from(q.limit).unwrap_or(i64::MAX))
        .fetch_all(conn)
        .await
        .map_err(db)?;
    rows.iter().map(parse).collect()
}

/// How many of the event's orders are in each state (by the `orders_by_event` index).
pub(crate) async fn states_of_event<'e>(
    conn: impl PgExecutor<'e>,
    event: EventId,
) -> Result<Vec<(OrderState, u64)>, StoreError> {
    let rows = sqlx::query("SELECT state, COUNT(*) FROM orders WHERE event_id = $1 GROUP BY state")
        .bind(event.0)
        .fetch_all(conn)
        .await
        .map_err(db)?;
    rows.iter()
        .map(|row| {
            let state: String = row.try_get(0).map_err(db)?;
            let n: i64 = row.try_get(1).map_err(db)?;
            let state = OrderState::parse(&state).ok_or_else(|| corrupt("order state", &state))?;
            Ok((state, u64::try_from(n).unwrap_or(0)))
        })
        .collect()
}

/// A page of an event's orders in id order (see `EventOrders`).
pub(crate) async fn of_event<'e>(
    conn: impl PgExecutor<'e>,
    q: &EventOrders,
) -> Result<Vec<Order>, StoreError> {
    let rows = sqlx::query(OF_EVENT)
        .bind(q.event.0)
        .bind(q.after.map(|o| o.to_string()).unwrap_or_default())
        .bind(i64::try_from(q.limit).unwrap_or(i64::MAX))
        .fetch_all(conn)
        .await
        .map_err(db)?;
    rows.iter().map(parse).collect()
}
