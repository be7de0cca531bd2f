//! The provider's own book, in its own SQLite file: one row per order, keyed by our
//! order id (the idempotency key a real provider would be given). Kept apart from the
//! ledger so that a crash of the server cannot erase what the "provider" did, which is
//! exactly the situation the recovery sweep and the audit must be tested against.
//! Everything here is synchronous; the gateway runs it on the blocking pool.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use boxoffice_domain::{Money, OrderId};
use boxoffice_engine::ports::{ProviderPayment, ProviderState};
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::transitions::{parse_state, state_name};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS payments (
    order_id       TEXT PRIMARY KEY,
    reference      TEXT NOT NULL UNIQUE,
    amount         INTEGER NOT NULL,
    currency       TEXT NOT NULL,
    payment_method TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN
                       ('requires_action', 'authorized', 'captured', 'voided', 'declined',
                        'refunded')),
    decline_reason TEXT,
    created_at_ms  INTEGER NOT NULL,
    updated_at_ms  INTEGER NOT NULL
) STRICT;
-- Refunds of part of a captured payment, one row per idempotency key: a repeat of a
-- key refunds nothing more. The payment itself stays captured.
CREATE TABLE IF NOT EXISTS partial_refunds (
    key           TEXT PRIMARY KEY,
    order_id      TEXT NOT NULL REFERENCES payments (order_id),
    amount        INTEGER NOT NULL CHECK (amount > 0),
    created_at_ms INTEGER NOT NULL
) STRICT;
-- The webhook outbox: written in the same transaction as the change it reports, so a
-- change is never without its webhook. Delivered by whoever reads it (tests, a worker).
CREATE TABLE IF NOT EXISTS webhooks (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id   TEXT NOT NULL,
    payload    TEXT NOT NULL,
    delivered  INTEGER NOT NULL DEFAULT 0
) STRICT;
";

/// One payment as the provider keeps it: what the port exposes plus what only the
/// provider knows (currency, method, why it declined, when).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub order: OrderId,
    pub reference: String,
    pub amount: Money,
    pub currency: String,
    pub payment_method: String,
    pub state: ProviderState,
    pub decline_reason: Option<String>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

impl Record {
    pub fn to_port(&self) -> ProviderPayment {
        ProviderPayment {
            order: self.order,
            reference: self.reference.clone(),
            amount: self.amount,
            state: self.state,
        }
    }
}

/// Opens (creating if needed) the provider's file. WAL with `synchronous=NORMAL`: every
/// acknowledged transaction is in the WAL before the call answers, so it survives a
/// crash of either process (what the fake exists to test); only an OS crash could lose
/// the last ones, which no test simulates, and an fsync per call would make the fake,
/// not the engine, the bottleneck of every soak.
/// Opens the book. Several server processes may open one file at the same moment (nodes
/// sharing a data directory): the busy timeout is set before anything takes a lock, and
/// the switch to WAL — which SQLite may refuse at once while another connection holds
/// the file — is retried for a while.
pub fn open_file(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    let mut tries = 0;
    loop {
        let step = conn
            .pragma_update(None, "journal_mode", "WAL")
            .and_then(|()| conn.pragma_update(None, "synchronous", "NORMAL"))
            .and_then(|()| conn.execute_batch(SCHEMA));
        match step {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if tries < 50
                    && matches!(
                        e.code,
                        rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                    ) =>
            {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            other => return other.map(|()| conn),
        }
    }
}

/// A throwaway book for unit tests; same schema, nothing on disk.
pub fn open_in_memory() -> rusqlite::Result<Connection> {
    let conn = Connection::open_in_memory()?;
    conn.execute_batch(SCHEMA)?;
    Ok(conn)
}

pub fn now_ms() -> i64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

pub fn by_reference(conn: &Connection, reference: &str) -> rusqlite::Result<Option<Record>> {
    conn.query_row(
        "SELECT * FROM payments WHERE reference = ?1",
        params![reference],
        from_row,
    )
    .optional()
}

pub fn get(conn: &Connection, order: OrderId) -> rusqlite::Result<Option<Record>> {
    conn.query_row(
        "SELECT * FROM payments WHERE order_id = ?1",
        params![order.to_string()],
        from_row,
    )
    .optional()
}

/// Every payment, oldest first, so the audit reads them in the order they happened.
pub fn all(conn: &Connection) -> rusqlite::Result<Vec<Record>> {
    let mut stmt = conn.prepare("SELECT * FROM payments ORDER BY created_at_ms, rowid")?;
    let rows = stmt.query_map([], from_row)?;
    rows.collect()
}

/// Writes a first authorization (approved or declined). The caller has checked, inside
/// the same transaction, that the order has no row yet.
pub fn insert(conn: &Connection, r: &Record) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO payments (order_id, reference, amount, currency, payment_method, state,
                               decline_reason, created_at_ms, updated_at_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            r.order.to_string(),
            r.reference,
            r.amount.0,
            r.currency,
            r.payment_method,
            state_name(r.state),
            r.decline_reason,
            r.created_at_ms,
            r.updated_at_ms,
        ],
    )?;
    Ok(())
}

