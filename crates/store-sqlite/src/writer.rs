//! The single writer. Every write of the ledger is a job sent to one thread that owns
//! the write connection. The thread takes whatever is queued (up to `max_batch`) and
//! runs it in ONE transaction, so one fsync serves the whole batch (group commit).
//! Each job runs inside its own SAVEPOINT: a job that refuses (seat taken, limit hit)
//! or fails is rolled back alone and the rest of the batch still commits. Callers are
//! answered only after COMMIT returned, so nobody hears "sold" before it is durable.
//!
//! Metrics: `boxoffice_ledger_write_seconds`, from a write's submission to its answer
//! (its wait in the queue, its batch and the batch's COMMIT), and
//! `boxoffice_ledger_batch_seconds`, one batch from BEGIN to COMMIT. A request slower
//! than its ledger writes waited elsewhere (see the server's wake probe).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use boxoffice_engine::ports::StoreError;
use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use crate::conn::db;
use crate::options::SqliteOptions;

/// What a job decided: keep its writes, or undo them and still answer `T`.
pub(crate) enum Step<T> {
    Keep(T),
    Undo(T),
}

/// A queued write: run inside the batch transaction, or refused unrun.
trait Work: Send {
    /// Runs in its savepoint and hands back how to answer the caller once the fate of
    /// the transaction is known.
    fn run(self: Box<Self>, conn: &Connection) -> Reply;
    fn refuse(self: Box<Self>, error: StoreError);
}

type Job = Box<dyn Work>;
type Reply = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

struct Pending<T, F> {
    op: F,
    tx: oneshot::Sender<Result<T, StoreError>>,
    queued: Instant,
}

impl<T, F> Work for Pending<T, F>
where
    T: Send + 'static,
    F: FnOnce(&Connection) -> Result<Step<T>, StoreError> + Send + 'static,
{
    fn run(self: Box<Self>, conn: &Connection) -> Reply {
        let Pending { op, tx, queued } = *self;
        let out = in_savepoint(conn, op);
        Box::new(move |committed: Result<(), StoreError>| {
            metrics::histogram!("boxoffice_ledger_write_seconds")
                .record(queued.elapsed().as_secs_f64());
            // The caller may have gone away (request cancelled); nothing to tell.
            let _ = tx.send(committed.and(out));
        })
    }

    fn refuse(self: Box<Self>, error: StoreError) {
        let _ = self.tx.send(Err(error));
    }
}

/// Counters for benchmarks and tests: how well writes are being grouped.
#[derive(Debug, Default)]
pub struct WriterStats {
    pub transactions: AtomicU64,
    pub jobs: AtomicU64,
    /// Checkpoints run by the checkpointer (`checkpoint`), off the writer's thread.
    pub checkpoints: Arc<AtomicU64>,
}

#[derive(Clone)]
pub(crate) struct Writer {
    tx: mpsc::Sender<Job>,
    pub(crate) stats: Arc<WriterStats>,
}

impl Writer {
    /// Starts the writer thread, and the checkpointer on a connection of its own to
    /// `path` (the writer's connection never checkpoints: see `checkpoint`); both stop
    /// when the last `Writer` clone is dropped.
    pub(crate) fn spawn(
        conn: Connection,
        path: &Path,
        options: &SqliteOptions,
    ) -> Result<Self, StoreError> {
        conn.execute_batch("PRAGMA wal_autocheckpoint = 0")
            .map_err(db)?;
        let (tx, rx) = mpsc::channel(options.queue_capacity.max(1));
        let stats = Arc::new(WriterStats::default());
        let limit = if options.group_commit {
            options.max_batch.max(1)
        } else {
            1
        };
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        crate::checkpoint::spawn(
            path,
            options.busy_timeout(),
            stopped,
            stats.checkpoints.clone(),
        )?;
        let thread_stats = stats.clone();
        std::thread::Builder::new()
            .name("ledger-writer".into())
            .spawn(move || {
                run(conn, rx, limit, &thread_stats);
                drop(stop);
            })
            .map_err(StoreError::new)?;
        Ok(Writer { tx, stats })
    }

    /// Runs `op` in the next batch and returns its answer once the batch committed.
    pub(crate) async fn submit<T, F>(&self, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<Step<T>, StoreError> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(Pending {
            op,
            tx,
            queued: Instant::now(),
        });
        let stopped = || StoreError::new("sqlite: ledger writer stopped");
        self.tx.send(job).await.map_err(|_| stopped())?;
        rx.await.map_err(|_| stopped())?
    }
}

