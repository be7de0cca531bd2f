//! The single writer. Every write of the ledger is a job sent to one thread that owns
//! the write connection. The thread takes whatever is queued (up to `max_batch`) and
//! runs it in ONE transaction, so one fsync serves the whole batch (group commit).
//! Each job runs inside its own SAVEPOINT: a job that refuses (seat taken, limit hit)
//! or fails is rolled back alone and the rest of the batch still commits. Callers are
//! answered only after COMMIT returned, so nobody hears "sold" before it is durable.
//!
//! Metrics: `boxoffice_ledger_write_seconds`, from a write's submission to its answer
//! (its wait in the queue, its batch and the batch's COMMIT), and
//! `boxoffice_ledger_batch_seconds`, one batch from BEGIN to COMMIT, and
//! `boxoffice_ledger_wal_restart_seconds`, each time the writer started the log again
//! between batches (`checkpoint`). A request slower
//! than its ledger writes waited elsewhere (see the server's wake probe).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use boxoffice_engine::ports::StoreError;
use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use crate::checkpoint::LogLength;
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
    /// Times the writer copied the whole log and started it again (`checkpoint::restart`).
    pub log_restarts: AtomicU64,
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
        conn.execute_batch(&format!(
            "PRAGMA cache_size = -{}",
            crate::conn::WRITER_CACHE_KIB
        ))
        .map_err(db)?;
        let (tx, rx) = mpsc::channel(options.queue_capacity.max(1));
        let stats = Arc::new(WriterStats::default());
        let limit = if options.group_commit {
            options.max_batch.max(1)
        } else {
            1
        };
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let log = Arc::new(LogLength::default());
        crate::checkpoint::spawn(
            path,
            options.busy_timeout(),
            stopped,
            stats.checkpoints.clone(),
            log.clone(),
        )?;
        let thread_stats = stats.clone();
        let restart = Restart {
            log,
            at_frames: options.wal_restart_frames.max(1),
            busy_timeout: options.busy_timeout(),
        };
        let priority = options.writer_priority;
        std::thread::Builder::new()
            .name("ledger-writer".into())
            .spawn(move || {
                run_ahead(priority);
                run(conn, rx, limit, &thread_stats, &restart);
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

/// Asks the kernel to run the calling thread `steps` nice values ahead of the process
/// (`SqliteOptions::writer_priority`); says once why when it may not.
fn run_ahead(steps: i32) {
    if steps <= 0 {
        return;
    }
    match raise_this_thread(steps) {
        Ok(nice) => tracing::debug!(nice, "the ledger writer runs ahead of the request threads"),
        Err(e) => tracing::info!(
            error = %e,
            "the ledger writer runs at the process's priority: raising a thread needs \
             CAP_SYS_NICE or an RLIMIT_NICE that allows it (sqlite.writer_priority)"
        ),
    }
}

/// The calling thread's nice value lowered by `steps` (Linux schedules threads, and
/// PRIO_PROCESS with a thread id names one): the new value.
#[cfg(target_os = "linux")]
fn raise_this_thread(steps: i32) -> std::io::Result<i32> {
    // SAFETY: gettid has no preconditions; getpriority and setpriority take plain
    // integers naming this thread and touch no memory of ours.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        // getpriority answers -1 both for nice -1 and for an error: errno tells.
        *libc::__errno_location() = 0;
        let now = libc::getpriority(libc::PRIO_PROCESS, tid);
        if now == -1 && *libc::__errno_location() != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let wanted = (now - steps).max(-20);
        if libc::setpriority(libc::PRIO_PROCESS, tid, wanted) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(wanted)
    }
}

#[cfg(not(target_os = "linux"))]
fn raise_this_thread(_: i32) -> std::io::Result<i32> {
    Err(std::io::Error::other(
        "threads have no priority of their own here",
    ))
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

/// When the writer starts the log again: the checkpointer's last report of its length,
/// and the length at which it does.
struct Restart {
    log: Arc<LogLength>,
    at_frames: u64,
    busy_timeout: std::time::Duration,
}

impl Restart {
    /// Between batches: once the log has reached its length, copy it whole and start it
    /// again. Tried once per report, so a busy attempt waits for the next.
    fn between_batches(&self, conn: &Connection, stats: &WriterStats) {
        if self.log.load(Ordering::Relaxed) < self.at_frames {
            return;
        }
        self.log.store(0, Ordering::Relaxed);
        if crate::checkpoint::restart(conn, self.busy_timeout) {
            stats.log_restarts.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn run(
    conn: Connection,
    mut rx: mpsc::Receiver<Job>,
    limit: usize,
    stats: &WriterStats,
    restart: &Restart,
) {
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
        restart.between_batches(&conn, stats);
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

    /// The nice value of the thread with id `tid` of this process, from /proc.
    #[cfg(target_os = "linux")]
    fn nice_of(tid: i32) -> i64 {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
        // Fields after the command's closing parenthesis; nice is the 19th field.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        rest.split(' ').nth(16).unwrap().parse().unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_writer_thread_runs_ahead_of_the_others_where_the_process_may_raise_it() {
        // SAFETY: geteuid and gettid have no preconditions.
        let (root, me) = unsafe { (libc::geteuid() == 0, libc::gettid()) };
        let mine = nice_of(me);
        let (raised, before, after) = std::thread::spawn(|| {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            let before = nice_of(tid);
            let raised = raise_this_thread(3);
            (raised, before, nice_of(tid))
        })
        .join()
        .unwrap();
        match raised {
            Ok(nice) => {
                assert_eq!(i64::from(nice), (before - 3).max(-20));
                assert_eq!(after, i64::from(nice), "the kernel keeps the new value");
            }
            // Only a process without the right may be refused, and then nothing moved.
            Err(e) => {
                assert!(!root, "root was refused a higher priority: {e}");
                assert_eq!(after, before);
            }
        }
        assert_eq!(nice_of(me), mine, "the other threads keep their priority");
    }

    fn writer(dir: &tempfile::TempDir) -> Writer {
        writer_with(dir, &SqliteOptions::default())
    }

    fn writer_with(dir: &tempfile::TempDir, options: &SqliteOptions) -> Writer {
        let path = dir.path().join("ledger.db");
        let conn = crate::conn::open(&path, options.busy_timeout()).unwrap();
        conn.execute_batch("CREATE TABLE t (n INTEGER, pad BLOB)")
            .unwrap();
        Writer::spawn(conn, &path, options).unwrap()
    }

    /// Frames in the log of the database at `path`, read on a connection of its own
    /// (`None` while another checkpoint runs).
    fn log_frames(path: &Path) -> Option<i64> {
        let c = crate::conn::open(path, Duration::from_secs(5)).unwrap();
        // (busy, frames in the log, frames copied); PASSIVE never starts the log again.
        let frames: i64 = c
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(1))
            .unwrap();
        (frames >= 0).then_some(frames)
    }

    /// Writes that never stop, with a reader reading beside them all along: the writer
    /// starts the log again from its first frame (a PASSIVE checkpoint alone never
    /// does), so the log's length falls back again and again instead of growing for
    /// as long as the writes go on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_starts_again_instead_of_growing_while_writes_never_stop() {
        let dir = tempfile::tempdir().unwrap();
        let options = SqliteOptions {
            wal_restart_frames: 32,
            ..SqliteOptions::default()
        };
        let w = writer_with(&dir, &options);
        let path = dir.path().join("ledger.db");
        let reading = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let reader = {
            let (reading, path) = (reading.clone(), path.clone());
            std::thread::spawn(move || {
                let conn = crate::conn::open(&path, Duration::from_secs(5)).unwrap();
                let mut reads = 0u64;
                // Short reads, as the ledger's are: the newest row by its key. (A read
                // that scans the growing table holds its snapshot longer than the
                // restart waits, and no checkpoint copies past a snapshot in use.)
                while reading.load(Ordering::Relaxed) {
                    let newest =
                        conn.query_row("SELECT n FROM t ORDER BY rowid DESC LIMIT 1", [], |r| {
                            r.get::<_, i64>(0)
                        });
                    assert!(matches!(
                        newest,
                        Ok(_) | Err(rusqlite::Error::QueryReturnedNoRows)
                    ));
                    reads += 1;
                }
                reads
            })
        };
        // Writers enough that a batch is always waiting when the last one commits.
        let writing = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let writers: Vec<_> = (0..32)
            .map(|_| {
                let (w, writing) = (w.clone(), writing.clone());
                tokio::spawn(async move {
                    let mut writes = 0u64;
                    while writing.load(Ordering::Relaxed) {
                        let write = |c: &Connection| {
                            let done =
                                c.execute("INSERT INTO t (n, pad) VALUES (1, zeroblob(3000))", []);
                            done.map(|_| Step::Keep(())).map_err(db)
                        };
                        w.submit(write).await.unwrap();
                        writes += 1;
                    }
                    writes
                })
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(30);
        let (mut longest, mut fell_back, mut last) = (0i64, 0u32, 0i64);
        while fell_back < 3 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
            if let Some(now) = tokio::task::block_in_place(|| log_frames(&path)) {
                fell_back += u32::from(now < last);
                (last, longest) = (now, longest.max(now));
            }
        }
        writing.store(false, Ordering::Relaxed);
        let mut writes = 0;
        for writer in writers {
            writes += writer.await.unwrap();
        }
        reading.store(false, Ordering::Relaxed);
        let reads = reader.join().unwrap();
        let restarts = w.stats.log_restarts.load(Ordering::Relaxed);
        let file = std::fs::metadata(dir.path().join("ledger.db-wal"))
            .unwrap()
            .len();
        eprintln!(
            "{writes} writes, {reads} reads: the log fell back {fell_back} times \
             ({restarts} restarts), {longest} frames at most, its file {file} bytes"
        );
        assert!(
            fell_back >= 3,
            "the log fell back {fell_back} times in 30 s of writes ({longest} frames at most)"
        );
        assert!(restarts >= 1, "{restarts} restarts counted");
    }

    /// A pragma's value on the writer's own connection.
    async fn pragma(w: &Writer, name: &'static str) -> i64 {
        w.submit(move |c| {
            let n = c.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0));
            n.map(Step::Keep).map_err(db)
        })
        .await
        .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_writer_never_checkpoints_and_the_checkpointer_does_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let w = writer(&dir);
        // The writer's own connection: no checkpoint in any COMMIT of its batches.
        let auto = pragma(&w, "wal_autocheckpoint").await;
        assert_eq!(
            auto, 0,
            "the writer's connection checkpoints every {auto} pages"
        );
        // Its page cache is the writer's small one (negative: KiB).
        let cache = pragma(&w, "cache_size").await;
        let kib = i64::from(crate::conn::WRITER_CACHE_KIB);
        assert_eq!(cache, -kib, "the writer's cache");
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
