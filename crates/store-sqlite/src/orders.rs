//! Order rows: how an `Order` is laid out in the `orders` table, and the order reads
//! shared by the read path and the writer.

use boxoffice_domain::{HoldId, Millis, Money, OrderState};
use boxoffice_engine::ports::{Order, OrderSeat, StoreError};
use rusqlite::{Connection, Params, Row};

use crate::conn::{corrupt, db};

pub(crate) const ORDER_COLUMNS: &str = "id, hold_id, event_id, buyer_id, seats, total, currency, state, payment_ref, created_at, updated_at, attempts, next_attempt_at";

/// The columns as stored, before they are parsed back into domain types.
struct RawOrder {
    id: String,
    hold: String,
    event: i64,
    buyer: String,
    seats: String,
    total: i64,
    currency: String,
    state: String,
    payment_ref: Option<String>,
    created_at: i64,
    updated_at: i64,
    attempts: u32,
    next_attempt_at: i64,
}

fn raw(row: &Row<'_>) -> rusqlite::Result<RawOrder> {
    Ok(RawOrder {
        id: row.get(0)?,
        hold: row.get(1)?,
        event: row.get(2)?,
        buyer: row.get(3)?,
        seats: row.get(4)?,
        total: row.get(5)?,
        currency: row.get(6)?,
        state: row.get(7)?,
        payment_ref: row.get(8)?,
        created_at: row.get(9)?,
        updated_at: row.get(10)?,
        attempts: row.get(11)?,
        next_attempt_at: row.get(12)?,
    })
}

impl RawOrder {
    fn parse(self) -> Result<Order, StoreError> {
        Ok(Order {
            id: self.id.parse().map_err(|e| corrupt("order id", e))?,
            event: boxoffice_domain::EventId(self.event),
            buyer: self.buyer.parse().map_err(|e| corrupt("buyer id", e))?,
            hold: self
                .hold
                .parse::<HoldId>()
                .map_err(|e| corrupt("hold id", e))?,
            seats: serde_json::from_str::<Vec<OrderSeat>>(&self.seats)
                .map_err(|e| corrupt("order seats", e))?,
            total: Money(self.total),
            currency: self.currency,
            state: parse_state(&self.state)?,
            payment_ref: self.payment_ref,
            created_at: Millis(self.created_at),
            updated_at: Millis(self.updated_at),
            attempts: self.attempts,
            next_attempt_at: Millis(self.next_attempt_at),
        })
    }
}

pub(crate) fn parse_state(s: &str) -> Result<OrderState, StoreError> {
    OrderState::parse(s).ok_or_else(|| corrupt("order state", s))
}

/// Every order matched by `sql`, which must select `ORDER_COLUMNS` in that order.
pub(crate) fn query(
    conn: &Connection,
    sql: &str,
    params: impl Params,
) -> Result<Vec<Order>, StoreError> {
    let mut stmt = conn.prepare_cached(sql).map_err(db)?;
    let rows = stmt.query_map(params, raw).map_err(db)?;
    rows.map(|r| r.map_err(db).and_then(RawOrder::parse))
        .collect()
}

pub(crate) fn one(
    conn: &Connection,
    sql: &str,
    params: impl Params,
) -> Result<Option<Order>, StoreError> {
    Ok(query(conn, sql, params)?.into_iter().next())
}

pub(crate) fn by_id(conn: &Connection, id: &str) -> Result<Option<Order>, StoreError> {
    one(
        conn,
        &format!("SELECT {ORDER_COLUMNS} FROM orders WHERE id = ?1"),
        [id],
    )
}

pub(crate) fn by_hold(conn: &Connection, hold: &str) -> Result<Option<Order>, StoreError> {
    one(
        conn,
        &format!("SELECT {ORDER_COLUMNS} FROM orders WHERE hold_id = ?1"),
        [hold],
    )
}

pub(crate) fn of_buyer(
    conn: &Connection,
    buyer: &str,
    limit: usize,
) -> Result<Vec<Order>, StoreError> {
    let sql = format!(
        "SELECT {ORDER_COLUMNS} FROM orders
         WHERE buyer_id = ?1
           AND (state IN ('committed', 'pending_capture', 'confirmed')
                OR id IN (SELECT id FROM orders WHERE buyer_id = ?1
                          ORDER BY created_at DESC, id DESC LIMIT ?2))
         ORDER BY created_at, id"
    );
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    query(conn, &sql, rusqlite::params![buyer, limit])
}

/// A page of the recovery sweep's work list: orders in any of `q.states` idle since
/// `q.idle_since` and due at `q.due_at`, in (next_attempt_at, id) order after the
/// cursor.
pub(crate) fn due(conn: &Connection, q: &DueQuery) -> Result<Vec<Order>, StoreError> {
    let sql = format!(
        "SELECT {ORDER_COLUMNS} FROM orders
         WHERE state IN (SELECT value FROM json_each(?1)) AND updated_at <= ?2
           AND next_attempt_at <= ?3 AND (next_attempt_at, id) > (?4, ?5)
         ORDER BY next_attempt_at, id LIMIT ?6"
    );
    query(
        conn,
        &sql,
        rusqlite::params![
            q.states,
            q.idle_since,
            q.due_at,
            q.after.0,
            q.after.1,
            q.limit
        ],
    )
}

/// `DueOrders` in the columns' terms, owned so it can go to a reader thread.
pub(crate) struct DueQuery {
    /// A JSON array of state names.
    pub states: String,
    pub idle_since: i64,
    pub due_at: i64,
    /// Before every order when the sweep starts: (i64::MIN, "").
    pub after: (i64, String),
    pub limit: i64,
}

/// A JSON array of state names, for `IN (SELECT value FROM json_each(?))`.
pub(crate) fn state_list(states: impl IntoIterator<Item = OrderState>) -> String {
    let names: Vec<&str> = states.into_iter().map(OrderState::as_str).collect();
    serde_json::Value::from(names).to_string()
}