pub(crate) fn in_savepoint<T>(
    conn: &Connection,
    op: impl FnOnce(&Connection) -> Result<Step<T>, StoreError>,
) -> Result<T, StoreError> {
    run_cached(conn, "SAVEPOINT op")?;
    // A bug in one job must not take the writer thread (and every later sale) down.
    let step = catch_unwind(AssertUnwindSafe(|| op(conn)))
        .unwrap_or_else(|_| Err(StoreError::new("sqlite: a ledger write panicked")));
    match step {
        Ok(Step::Keep(value)) => run_cached(conn, "RELEASE op").map(|()| value),
        Ok(Step::Undo(value)) => undo(conn).map(|()| value),
        Err(e) => {
            let _ = undo(conn);
            Err(e)
        }
    }
}

fn undo(conn: &Connection) -> Result<(), StoreError> {
    run_cached(conn, "ROLLBACK TO op")?;
    run_cached(conn, "RELEASE op")
}

/// Savepoint statements run twice per write; parsing them once saves the commit path
/// a few microseconds each time.
fn run_cached(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute([]))
        .map(drop)
        .map_err(db)
}

fn run(conn: Connection, mut rx: mpsc::Receiver<Job>, limit: usize, stats: &WriterStats) {
    let mut batch = Vec::with_capacity(limit);
    while let Some(first) = rx.blocking_recv() {
        batch.push(first);
        while batch.len() < limit {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        stats.jobs.fetch_add(batch.len() as u64, Ordering::Relaxed);
        let started = Instant::now();
        run_batch(&conn, batch.drain(..), stats);
        metrics::histogram!("boxoffice_ledger_batch_seconds")
            .record(started.elapsed().as_secs_f64());
    }
}

fn run_batch(conn: &Connection, jobs: impl Iterator<Item = Job>, stats: &WriterStats) {
    let mut replies: Vec<Reply> = Vec::new();
    let mut open = false;
    for job in jobs {
        if !open {
            if let Err(e) = begin(conn, stats) {
                // The job never ran; tell its caller the store is unavailable.
                job.refuse(e);
                continue;
            }
            open = true;
        }
        replies.push(job.run(conn));
        if conn.is_autocommit() {
            // SQLite rolled the whole transaction back (disk full, I/O error): the
            // jobs run so far are lost; the next job starts a fresh transaction.
            answer(
                replies.drain(..),
                Err(StoreError::new(
                    "sqlite: transaction rolled back by the database",
                )),
            );
            open = false;
        }
    }
    if open {
        let committed = conn.execute_batch("COMMIT").map_err(db);
        if committed.is_err() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        answer(replies.drain(..), committed);
    }
}

fn begin(conn: &Connection, stats: &WriterStats) -> Result<(), StoreError> {
    stats.transactions.fetch_add(1, Ordering::Relaxed);
    // IMMEDIATE takes the write lock now, so no statement in the batch can hit BUSY.
    conn.execute_batch("BEGIN IMMEDIATE").map_err(db)
}

fn answer(replies: impl Iterator<Item = Reply>, outcome: Result<(), StoreError>) {
    for reply in replies {
        reply(outcome.clone());
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::checkpoint::PERIOD;

    fn writer(dir: &tempfile::TempDir) -> Writer {
        let path = dir.path().join("ledger.db");
        let options = SqliteOptions::default();
        let conn = crate::conn::open(&path, options.busy_timeout()).unwrap();
        conn.execute_batch("CREATE TABLE t (n INTEGER)").unwrap();
        Writer::spawn(conn, &path, &options).unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_writer_never_checkpoints_and_the_checkpointer_does_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let w = writer(&dir);
        // The writer's own connection: no checkpoint in any COMMIT of its batches.
        let auto: i64 = w
            .submit(|c| {
                let n = c.query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0));
                n.map(Step::Keep).map_err(db)
            })
            .await
            .unwrap();
        assert_eq!(
            auto, 0,
            "the writer's connection checkpoints every {auto} pages"
        );
        for n in 0..200 {
            let write = move |c: &Connection| {
                let done = c.execute("INSERT INTO t (n) VALUES (?1)", [n]);
                done.map(|_| Step::Keep(())).map_err(db)
            };
            w.submit(write).await.unwrap();
        }
        // The checkpointer copies the log beside it, period after period.
        let checkpoints = w.stats.checkpoints.clone();
        let deadline = Instant::now() + Duration::from_secs(10);
        while checkpoints.load(Ordering::Relaxed) < 2 {
            assert!(Instant::now() < deadline, "no checkpoint within 10 s");
            tokio::time::sleep(PERIOD / 4).await;
        }
        // And stops with the writer.
        drop(w);
        tokio::time::sleep(PERIOD * 2).await;
        let after_stop = checkpoints.load(Ordering::Relaxed);
        tokio::time::sleep(PERIOD * 5).await;
        assert_eq!(
            checkpoints.load(Ordering::Relaxed),
            after_stop,
            "still checkpointing"
        );
    }
}
