//! The writer tasks: each takes whatever is queued (up to `max_batch`) and runs it in
//! ONE transaction on its own connection, so one COMMIT (one WAL flush) serves the
//! batch. The batch's commits go first, all in one call of `ledger_commit_batch`
//! (migration 0002), which runs each in its own subtransaction: one round trip for all
//! of them instead of three each. Other writes follow, each in its own SAVEPOINT.
//! Callers are answered only after COMMIT returned.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use boxoffice_engine::ports::StoreError;
use sqlx::pool::PoolConnection;
use sqlx::{PgPool, Postgres};
use tokio::sync::{Mutex, mpsc};

use super::job::{CommitJob, Job, Reply};
use super::{MAX_TRIES, WriterStats, blocked};
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
            // Commits carried over (`Answer::Retry`) from the last batch go first, without
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
        batch.extend(again.drain(..).map(Job::Commit));
    }
    pool.close().await;
}

/// What must be sent before the next non-commit job may run.
enum Boundary {
    /// No transaction yet.
    Begin,
    /// In the transaction, no savepoint open (after the commits).
    Open,
    /// The last job kept its writes: fold them into the transaction, open a new savepoint.
    Release,
    /// The savepoint is open and empty (the last job was rolled back to it).
    Ready,
}

/// Runs jobs from `batch` in one transaction. Err means the connection or transaction
/// broke: every job run so far has been answered with the error and the jobs left in
/// `batch` never ran. Commits to retry go to `again`, unanswered, for the next batch.
async fn run_batch(
    pool: &PgPool,
    batch: &mut VecDeque<Job>,
    again: &mut Vec<CommitJob>,
) -> Result<(), StoreError> {
    let mut conn = pool.acquire().await.map_err(db)?;
    let mut replies: Vec<Reply> = Vec::with_capacity(batch.len());
    let mut boundary = Boundary::Begin;
    if batch.iter().any(|job| matches!(job, Job::Commit(_))) {
        if let Err(e) = sqlx::raw_sql("BEGIN").execute(&mut *conn).await {
            return Err(broken(conn, replies, db(e)).await);
        }
        boundary = Boundary::Open;
        let commits = take_commits(batch);
        match commit::commit_batch(&mut conn, commits.iter().map(|j| &j.commit)).await {
            Ok(answers) => {
                for (job, answer) in commits.into_iter().zip(answers) {
                    match answer {
                        Answer::Done(out) => replies.push(job.reply(out)),
                        Answer::Retry if job.tries >= MAX_TRIES => {
                            replies.push(job.reply(Err(blocked())));
                        }
                        Answer::Retry => again.push(CommitJob {
                            tries: job.tries + 1,
                            ..job
                        }),
                    }
                }
            }
            // The call failed as a whole (connection, timeout): no commit stands.
            Err(e) => {
                replies.extend(commits.into_iter().map(|job| job.reply(Err(e.clone()))));
                return Err(broken(conn, replies, e).await);
            }
        }
    }
    while let Some(job) = batch.pop_front() {
        let Job::Other(work) = job else {
            job.refuse(StoreError::new("postgres: a commit missed its batch call"));
            continue;
        };
        // Boundaries go as one simple-protocol message each: one round trip per job.
        let sql = match boundary {
            Boundary::Begin => Some("BEGIN; SAVEPOINT op"),
            Boundary::Open => Some("SAVEPOINT op"),
            Boundary::Release => Some("RELEASE SAVEPOINT op; SAVEPOINT op"),
            Boundary::Ready => None,
        };
        if let Some(sql) = sql
            && let Err(e) = sqlx::raw_sql(sql).execute(&mut *conn).await
        {
            batch.push_front(Job::Other(work));
            return Err(broken(conn, replies, db(e)).await);
        }
        let (keep, reply) = work.run(&mut conn).await;
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

/// Takes the commits out of `batch`, leaving the other jobs in their order.
fn take_commits(batch: &mut VecDeque<Job>) -> Vec<CommitJob> {
    let mut commits = Vec::new();
    let others = batch
        .drain(..)
        .filter_map(|job| match job {
            Job::Commit(c) => {
                commits.push(c);
                None
            }
            other => Some(other),
        })
        .collect();
    *batch = others;
    commits
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
