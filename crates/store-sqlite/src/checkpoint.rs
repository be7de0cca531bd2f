//! Checkpoints off the commit path. SQLite's own automatic checkpoint runs inside the
//! COMMIT that crossed its threshold (1,000 pages of WAL), on the writer's thread: while
//! it copies pages into the database file and syncs it, every write queued behind that
//! batch waits (in a rehearsal's rush, an eighth of the writer's time, and its slowest
//! batches). The writer's connection has it off (`wal_autocheckpoint = 0`), and this
//! thread, with a connection of its own, runs a PASSIVE checkpoint every `PERIOD`: in
//! WAL mode a checkpoint runs beside the writer appending to the log, and PASSIVE never
//! waits for readers or the writer, so the writer's batches keep only their own work
//! and their own fsync. Durability is the commits': every COMMIT syncs the log
//! (`synchronous = FULL`), whenever its frames are copied.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use boxoffice_engine::ports::StoreError;
use rusqlite::Connection;

use crate::conn;

/// How often the log is copied into the database file.
pub(crate) const PERIOD: Duration = Duration::from_millis(200);

/// Starts the checkpointer on its own connection to `path`; it stops when `stop`'s
/// sender is dropped (the writer stopped). Counts the checkpoints it ran in `done`.
pub(crate) fn spawn(
    path: &Path,
    busy_timeout: Duration,
    stop: Receiver<()>,
    done: Arc<AtomicU64>,
) -> Result<(), StoreError> {
    let conn = conn::open(path, busy_timeout)?;
    std::thread::Builder::new()
        .name("ledger-checkpoint".into())
        .spawn(move || run(&conn, &stop, &done))
        .map_err(StoreError::new)?;
    Ok(())
}

fn run(conn: &Connection, stop: &Receiver<()>, done: &AtomicU64) {
    loop {
        match stop.recv_timeout(PERIOD) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
        let started = std::time::Instant::now();
        // (busy, frames in the log, frames copied); a failure is retried next period.
        let ran = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
        });
        match ran {
            Ok(_) => {
                done.fetch_add(1, Ordering::Relaxed);
                metrics::histogram!("boxoffice_ledger_checkpoint_seconds")
                    .record(started.elapsed().as_secs_f64());
            }
            Err(e) => tracing::warn!(error = %e, "sqlite: checkpoint failed; retried"),
        }
    }
}
