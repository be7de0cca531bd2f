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
//!
//! A PASSIVE checkpoint never starts the log again: SQLite writes from the log's first
//! frame again only when a write transaction begins with every frame already copied,
//! which a writer that commits every few milliseconds never does. Left alone, the log
//! grows for as long as the sale runs (2.5 GB in two short rehearsals), each frame is
//! appended past the end of the file (the file system zeroes every new block first: 7 %
//! of the server's CPU in a stadium rehearsal) and each reader's page lookup searches a
//! longer log index. So the checkpointer reports the log's length, and once it reaches
//! `wal_restart_frames` the writer, between two batches, runs a RESTART checkpoint on
//! its own connection (`restart`): it copies the few frames the checkpointer has not,
//! waits a moment for readers still on older snapshots, and the next batch writes from
//! the first frame again, over blocks the file already has.

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

/// How long the writer's RESTART checkpoint waits for readers on older snapshots before
/// it gives up until the next report: the writer's batches wait behind it.
const RESTART_WAIT: Duration = Duration::from_millis(20);

/// What the checkpointer tells the writer: frames in the log at its last checkpoint
/// (0: none reported since the writer last tried to start the log again).
pub(crate) type LogLength = AtomicU64;

/// Starts the checkpointer on its own connection to `path`; it stops when `stop`'s
/// sender is dropped (the writer stopped). Counts the checkpoints it ran in `done` and
/// reports the log's length in `log`.
pub(crate) fn spawn(
    path: &Path,
    busy_timeout: Duration,
    stop: Receiver<()>,
    done: Arc<AtomicU64>,
    log: Arc<LogLength>,
) -> Result<(), StoreError> {
    let conn = conn::open(path, busy_timeout)?;
    std::thread::Builder::new()
        .name("ledger-checkpoint".into())
        .spawn(move || run(&conn, &stop, &done, &log))
        .map_err(StoreError::new)?;
    Ok(())
}

/// On the writer's connection, between batches: copies the rest of the log into the
/// database and, once no reader needs the log, lets the next batch write from its first
/// frame. Waits at most `RESTART_WAIT` for readers; returns whether the log was copied
/// whole (false: busy, tried again at the checkpointer's next report).
pub(crate) fn restart(conn: &Connection, busy_timeout: Duration) -> bool {
    let started = std::time::Instant::now();
    if conn.busy_timeout(RESTART_WAIT).is_err() {
        return false;
    }
    // (busy, frames in the log, frames copied)
    let ran = conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, i64>(2)?,
        ))
    });
    if let Err(e) = conn.busy_timeout(busy_timeout) {
        tracing::warn!(error = %e, "sqlite: the writer's busy timeout was not put back");
    }
    let whole = matches!(ran, Ok((0, log, copied)) if log == copied);
    if whole {
        metrics::histogram!("boxoffice_ledger_wal_restart_seconds")
            .record(started.elapsed().as_secs_f64());
    }
    whole
}

fn run(conn: &Connection, stop: &Receiver<()>, done: &AtomicU64, log: &LogLength) {
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
            Ok((_, frames)) => {
                log.store(frames.max(0) as u64, Ordering::Relaxed);
                done.fetch_add(1, Ordering::Relaxed);
                metrics::histogram!("boxoffice_ledger_checkpoint_seconds")
                    .record(started.elapsed().as_secs_f64());
            }
            Err(e) => tracing::warn!(error = %e, "sqlite: checkpoint failed; retried"),
        }
    }
}
