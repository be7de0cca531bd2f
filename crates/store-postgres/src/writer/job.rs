//! What the writer runs: a commit (data only, so a batch of them goes to the server in
//! one call) or any other write as a closure over the batch's connection, run in its
//! own savepoint. Either way the caller is answered through a `Reply` once the fate of
//! the transaction is known.

use std::panic::AssertUnwindSafe;

use boxoffice_engine::ports::{Commit, CommitOutcome, StoreError};
use futures::FutureExt;
use futures::future::BoxFuture;
use sqlx::PgConnection;
use tokio::sync::oneshot;

/// What a job decided: keep its writes, or undo them and still answer `T`.
pub(crate) enum Step<T> {
    Keep(T),
    Undo(T),
}

/// A job's body: runs on the transaction's connection.
pub(crate) type OpFuture<'c, T> = BoxFuture<'c, Result<Step<T>, StoreError>>;

/// Answers a caller with the outcome of the COMMIT (or the error that ended the batch).
pub(super) type Reply = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

pub(super) type CommitReply = oneshot::Sender<Result<CommitOutcome, StoreError>>;

pub(super) enum Job {
    Commit(CommitJob),
    Other(Box<dyn Work>),
}

impl Job {
    pub(super) fn refuse(self, error: StoreError) {
        match self {
            Job::Commit(job) => {
                let _ = job.tx.send(Err(error));
            }
            Job::Other(work) => work.refuse(error),
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

/// A queued write other than a commit: run inside the batch transaction, or refused unrun.
pub(super) trait Work: Send {
    /// Runs the job and says whether to keep its writes, with how to answer the caller
    /// once the fate of the transaction is known.
    fn run<'c>(self: Box<Self>, conn: &'c mut PgConnection) -> BoxFuture<'c, (bool, Reply)>;
    fn refuse(self: Box<Self>, error: StoreError);
}

pub(super) struct Pending<T, F> {
    pub(super) op: F,
    pub(super) tx: oneshot::Sender<Result<T, StoreError>>,
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
                let _ = tx.send(committed.and(out));
            });
            (keep, reply)
        })
    }

    fn refuse(self: Box<Self>, error: StoreError) {
        let _ = self.tx.send(Err(error));
    }
}
