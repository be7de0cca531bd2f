//! The writer. With group commit every write of the ledger is a job queued for the
//! writer tasks (`batch`), each owning one write connection: whatever is queued shares
//! one transaction and one COMMIT (one WAL flush), each write undone alone if it is
//! refused, and callers are answered only after COMMIT. Without group commit each job
//! is its own transaction on the pool.
//!
//! A job whose statement loses a race with another transaction over the same rows
//! (deadlock, lock timeout, serialization failure: `conn::transient`) is undone and run
//! again, a few times at most, rather than failing a request that did nothing wrong.
//! The writes that run outside the batches (a ticket changing hands, a check-in, the
//! exchange's steps: `apart`) are run again the same way.
//!
//! Metrics, as the embedded ledger's writer has them: `boxoffice_ledger_write_seconds`,
//! a grouped write's submission to its answer (its wait in the queue, its batch and the
//! batch's COMMIT), and `boxoffice_ledger_batch_seconds`, one batch from its first job
//! to COMMIT.

mod batch;
mod job;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use boxoffice_engine::ports::{Commit, CommitOutcome, StoreError};
use sqlx::{PgConnection, PgPool};
use tokio::sync::{Mutex, mpsc, oneshot};

pub(crate) use job::{OpFuture, RowKey, Step};

use crate::commit::{self, Answer};
use crate::conn::{db, transient};
use job::{CommitJob, Job, OtherJob, Pending};

/// Counters for benchmarks and tests: how well writes are being grouped.
#[derive(Debug, Default)]
pub struct WriterStats {
    pub transactions: AtomicU64,
    pub jobs: AtomicU64,
    /// Writes run again after losing a race with another transaction.
    pub reruns: AtomicU64,
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
    /// Starts `writers` writer tasks over `write_pool` (one connection each); they stop
    /// when the last `Writer` clone is dropped.
    pub(crate) fn group(
        write_pool: PgPool,
        writers: usize,
        max_batch: usize,
        capacity: usize,
    ) -> Self {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let queue = Arc::new(Mutex::new(rx));
        let stats = Arc::new(WriterStats::default());
        for _ in 0..writers.max(1) {
            let (pool, queue, stats) = (write_pool.clone(), queue.clone(), stats.clone());
            tokio::spawn(batch::run(pool, queue, max_batch.max(1), stats));
        }
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

    /// Runs `op` and returns its answer once its transaction committed. `op` may run
    /// more than once (see the module's header); only the last run's writes stand.
    pub(crate) async fn submit<T, F>(&self, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c mut PgConnection) -> OpFuture<'c, T> + Send + 'static,
    {
        self.submit_job(None, op).await
    }

    /// `submit` for an `op` that locks the one row `row` of a table only such jobs
    /// write (see `RowKey`).
    pub(crate) async fn submit_row<T, F>(&self, row: RowKey, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c mut PgConnection) -> OpFuture<'c, T> + Send + 'static,
    {
        self.submit_job(Some(row), op).await
    }

    async fn submit_job<T, F>(&self, row: Option<RowKey>, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c mut PgConnection) -> OpFuture<'c, T> + Send + 'static,
    {
        match &self.mode {
            Mode::Single(pool) => {
                self.count_one();
                alone(pool, op, &self.stats).await
            }
            Mode::Group(queue) => {
                let (tx, rx) = oneshot::channel();
                let job = Job::Other(OtherJob {
                    work: Box::new(Pending { op, tx }),
                    row,
                    tries: 1,
                });
                let queued = Instant::now();
                enqueue(queue, job).await?;
                let answer = rx.await.map_err(|_| stopped())?;
                written(queued);
                answer
            }
        }
    }

    /// Commits an order (see `commit`) and returns the outcome once it is durable.
    pub(crate) async fn commit(&self, c: Commit) -> Result<CommitOutcome, StoreError> {
        match &self.mode {
            Mode::Single(pool) => {
                self.count_one();
                for _ in 0..MAX_TRIES {
                    let mut tx = pool.begin().await.map_err(db)?;
                    let answer = commit::commit_batch(&mut tx, [&c]).await?.pop();
                    // A refused commit was already undone inside the call; COMMIT is cheap.
                    tx.commit().await.map_err(db)?;
                    match answer {
                        Some(Answer::Done(out)) => return out,
                        Some(Answer::Retry) => continue,
                        None => {
                            return Err(StoreError::new(
                                "postgres: ledger_commit_batch answered nothing",
                            ));
                        }
                    }
                }
                Err(blocked())
            }
            Mode::Group(queue) => {
                let (tx, rx) = oneshot::channel();
                let job = CommitJob {
                    commit: c,
                    tx,
                    tries: 1,
                };
                let queued = Instant::now();
                enqueue(queue, Job::Commit(job)).await?;
                let answer = rx.await.map_err(|_| stopped())?;
                written(queued);
                answer
            }
        }
    }

    /// Runs `op` in a transaction of its own on `pool`, outside the batches, and runs
    /// it again from the start when it loses a race (counted in `reruns`), as the
    /// batches' jobs are. For the writes that lock rows in an order of their own (a
    /// ticket, then its seat and both buyers' counts) and are not held across a
    /// batch's COMMIT: the batches of every node take some of the same rows in other
    /// orders, and PostgreSQL ends such a deadlock by failing either side.
    pub(crate) async fn apart<T, F>(&self, pool: &PgPool, op: F) -> Result<T, StoreError>
    where
        F: for<'c> Fn(&'c mut PgConnection) -> OpFuture<'c, T>,
    {
        alone(pool, op, &self.stats).await
    }

