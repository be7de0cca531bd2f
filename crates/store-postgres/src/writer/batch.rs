//! The writer tasks: each takes whatever is queued (up to `max_batch`) and runs it in
//! ONE transaction on its own connection, so one COMMIT (one WAL flush) serves the
//! batch. The batch's commits go in one call of `ledger_commit_batch` (migration
//! 0002), which runs each in its own subtransaction: one round trip for all of them
//! instead of three each. Other writes run each in its own SAVEPOINT. Callers are
//! answered only after COMMIT returned.
//!
//! A batch keeps every row it wrote locked until its COMMIT, so batches of several
//! writers and nodes wait for each other, and two that take the same rows in opposite
//! orders deadlock. Two defences:
//! - Lock order. Jobs that lock one row of a table no other job writes (idempotency
//!   keys, `RowKey`) run first, sorted by that row. A batch waiting for such a row
//!   then holds nothing but such rows, all of them before the one it waits for in the
//!   same order every node uses, so it is never part of a cycle. Then the commits, then
//!   the other writes in queue order. Reordering is sound: writes that share a batch
//!   were queued at once, none waiting for another's answer.
//! - Retry. Whatever still loses a race (a commit waiting past its `lock_timeout`, a
//!   job's deadlock, lock timeout or serialization failure) is undone alone and runs
//!   again in the writer's next batch, after this batch's COMMIT let the other
//!   transaction go on. Not in this batch: it still holds what the other waits for.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use boxoffice_engine::ports::StoreError;
use sqlx::pool::PoolConnection;
use sqlx::{PgPool, Postgres};
use tokio::sync::{Mutex, mpsc};

use super::job::{CommitJob, Job, OtherJob, Ran, Reply, RowKey};
use super::{MAX_TRIES, WriterStats, blocked, kept_losing};
use crate::commit::{self, Answer};
use crate::conn::db;

/// One writer task. With several, they share the queue: while one waits for its
/// COMMIT, the next gathers the writes that queued meanwhile.
pub(super) async fn run(
    pool: PgPool,
    queue: Arc<Mutex<mpsc::Receiver<Job>>>,
    limit: usize,
    stats: Arc<WriterStats>,
) {
    let mut batch = VecDeque::with_capacity(limit);
    let mut again = Vec::new();
    loop {
        {
            let mut rx = queue.lock().await;
            // Writes carried over (lost races) from the last batch go first, without
            // waiting for new work.
            if batch.is_empty() {
                let Some(first) = rx.recv().await else { break };
                batch.push_back(first);
                stats.jobs.fetch_add(1, Ordering::Relaxed);
            }
            while batch.len() < limit {
                match rx.try_recv() {
                    Ok(job) => batch.push_back(job),
                    Err(_) => break,
                }
                stats.jobs.fetch_add(1, Ordering::Relaxed);
            }
        }
        // A broken connection ends its batch early; the jobs it never ran get one more
        // try on a fresh connection (the pool reconnects) before they are refused.
        let started = Instant::now();
        for attempt in 0..2 {
            if batch.is_empty() {
                break;
            }
            stats.transactions.fetch_add(1, Ordering::Relaxed);
            if let Err(e) = run_batch(&pool, &mut batch, &mut again).await
                && attempt == 1
            {
                batch.drain(..).for_each(|job| job.refuse(e.clone()));
            }
        }
        metrics::histogram!("boxoffice_ledger_batch_seconds")
            .record(started.elapsed().as_secs_f64());
        let reruns = u64::try_from(again.len()).unwrap_or(u64::MAX);
        stats.reruns.fetch_add(reruns, Ordering::Relaxed);
        batch.extend(again.drain(..));
    }
    pool.close().await;
}

/// What must be sent before the next non-commit job may run.
enum Boundary {
    /// No transaction yet.
    Begin,
    /// In the transaction, no savepoint open (after the commits).
    Open,
    /// The savepoint holds writes to keep: fold them into the transaction, open a new one.
    Release,
    /// The savepoint is open and empty (the last job was rolled back to it).
    Ready,
}

/// The batch's transaction: its connection, what the next job must send first, and
/// the answers waiting for COMMIT.
struct Tx {
    conn: PoolConnection<Postgres>,
    boundary: Boundary,
    replies: Vec<Reply>,
}

/// Runs jobs from `batch` in one transaction. Err means the connection or transaction
/// broke: every job run so far has been answered with the error and the jobs left in
/// `batch` never ran. Jobs to run again go to `again`, unanswered, for the next batch.
async fn run_batch(
    pool: &PgPool,
    batch: &mut VecDeque<Job>,
    again: &mut Vec<Job>,
) -> Result<(), StoreError> {
    let conn = pool.acquire().await.map_err(db)?;
    let mut tx = Tx {
        conn,
        boundary: Boundary::Begin,
        replies: Vec::with_capacity(batch.len()),
    };
    in_lock_order(batch);
    while let Some(job) = batch.pop_front() {
        let ran = match job {
            Job::Commit(first) => run_commits(&mut tx, first, batch, again).await,
            Job::Other(job) => run_other(&mut tx, job, batch, again).await,
        };
        if let Err(e) = ran {
            return Err(broken(tx, e).await);
        }
    }
    if matches!(tx.boundary, Boundary::Begin) {
        return Ok(());
    }
    match sqlx::raw_sql("COMMIT").execute(&mut *tx.conn).await {
        Ok(_) => {
            tx.replies.into_iter().for_each(|reply| reply(Ok(())));
            Ok(())
        }
        // The outcome is unknown (the COMMIT may have landed before the connection
        // dropped): callers hear "unavailable" and the recovery sweep reads the truth.
        Err(e) => Err(broken(tx, db(e)).await),
    }
}

