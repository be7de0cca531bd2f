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

/// Page cache of a reader's or the checkpointer's connection, in KiB.
pub(crate) const CACHE_KIB: u32 = 1024;

/// Page cache of the writer's connection, in KiB. Small on purpose: when a b-tree
/// balance swaps two new pages' numbers it parks one under the lock-byte page's number
/// (262,145 with 4 KiB pages, far past the end of the file), and at COMMIT SQLite then
/// drops the cached pages past the end by walking the writer's whole cache, page by
/// page. With 64 MiB caches (16,700 pages in the writer's) that walk was 7-12 % of a
/// stadium rehearsal's server CPU, on the writer's thread; with these sizes, 2 %, and
/// the writer was busy a tenth less (docs/BENCHMARKS.md). Pages it no longer keeps come
/// back from the OS's page cache or the (short) log. The bound holds because this
/// SQLite build (`SQLITE_ENABLE_MEMORY_MANAGEMENT`) keeps every connection's pages in
/// one group whose limit is the sum of the connections' sizes.
pub(crate) const WRITER_CACHE_KIB: u32 = 8 * 1024;

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
    // A small page cache (1 MiB): a reader's is emptied by every read that follows a
    // write anyway, and this SQLite build pools every connection's cache into one group
    // whose limit is the sum of theirs, which is what bounds the writer's (see
    // `WRITER_CACHE_KIB`).
    conn.execute_batch(&format!(
        "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -{CACHE_KIB};"
    ))
    .map_err(db)?;
    // The commit path prepares the same handful of statements for every operation.
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}