    fn count_one(&self) {
        self.stats.transactions.fetch_add(1, Ordering::Relaxed);
        self.stats.jobs.fetch_add(1, Ordering::Relaxed);
    }
}

/// How often one write may run into held rows (a commit's `Answer::Retry`, another
/// job's lost race) before its caller hears a store error: a few times is a busy
/// moment, more is a stuck lock.
const MAX_TRIES: u32 = 5;

fn blocked() -> StoreError {
    StoreError::new("postgres: commit kept waiting for rows other transactions hold")
}

/// A job that lost its race `MAX_TRIES` times; the last loss says with what.
fn kept_losing(last: &StoreError) -> StoreError {
    StoreError::new(format_args!(
        "postgres: a write kept losing races with other transactions ({MAX_TRIES} tries): {last}"
    ))
}

/// A grouped write answered: `boxoffice_ledger_write_seconds` from its submission.
fn written(queued: Instant) {
    metrics::histogram!("boxoffice_ledger_write_seconds").record(queued.elapsed().as_secs_f64());
}

fn stopped() -> StoreError {
    StoreError::new("postgres: ledger writer stopped")
}

async fn enqueue(queue: &mpsc::Sender<Job>, job: Job) -> Result<(), StoreError> {
    queue.send(job).await.map_err(|_| stopped())
}

/// One transaction for one job (group commit off), run again from the start when it
/// loses a race with another transaction.
async fn alone<T, F>(pool: &PgPool, op: F, stats: &WriterStats) -> Result<T, StoreError>
where
    F: for<'c> Fn(&'c mut PgConnection) -> OpFuture<'c, T>,
{
    let mut tries = 1;
    loop {
        let mut tx = pool.begin().await.map_err(db)?;
        let run = op(&mut tx);
        match run.await {
            Ok(Step::Keep(v)) => return tx.commit().await.map(|()| v).map_err(db),
            Ok(Step::Undo(v)) => return tx.rollback().await.map(|()| v).map_err(db),
            Err(e) if transient(&e) && tries < MAX_TRIES => {
                tx.rollback().await.map_err(db)?;
                stats.reruns.fetch_add(1, Ordering::Relaxed);
                tries += 1;
            }
            Err(e) if transient(&e) => return Err(kept_losing(&e)),
            Err(e) => return Err(e),
        }
    }
}
