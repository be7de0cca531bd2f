//! The writer. With group commit every write of the ledger is a job sent to one task
//! that owns the write connection. The task takes whatever is queued (up to
//! `max_batch`) and runs it in ONE transaction, so one COMMIT (one WAL flush) serves the
//! whole batch. Each job runs inside its own SAVEPOINT: a job that refuses (seat taken,
//! limit hit) or fails is rolled back alone and the rest of the batch still commits.
//! Callers are answered only after COMMIT returned, so nobody hears "sold" before it
//! is durable. Without group commit each job is its own transaction on the pool.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use boxoffice_engine::ports::StoreError;
use futures::FutureExt;
use futures::future::BoxFuture;
use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, PgPool, Postgres};
use tokio::sync::{mpsc, oneshot};

use crate::conn::db;

/// What a job decided: keep its writes, or undo them and still answer `T`.
pub(crate) enum Step<T> {
    Keep(T),
    Undo(T),
}

/// A job's body: runs on the transaction's connection.
pub(crate) type OpFuture<'c, T> = BoxFuture<'c, Result<Step<T>, StoreError>>;

type Reply = Box<dyn FnOnce(Result<(), StoreError>) + Send>;
type Job = Box<dyn Work>;

/// A queued write: run inside the batch transaction, or refused unrun.
trait Work: Send {
    /// Runs the job and says whether to keep its writes, with how to answer the caller
    /// once the fate of the transaction is known.
    fn run<'c>(self: Box<Self>, conn: &'c mut PgConnection) -> BoxFuture<'c, (bool, Reply)>;
    fn refuse(self: Box<Self>, error: StoreError);
}

struct Pending<T, F> {
    op: F,
    tx: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> Work for Pending<T, F>
where
    T: Send + 'static,
    F: for<'c> FnOnce(&'c mut PgConnection) -> OpFuture<'c, T> + Send + 'static,
{
    fn run<'c>(self: Box<Self>, conn: &'c mut PgConnection) -> BoxFuture<'c, (bool, Reply)> {
        let Pending { op, tx } = *self;
        Box::pin(async move {
            // A bug in one job must not take the writer task (and every later sale) down.
            let step = AssertUnwindSafe(op(conn)).catch_unwind().await;
            let (keep, out) = match step {
                Ok(Ok(Step::Keep(v))) => (true, Ok(v)),
                Ok(Ok(Step::Undo(v))) => (false, Ok(v)),
                Ok(Err(e)) => (false, Err(e)),
                Err(_) => (
                    false,
                    Err(StoreError::new("postgres: a ledger write panicked")),
                ),
            };
            let reply: Reply = Box::new(move |committed: Result<(), StoreError>| {
                // The caller may have gone away (request cancelled); nothing to tell.
                let _ = tx.send(committed.and(out));
            });
            (keep, reply)
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
}

#[derive(Clone)]
enum Mode {
    Group(mpsc::Sender<Job>),
    Single(PgPool),
}

#[derive(Clone)]
pub(crate) struct Writer {
    mode: Mode,
    pub(crate) stats: Arc<WriterStats>,
}

impl Writer {
    /// Starts the writer task over `write_pool` (one connection); it stops when the
    /// last `Writer` clone is dropped.
    pub(crate) fn group(write_pool: PgPool, max_batch: usize, capacity: usize) -> Self {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let stats = Arc::new(WriterStats::default());
        tokio::spawn(run(write_pool, rx, max_batch.max(1), stats.clone()));
        Writer {
            mode: Mode::Group(tx),
            stats,
        }
    }

    /// No writer task: every write is its own transaction on `pool`.
    pub(crate) fn single(pool: PgPool) -> Self {
        Writer {
            mode: Mode::Single(pool),
            stats: Arc::default(),
        }
    }

    /// Runs `op` and returns its answer once its transaction committed.
    pub(crate) async fn submit<T, F>(&self, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut PgConnection) -> OpFuture<'c, T> + Send + 'static,
    {
        match &self.mode {
            Mode::Single(pool) => {
                self.stats.transactions.fetch_add(1, Ordering::Relaxed);
                self.stats.jobs.fetch_add(1, Ordering::Relaxed);
                alone(pool, op).await
            }
            Mode::Group(queue) => {
                let (tx, rx) = oneshot::channel();
                let stopped = || StoreError::new("postgres: ledger writer stopped");
                queue
                    .send(Box::new(Pending { op, tx }))
                    .await
                    .map_err(|_| stopped())?;
                rx.await.map_err(|_| stopped())?
            }
        }
    }
}

/// One transaction for one job (group commit off).
async fn alone<T, F>(pool: &PgPool, op: F) -> Result<T, StoreError>
where
    F: for<'c> FnOnce(&'c mut PgConnection) -> OpFuture<'c, T>,
{
    let mut tx = pool.begin().await.map_err(db)?;
    match op(&mut tx).await? {
        Step::Keep(v) => tx.commit().await.map(|()| v).map_err(db),
        Step::Undo(v) => tx.rollback().await.map(|()| v).map_err(db),
    }
}

