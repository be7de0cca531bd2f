//! The join journal: every join is written to the ledger before its buyer hears their
//! place, so the pool and the line outlive the queue store. Joins are grouped like
//! commits: one task per node takes whatever joins are queued (up to `MAX_BATCH`) and
//! writes them in one ledger call, while the next batch gathers behind it; each caller
//! is answered once its batch is durable, with whether its record stands (a place the
//! ledger gave someone else does not; see `Ledger::record_joins`).
//!
//! A join may bring its Idempotency-Key's claim and answer along (`record_claimed`):
//! where the replay store keeps its records in the ledger's database
//! (`IdempotencyStore::journals_joins`), the batch is written through that store
//! (`record_joins_claimed`), so the claim, the record and the kept answer of every join
//! in it are the batch's one write.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

use crate::ports::{
    ClaimedJoin, IdempotencyStore, JoinClaim, JoinRecord, JoinWritten, Ledger, StoreError,
};

/// Joins written per ledger call.
const MAX_BATCH: usize = 1_024;
/// Joins waiting for the writer before a join waits for room.
const QUEUED: usize = 16_384;

/// A join to write: its record, the replay store that takes its claim (with the
/// claim) when it has one, and who hears the outcome.
struct Entry {
    join: ClaimedJoin,
    replays: Option<Arc<dyn IdempotencyStore>>,
    done: oneshot::Sender<Result<JoinWritten, StoreError>>,
}

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
        let join = ClaimedJoin {
            record: join,
            claim: None,
        };
        let written = self.send(ledger, join, None).await?;
        Ok(written == JoinWritten::Stood)
    }

    /// Journals one join with its key's claim and answer, through `replays` (a store
    /// that `journals_joins`): all three are written, or none (`JoinWritten`).
    pub(crate) async fn record_claimed(
        &self,
        ledger: &Arc<dyn Ledger>,
        join: JoinRecord,
        replays: Arc<dyn IdempotencyStore>,
        claim: JoinClaim,
    ) -> Result<JoinWritten, StoreError> {
        let join = ClaimedJoin {
            record: join,
            claim: Some(claim),
        };
        self.send(ledger, join, Some(replays)).await
    }

    async fn send(
        &self,
        ledger: &Arc<dyn Ledger>,
        join: ClaimedJoin,
        replays: Option<Arc<dyn IdempotencyStore>>,
    ) -> Result<JoinWritten, StoreError> {
        let tx = self.tx.get_or_init(|| {
            let (tx, rx) = mpsc::channel(QUEUED);
            tokio::spawn(write(ledger.clone(), rx, self.answered.clone()));
            tx
        });
        let stopped = || StoreError::new("the join journal stopped");
        let (done, answer) = oneshot::channel();
        self.issued.fetch_add(1, Ordering::SeqCst);
        let entry = Entry {
            join,
            replays,
            done,
        };
        if tx.send(entry).await.is_err() {
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
        let n = batch.len();
        metrics::histogram!("boxoffice_join_journal_batch").record(n as f64);
        write_batch(&ledger, std::mem::take(&mut batch)).await;
        answered.send_modify(|a| *a += n as u64);
    }
}

/// Writes one batch: through the replay store that takes its claims when some join has
/// one (every join of the node names the same store, so that is one write), else
/// through the ledger; and answers each join.
async fn write_batch(ledger: &Arc<dyn Ledger>, batch: Vec<Entry>) {
    let mut rest = batch;
    while !rest.is_empty() {
        let replays = rest.iter().find_map(|e| e.replays.clone());
        // The joins this write carries: every unclaimed one and those claimed through
        // `replays`; a claim through another store waits for a write of its own.
        let (now, later): (Vec<Entry>, Vec<Entry>) =
            rest.into_iter()
                .partition(|e| match (&e.replays, &replays) {
                    (Some(mine), Some(theirs)) => Arc::ptr_eq(mine, theirs),
                    _ => true,
                });
        rest = later;
        let (joins, replies): (Vec<ClaimedJoin>, Vec<_>) =
            now.into_iter().map(|e| (e.join, e.done)).unzip();
        let written = match &replays {
            Some(replays) => replays.record_joins_claimed(&joins).await,
            None => {
                let records: Vec<JoinRecord> = joins.iter().map(|j| j.record).collect();
                let stood = ledger.record_joins(&records).await;
                stood.map(|stood| {
                    let stood = stood.into_iter().map(|s| match s {
                        true => JoinWritten::Stood,
                        false => JoinWritten::NotStood,
                    });
                    stood.collect()
                })
            }
        };
        for (i, reply) in replies.into_iter().enumerate() {
            let outcome = match &written {
                Ok(written) => written.get(i).cloned().ok_or_else(|| {
                    StoreError::new("the ledger answered for fewer joins than it was given")
                }),
                Err(e) => Err(e.clone()),
            };
            // The joiner may have gone away (request cancelled); nothing to tell.
            let _ = reply.send(outcome);
        }
    }
}
