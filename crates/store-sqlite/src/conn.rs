//! Opening connections with the settings every ledger connection needs, and the one
//! place rusqlite errors become the port's `StoreError`.

use std::path::Path;
use std::time::Duration;

use boxoffice_engine::ports::StoreError;
use rusqlite::{Connection, OpenFlags};

/// A rusqlite failure as the port sees it: the store itself failed.
pub(crate) fn db(e: rusqlite::Error) -> StoreError {
    StoreError::new(format_args!("sqlite: {e}"))
}

/// A row the ledger wrote but cannot read back: corruption or a schema mismatch.
pub(crate) fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::new(format_args!("sqlite: unreadable {what}: {e}"))
}

/// Opens a connection in WAL mode with durable commits. `synchronous=FULL` makes every
/// COMMIT wait for fsync: a sale reported to a buyer survives a power cut (P5).
pub(crate) fn open(path: &Path, busy_timeout: Duration) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(db)?;
    conn.busy_timeout(busy_timeout).map_err(db)?;
    // journal_mode answers with a row, so it is read rather than executed.
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(db)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::new(format_args!(
            "sqlite: WAL mode refused (got {mode})"
        )));
    }
    // A 64 MiB page cache keeps the hot b-tree pages of an on-sale in memory rather
    // than re-reading them from the OS for every batch.
    conn.execute_batch(
        "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -65536;",
    )
    .map_err(db)?;
    // The commit path prepares the same handful of statements for every operation.
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}