async fn run(pool: PgPool, mut rx: mpsc::Receiver<Job>, limit: usize, stats: Arc<WriterStats>) {
    let mut batch = VecDeque::with_capacity(limit);
    while let Some(first) = rx.recv().await {
        batch.push_back(first);
        while batch.len() < limit {
            match rx.try_recv() {
                Ok(job) => batch.push_back(job),
                Err(_) => break,
            }
        }
        stats.jobs.fetch_add(batch.len() as u64, Ordering::Relaxed);
        // A broken connection ends its batch early; the jobs it never ran get one more
        // try on a fresh connection (the pool reconnects) before they are refused.
        for attempt in 0..2 {
            if batch.is_empty() {
                break;
            }
            stats.transactions.fetch_add(1, Ordering::Relaxed);
            if let Err(e) = run_batch(&pool, &mut batch).await
                && attempt == 1
            {
                batch.drain(..).for_each(|job| job.refuse(e.clone()));
            }
        }
    }
    pool.close().await;
}

/// What must be sent before the next job may run.
enum Boundary {
    /// No transaction yet.
    Begin,
    /// The last job kept its writes: fold them into the transaction, open a new savepoint.
    Release,
    /// The savepoint is open and empty (the last job was rolled back to it).
    Ready,
}

/// Runs jobs from the front of `batch` in one transaction. Err means the connection
/// or transaction broke: every job run so far has been answered with the error and
/// the jobs left in `batch` never ran.
async fn run_batch(pool: &PgPool, batch: &mut VecDeque<Job>) -> Result<(), StoreError> {
    let mut conn = pool.acquire().await.map_err(db)?;
    let mut replies: Vec<Reply> = Vec::with_capacity(batch.len());
    let mut boundary = Boundary::Begin;
    while let Some(job) = batch.pop_front() {
        // Boundaries go as one simple-protocol message each: one round trip per job.
        let sql = match boundary {
            Boundary::Begin => Some("BEGIN; SAVEPOINT op"),
            Boundary::Release => Some("RELEASE SAVEPOINT op; SAVEPOINT op"),
            Boundary::Ready => None,
        };
        if let Some(sql) = sql
            && let Err(e) = sqlx::raw_sql(sql).execute(&mut *conn).await
        {
            batch.push_front(job);
            return Err(broken(conn, replies, db(e)).await);
        }
        let (keep, reply) = job.run(&mut conn).await;
        replies.push(reply);
        boundary = if keep {
            Boundary::Release
        } else {
            match sqlx::raw_sql("ROLLBACK TO SAVEPOINT op")
                .execute(&mut *conn)
                .await
            {
                Ok(_) => Boundary::Ready,
                Err(e) => return Err(broken(conn, replies, db(e)).await),
            }
        };
    }
    if matches!(boundary, Boundary::Begin) {
        return Ok(());
    }
    match sqlx::raw_sql("COMMIT").execute(&mut *conn).await {
        Ok(_) => {
            replies.into_iter().for_each(|reply| reply(Ok(())));
            Ok(())
        }
        // The outcome is unknown (the COMMIT may have landed before the connection
        // dropped): callers hear "unavailable" and the recovery sweep reads the truth.
        Err(e) => Err(broken(conn, replies, db(e)).await),
    }
}

/// Gives up on the transaction: answers what ran with `error`, and makes sure the
/// connection is never reused in an unknown state.
async fn broken(
    mut conn: PoolConnection<Postgres>,
    replies: Vec<Reply>,
    error: StoreError,
) -> StoreError {
    replies
        .into_iter()
        .for_each(|reply| reply(Err(error.clone())));
    let _ = sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await;
    conn.close_on_drop();
    error
}
