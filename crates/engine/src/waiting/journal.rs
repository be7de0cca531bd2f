//! The join journal: every join is written to the ledger before its buyer hears their
//! place, so the pool and the line outlive the queue store. Joins are grouped like
//! commits: one task per node takes whatever joins are queued (up to `MAX_BATCH`) and
//! writes them in one ledger call, while the next batch gathers behind it; each caller
//! is answered once its batch is durable, with whether its record stands (a place the
//! ledger gave someone else does not; see `Ledger::record_joins`).

use std::sync::{Arc, OnceLock};

use tokio::sync::{mpsc, oneshot};

use crate::ports::{JoinRecord, Ledger, StoreError};

/// Joins written per ledger call.
const MAX_BATCH: usize = 1_024;
/// Joins waiting for the writer before a join waits for room.
const QUEUED: usize = 16_384;

type Entry = (JoinRecord, oneshot::Sender<Result<bool, StoreError>>);

#[derive(Default)]
pub(crate) struct JoinJournal {
    tx: OnceLock<mpsc::Sender<Entry>>,
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
            tokio::spawn(write(ledger.clone(), rx));
            tx
        });
        let stopped = || StoreError::new("the join journal stopped");
        let (done, answer) = oneshot::channel();
        tx.send((join, done)).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

/// The writer task: one batch in flight at a time; it ends with the last sender.
async fn write(ledger: Arc<dyn Ledger>, mut rx: mpsc::Receiver<Entry>) {
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
    }
}
