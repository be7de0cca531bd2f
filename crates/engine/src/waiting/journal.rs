//! The join journal: every join is written to the ledger before its buyer hears their
//! place, so the pool and the line outlive the queue store. Joins are grouped like
//! commits: one task per node takes whatever joins are queued (up to `MAX_BATCH`) and
//! writes them in one ledger call, while the next batch gathers behind it; each caller
//! is answered once its batch is durable, with whether its record stands (a place the
//! ledger gave someone else does not; see `Ledger::record_joins`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

use crate::ports::{JoinRecord, Ledger, StoreError};

/// Joins written per ledger call.
const MAX_BATCH: usize = 1_024;
/// Joins waiting for the writer before a join waits for room.
const QUEUED: usize = 16_384;

type Entry = (JoinRecord, oneshot::Sender<Result<bool, StoreError>>);

/// The longest a line put back waits for this node's joins in flight.
const SETTLE_WAIT: Duration = Duration::from_secs(5);

pub(crate) struct JoinJournal {
    tx: OnceLock<mpsc::Sender<Entry>>,
    /// Joins handed to the journal, and joins it has answered (written or failed).
    issued: AtomicU64,
    answered: Arc<watch::Sender<u64>>,
}

impl Default for JoinJournal {
    fn default() -> Self {
        JoinJournal {
            tx: OnceLock::new(),
            issued: AtomicU64::new(0),
            answered: Arc::new(watch::channel(0).0),
        }
    }
}

impl JoinJournal {
    /// Journals one join; returns once the batch that carried it is in the ledger,
    /// with whether the record stands.
    pub(crate) async fn record(
        &self,
        ledger: &Arc<dyn Ledger>,
        join: JoinRecord,
    ) -> Result<bool, StoreError> {
        let tx = self.tx.get_or_init(|| {
            let (tx, rx) = mpsc::channel(QUEUED);
            tokio::spawn(write(ledger.clone(), rx, self.answered.clone()));
            tx
        });
        let stopped = || StoreError::new("the join journal stopped");
        let (done, answer) = oneshot::channel();
        self.issued.fetch_add(1, Ordering::SeqCst);
        if tx.send((join, done)).await.is_err() {
            self.answered.send_modify(|n| *n += 1);
            return Err(stopped());
        }
        answer.await.map_err(|_| stopped())?
    }

    /// Waits (at most `SETTLE_WAIT`) until every join this node handed to the journal
    /// before the call has its answer: a line put back from the ledger then holds every
    /// place this node gave out, rather than dropping the ones still in flight (which
    /// would hand their positions out again and put the line back once more).
    pub(crate) async fn settled(&self) {
        let target = self.issued.load(Ordering::SeqCst);
        let mut answered = self.answered.subscribe();
        let _ = tokio::time::timeout(SETTLE_WAIT, answered.wait_for(|n| *n >= target)).await;
    }
}

/// The writer task: one batch in flight at a time; it ends with the last sender.
async fn write(
    ledger: Arc<dyn Ledger>,
    mut rx: mpsc::Receiver<Entry>,
    answered: Arc<watch::Sender<u64>>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let (joins, replies): (Vec<JoinRecord>, Vec<_>) = batch.drain(..).unzip();
        metrics::histogram!("boxoffice_join_journal_batch").record(joins.len() as f64);
        let written = ledger.record_joins(&joins).await;
        for (i, reply) in replies.into_iter().enumerate() {
            let stood = match &written {
                Ok(stood) => stood.get(i).copied().ok_or_else(|| {
                    StoreError::new("the ledger answered for fewer joins than it was given")
                }),
                Err(e) => Err(e.clone()),
            };
            // The joiner may have gone away (request cancelled); nothing to tell.
            let _ = reply.send(stood);
        }
        answered.send_modify(|n| *n += joins.len() as u64);
    }
}
