//! Schema migrations, embedded in the binary so `boxoffice serve` and `boxoffice
//! migrate` need no files beside them. Applied versions are recorded in
//! `schema_migrations`; each migration runs in its own immediate transaction so two
//! processes migrating at once cannot both apply it.

use std::path::Path;

use boxoffice_engine::ports::StoreError;
use rusqlite::{Connection, OptionalExtension, params};

use crate::conn::{self, db};
use crate::options::SqliteOptions;

/// (version, name, SQL), in the order they must run.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "ledger",
        include_str!("../../../migrations/sqlite/0001_ledger.sql"),
    ),
    (
        2,
        "idempotency_holders",
        include_str!("../../../migrations/sqlite/0002_idempotency_holders.sql"),
    ),
    (
        3,
        "order_retry_schedule",
        include_str!("../../../migrations/sqlite/0003_order_retry_schedule.sql"),
    ),
    (
        4,
        "tickets",
        include_str!("../../../migrations/sqlite/0004_tickets.sql"),
    ),
    (
        5,
        "event_cancellations",
        include_str!("../../../migrations/sqlite/0005_event_cancellations.sql"),
    ),
    (
        6,
        "order_events_out",
        include_str!("../../../migrations/sqlite/0006_order_events_out.sql"),
    ),
    (
        7,
        "ticket_transfers",
        include_str!("../../../migrations/sqlite/0007_ticket_transfers.sql"),
    ),
    (
        8,
        "processed_webhooks",
        include_str!("../../../migrations/sqlite/0008_processed_webhooks.sql"),
    ),
    (
        9,
        "fairness_journal",
        include_str!("../../../migrations/sqlite/0009_fairness_journal.sql"),
    ),
    (
        10,
        "attendee_names",
        include_str!("../../../migrations/sqlite/0010_attendee_names.sql"),
    ),
    (
        11,
        "exchange",
        include_str!("../../../migrations/sqlite/0011_exchange.sql"),
    ),
    (
        12,
        "line_journal",
        include_str!("../../../migrations/sqlite/0012_line_journal.sql"),
    ),
    (
        13,
        "ticket_standing",
        include_str!("../../../migrations/sqlite/0013_ticket_standing.sql"),
    ),
    (
        14,
        "line_positions_unique",
        include_str!("../../../migrations/sqlite/0014_line_positions_unique.sql"),
    ),
    (
        15,
        "processed_webhooks_pruned",
        include_str!("../../../migrations/sqlite/0015_processed_webhooks_pruned.sql"),
    ),
    (
        16,
        "line_settings",
        include_str!("../../../migrations/sqlite/0016_line_settings.sql"),
    ),
    (
        17,
        "swaps_refunding_let_go",
        include_str!("../../../migrations/sqlite/0017_swaps_refunding_let_go.sql"),
    ),
];

/// Brings the database at `path` up to the newest schema (creating the file if need
/// be) and returns the versions it applied; empty when it was already current.
pub fn migrate(path: impl AsRef<Path>) -> Result<Vec<i64>, StoreError> {
    let conn = conn::open(path.as_ref(), SqliteOptions::default().busy_timeout())?;
    run(&conn)
}

pub(crate) fn run(conn: &Connection) -> Result<Vec<i64>, StoreError> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
    )
    .map_err(db)?;
    let mut applied = Vec::new();
    for &(version, name, sql) in MIGRATIONS {
        if apply_one(conn, version, name, sql)? {
            applied.push(version);
        }
    }
    Ok(applied)
}

fn apply_one(conn: &Connection, version: i64, name: &str, sql: &str) -> Result<bool, StoreError> {
    conn.execute_batch("BEGIN IMMEDIATE").map_err(db)?;
    let result = (|| -> rusqlite::Result<bool> {
        let done: Option<i64> = conn
            .query_row(
                "SELECT version FROM schema_migrations WHERE version = ?1",
                [version],
                |r| r.get(0),
            )
            .optional()?;
        if done.is_some() {
            return Ok(false);
        }
        conn.execute_batch(sql)?;
        conn.execute(
            "INSERT INTO schema_migrations (version, name, applied_at)
             VALUES (?1, ?2, CAST(unixepoch('subsec') * 1000 AS INTEGER))",
            params![version, name],
        )?;
        Ok(true)
    })();
    match result {
        Ok(applied) => conn.execute_batch("COMMIT").map(|()| applied).map_err(db),
        Err(e) => {
            // The migration failed; leave the database as it was before it.
            let _ = conn.execute_batch("ROLLBACK");
            Err(StoreError::new(format_args!(
                "sqlite: migration {version} ({name}) failed: {e}"
            )))
        }
    }
}