/// Jobs with a `RowKey` first, by row; then the commits; then the others. A stable
/// sort: the commits and the others keep their queue order.
fn in_lock_order(batch: &mut VecDeque<Job>) {
    fn rank(job: &Job) -> (u8, Option<&RowKey>) {
        match job {
            Job::Other(OtherJob { row: Some(row), .. }) => (0, Some(row)),
            Job::Commit(_) => (1, None),
            Job::Other(_) => (2, None),
        }
    }
    batch
        .make_contiguous()
        .sort_by(|a, b| rank(a).cmp(&rank(b)));
}

/// `first` and the commits right behind it (all of the batch's, once sorted).
fn take_commits(first: CommitJob, batch: &mut VecDeque<Job>) -> Vec<CommitJob> {
    let mut commits = vec![first];
    while matches!(batch.front(), Some(Job::Commit(_))) {
        if let Some(Job::Commit(c)) = batch.pop_front() {
            commits.push(c);
        }
    }
    commits
}

/// `first` and the batch's other commits in one call. An open savepoint takes them in
/// (it is released before the next job): no round trip of their own. Err leaves them
/// in `batch` if they never ran.
async fn run_commits(
    tx: &mut Tx,
    first: CommitJob,
    batch: &mut VecDeque<Job>,
    again: &mut Vec<Job>,
) -> Result<(), StoreError> {
    if matches!(tx.boundary, Boundary::Begin) {
        if let Err(e) = sqlx::raw_sql("BEGIN").execute(&mut *tx.conn).await {
            batch.push_front(Job::Commit(first));
            return Err(db(e));
        }
        tx.boundary = Boundary::Open;
    }
    let commits = take_commits(first, batch);
    let answers = match commit::commit_batch(&mut tx.conn, commits.iter().map(|j| &j.commit)).await
    {
        Ok(answers) => answers,
        // The call failed as a whole (connection, timeout): no commit stands.
        Err(e) => {
            let replies = commits.into_iter().map(|job| job.reply(Err(e.clone())));
            tx.replies.extend(replies);
            return Err(e);
        }
    };
    if matches!(tx.boundary, Boundary::Ready) {
        tx.boundary = Boundary::Release;
    }
    for (job, answer) in commits.into_iter().zip(answers) {
        match answer {
            Answer::Done(out) => tx.replies.push(job.reply(out)),
            Answer::Retry if job.tries >= MAX_TRIES => tx.replies.push(job.reply(Err(blocked()))),
            Answer::Retry => again.push(Job::Commit(CommitJob {
                tries: job.tries + 1,
                ..job
            })),
        }
    }
    Ok(())
}

/// One job in its own savepoint. Err leaves `job` at the front of `batch` if it never
/// ran.
async fn run_other(
    tx: &mut Tx,
    job: OtherJob,
    batch: &mut VecDeque<Job>,
    again: &mut Vec<Job>,
) -> Result<(), StoreError> {
    // Boundaries go as one simple-protocol message each: one round trip per job.
    let sql = match tx.boundary {
        Boundary::Begin => Some("BEGIN; SAVEPOINT op"),
        Boundary::Open => Some("SAVEPOINT op"),
        Boundary::Release => Some("RELEASE SAVEPOINT op; SAVEPOINT op"),
        Boundary::Ready => None,
    };
    if let Some(sql) = sql
        && let Err(e) = sqlx::raw_sql(sql).execute(&mut *tx.conn).await
    {
        batch.push_front(Job::Other(job));
        return Err(db(e));
    }
    let OtherJob { work, row, tries } = job;
    match work.run(&mut tx.conn).await {
        Ran::Done { keep: true, reply } => {
            tx.replies.push(reply);
            tx.boundary = Boundary::Release;
            return Ok(());
        }
        Ran::Done { keep: false, reply } => tx.replies.push(reply),
        // Nothing of it stands once rolled back: answering now is answering the truth.
        Ran::Lost(work, e) if tries >= MAX_TRIES => work.refuse(kept_losing(&e)),
        Ran::Lost(work, _) => again.push(Job::Other(OtherJob {
            work,
            row,
            tries: tries + 1,
        })),
    }
    sqlx::raw_sql("ROLLBACK TO SAVEPOINT op")
        .execute(&mut *tx.conn)
        .await
        .map_err(db)?;
    tx.boundary = Boundary::Ready;
    Ok(())
}

/// Gives up on the transaction: answers what ran with `error`, and makes sure the
/// connection is never reused in an unknown state.
async fn broken(mut tx: Tx, error: StoreError) -> StoreError {
    tx.replies
        .into_iter()
        .for_each(|reply| reply(Err(error.clone())));
    let _ = sqlx::raw_sql("ROLLBACK").execute(&mut *tx.conn).await;
    tx.conn.close_on_drop();
    error
}
