//! The claim one caller takes to open or bring back an event's line
//! (`QueueStore::claim_line`), for every task and node sharing the queue store. It is
//! renewed while the work under it runs, so an opening slower than the claim's term (a
//! large pool, a ledger under load) keeps it and no other node starts the same work
//! beside it; and a holder whose claim lapsed or went to another stops before its next
//! write.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use boxoffice_domain::EventId;
use parking_lot::Mutex;

use crate::{Engine, EngineError};

/// How long a claim lasts unless renewed. Its holder renews it every third of that, so
/// it lapses only when the holder stopped (crashed, or could not reach the queue store
/// for that long); the others wait as long for it.
pub(super) const LINE_CLAIM_MS: u64 = 5_000;

/// The claim, held.
pub(super) struct LineClaim {
    event: EventId,
    /// Who holds it: one claim's own name, so a renewal or a release never takes
    /// another holder's claim for this one.
    holder: String,
    /// Until when the claim is surely still this one's: the sending of the last
    /// renewal the store granted, plus the term.
    until: Mutex<Instant>,
}

impl LineClaim {
    /// Err once the claim may have lapsed. Called before every write made under it, so
    /// a holder that lost its claim (another node may be doing the same work now) writes
    /// nothing more.
    pub(super) fn held(&self) -> Result<(), EngineError> {
        if Instant::now() < *self.until.lock() {
            Ok(())
        } else {
            Err(lost(self.event))
        }
    }
}

impl Engine {
    /// Runs `work` under the event's line claim, renewing the claim while it runs; None
    /// when another caller holds it. The work ends early with an error when a renewal
    /// finds the claim gone, or none came back within the term; the work itself checks
    /// `LineClaim::held` before each write.
    pub(super) async fn under_line_claim<T, F, Fut>(
        &self,
        event: EventId,
        work: F,
    ) -> Result<Option<T>, EngineError>
    where
        F: FnOnce(Arc<LineClaim>) -> Fut,
        Fut: Future<Output = Result<T, EngineError>>,
    {
        let claim = Arc::new(LineClaim {
            event,
            holder: uuid::Uuid::new_v4().to_string(),
            until: Mutex::new(Instant::now()),
        });
        let sent = Instant::now();
        let queue = &self.ports.queue;
        if !queue
            .claim_line(event, &claim.holder, LINE_CLAIM_MS)
            .await?
        {
            return Ok(None);
        }
        *claim.until.lock() = sent + term();
        let done = tokio::select! {
            done = work(claim.clone()) => done,
            lost = self.keep_line_claim(&claim) => Err(lost),
        };
        let released = queue.release_line_claim(event, &claim.holder).await;
        let done = done?;
        released?;
        Ok(Some(done))
    }

    /// Renews the claim every third of its term until it is lost; answers why.
    async fn keep_line_claim(&self, claim: &LineClaim) -> EngineError {
        loop {
            tokio::time::sleep(term() / 3).await;
            if let Err(lost) = claim.held() {
                return lost;
            }
            let sent = Instant::now();
            let renewed = (self.ports.queue)
                .renew_line_claim(claim.event, &claim.holder, LINE_CLAIM_MS)
                .await;
            match renewed {
                Ok(true) => *claim.until.lock() = sent + term(),
                Ok(false) => return lost(claim.event),
                // Tried again at the next third, until the term runs out.
                Err(e) => {
                    tracing::warn!(event = %claim.event, error = %e, "could not renew the line claim");
                }
            }
        }
    }
}

fn term() -> Duration {
    Duration::from_millis(LINE_CLAIM_MS)
}

fn lost(event: EventId) -> EngineError {
    tracing::warn!(event = %event, "the line claim lapsed mid-work; stopped before writing more");
    metrics::counter!("boxoffice_line_claims_lost_total").increment(1);
    EngineError::Unavailable("the line is being brought back; retry".into())
}
