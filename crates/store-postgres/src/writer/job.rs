//! What the writer runs: a commit (data only, so a batch of them goes to the server in
//! one call) or any other write as a closure over the batch's connection, run in its
//! own savepoint. Either way the caller is answered through a `Reply` once the fate of
//! the transaction is known. A write that lost a race with another transaction
//! (`conn::transient`) is not answered: its closure runs again in a later batch.

use std::panic::AssertUnwindSafe;

use boxoffice_engine::ports::{Commit, CommitOutcome, StoreError};
use futures::FutureExt;
use futures::future::BoxFuture;
use sqlx::PgConnection;
use tokio::sync::oneshot;

use crate::conn::transient;

/// What a job decided: keep its writes, or undo them and still answer `T`.
pub(crate) enum Step<T> {
    Keep(T),
    Undo(T),
}

/// A job's body: runs on the transaction's connection, once or (after a lost race)
/// again from the start, so it must own nothing it cannot make again.
pub(crate) type OpFuture<'c, T> = BoxFuture<'c, Result<Step<T>, StoreError>>;

/// The one row a job locks, for jobs whose table no other kind of job writes (an
/// idempotency key: scope, key). Such jobs run first in their batch, in this order, so
/// two batches never wait for each other over them (see `batch`).
pub(crate) type RowKey = (String, String);

/// Answers a caller with the outcome of the COMMIT (or the error that ended the batch).
pub(super) type Reply = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

pub(super) type CommitReply = oneshot::Sender<Result<CommitOutcome, StoreError>>;

pub(super) enum Job {
    Commit(CommitJob),
    Other(OtherJob),
}

impl Job {
    pub(super) fn refuse(self, error: StoreError) {
        match self {
            Job::Commit(job) => {
                let _ = job.tx.send(Err(error));
            }
            Job::Other(job) => job.work.refuse(error),
        }
    }
}

pub(super) struct CommitJob {
    pub(super) commit: Commit,
    pub(super) tx: CommitReply,
    /// Runs so far, counting the one under way.
    pub(super) tries: u32,
}

impl CommitJob {
    /// The reply for its own outcome `out`: it stands only if COMMIT does.
    pub(super) fn reply(self, out: Result<CommitOutcome, StoreError>) -> Reply {
        Box::new(move |committed: Result<(), StoreError>| {
            // The caller may have gone away (request cancelled); nothing to tell.
            let _ = self.tx.send(committed.and(out));
        })
    }
}

pub(super) struct OtherJob {
    pub(super) work: Box<dyn Work>,
    pub(super) row: Option<RowKey>,
    /// Runs so far, counting the one under way.
    pub(super) tries: u32,
}

/// What became of one run of a job.
pub(super) enum Ran {
    /// Keep its writes (or undo them) and answer with `Reply` once COMMIT's fate is known.
    Done { keep: bool, reply: Reply },
    /// It lost a race with another transaction (`error`): undo it and run it again later.
    Lost(Box<dyn Work>, StoreError),
}

/// A queued write other than a commit: run inside the batch transaction, or refused unrun.
pub(super) trait Work: Send {
    /// Runs the job once. `Lost` hands the job back unanswered.
    fn run<'c>(self: Box<Self>, conn: &'c mut PgConnection) -> BoxFuture<'c, Ran>;
    fn refuse(self: Box<Self>, error: StoreError);
}

pub(super) struct Pending<T, F> {
    pub(super) op: F,
    pub(super) tx: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> Work for Pending<T, F>
where
    T: Send + 'static,
    F: for<'c> Fn(&'c mut PgConnection) -> OpFuture<'c, T> + Send + 'static,
{
    fn run<'c>(self: Box<Self>, conn: &'c mut PgConnection) -> BoxFuture<'c, Ran> {
        Box::pin(async move {
            // A bug in one job must not take the writer task (and every later sale) down.
            let run = (self.op)(conn);
            let step = AssertUnwindSafe(run).catch_unwind().await;
            let (keep, out) = match step {
                Ok(Ok(Step::Keep(v))) => (true, Ok(v)),
                Ok(Ok(Step::Undo(v))) => (false, Ok(v)),
                Ok(Err(e)) if transient(&e) => return Ran::Lost(self, e),
                Ok(Err(e)) => (false, Err(e)),
                Err(_) => (
                    false,
                    Err(StoreError::new("postgres: a ledger write panicked")),
                ),
            };
            let tx = self.tx;
            let reply: Reply = Box::new(move |committed: Result<(), StoreError>| {
                let _ = tx.send(committed.and(out));
            });
            Ran::Done { keep, reply }
        })
    }

    fn refuse(self: Box<Self>, error: StoreError) {
        let _ = self.tx.send(Err(error));
    }
}