pub fn set_state(conn: &Connection, order: OrderId, to: ProviderState) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE payments SET state = ?2, updated_at_ms = ?3 WHERE order_id = ?1",
        params![order.to_string(), state_name(to), now_ms()],
    )?;
    Ok(())
}

fn from_row(row: &Row<'_>) -> rusqlite::Result<Record> {
    let order: String = row.get("order_id")?;
    let state: String = row.get("state")?;
    Ok(Record {
        order: order.parse().map_err(|e| bad_column(0, e))?,
        reference: row.get("reference")?,
        amount: Money(row.get("amount")?),
        currency: row.get("currency")?,
        payment_method: row.get("payment_method")?,
        state: parse_state(&state).ok_or_else(|| bad_column(5, UnknownState(state)))?,
        decline_reason: row.get("decline_reason")?,
        created_at_ms: row.get("created_at_ms")?,
        updated_at_ms: row.get("updated_at_ms")?,
    })
}

#[derive(Debug, thiserror::Error)]
#[error("unknown payment state {0:?}")]
struct UnknownState(String);

/// A row the schema let through but this code cannot read: a corrupted or foreign file.
fn bad_column(idx: usize, e: impl std::error::Error + Send + Sync + 'static) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_opened_in_wal_mode_with_normal_sync() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open_file(&dir.path().join("p.sqlite")).unwrap();
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        let sync: i64 = conn
            .pragma_query_value(None, "synchronous", |r| r.get(0))
            .unwrap();
        assert_eq!((mode.as_str(), sync), ("wal", 1));
    }
}

/// One refund of part of a payment, as the provider's book keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartialRefund {
    pub key: String,
    pub order: OrderId,
    pub amount: Money,
}

/// Every partial refund, oldest first.
pub fn partial_refunds(conn: &Connection) -> rusqlite::Result<Vec<PartialRefund>> {
    let mut stmt =
        conn.prepare("SELECT key, order_id, amount FROM partial_refunds ORDER BY rowid")?;
    let rows = stmt.query_map([], |r| {
        let order: String = r.get(1)?;
        Ok(PartialRefund {
            key: r.get(0)?,
            order: order.parse().map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(1, Type::Text, Box::new(e))
            })?,
            amount: Money(r.get(2)?),
        })
    })?;
    rows.collect()
}

/// What was refunded of the order's payment in parts so far.
pub fn refunded_in_parts(conn: &Connection, order: OrderId) -> rusqlite::Result<Money> {
    conn.query_row(
        "SELECT COALESCE(SUM(amount), 0) FROM partial_refunds WHERE order_id = ?1",
        params![order.to_string()],
        |r| r.get(0).map(Money),
    )
}

/// Records a partial refund; `false` when the key was used before (nothing written).
pub fn insert_partial_refund(
    conn: &Connection,
    key: &str,
    order: OrderId,
    amount: Money,
) -> rusqlite::Result<bool> {
    let n = conn.execute(
        "INSERT INTO partial_refunds (key, order_id, amount, created_at_ms) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (key) DO NOTHING",
        params![key, order.to_string(), amount.0, now_ms()],
    )?;
    Ok(n == 1)
}
