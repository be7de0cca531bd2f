//! Upkeep of the idempotency stores, as worker steps: heartbeats, so that nodes sharing
//! a store can tell this one is alive (and take over its claims at once when it stops),
//! and pruning records whose retention is over, one small batch per store and step so
//! no write holds the ledger for long. Processed payment webhook ids (kept in the
//! ledger, shared by every node) are pruned by the same step, after a lifetime of their
//! own.

use std::sync::Arc;

use crate::EngineError;
use crate::ports::{Clock, IdempotencyStore, Incarnation, Ledger};
use crate::worker::Outcome;

pub struct ReplayUpkeep {
    stores: Vec<Arc<dyn IdempotencyStore>>,
    node: Incarnation,
    clock: Arc<dyn Clock>,
    retention_ms: i64,
    batch: u32,
    /// The ledger whose processed webhook ids are forgotten this long after their claim.
    webhooks: Option<(Arc<dyn Ledger>, i64)>,
}

impl ReplayUpkeep {
    /// Keeps `stores` for `node`: records are kept `retention_ms` after their claim and
    /// pruned at most `batch` per store per step.
    pub fn new(
        stores: Vec<Arc<dyn IdempotencyStore>>,
        node: Incarnation,
        clock: Arc<dyn Clock>,
        retention_ms: i64,
        batch: u32,
    ) -> ReplayUpkeep {
        ReplayUpkeep {
            stores,
            node,
            clock,
            retention_ms,
            batch,
            webhooks: None,
        }
    }

    /// Also forgets `ledger`'s processed webhook ids `kept_ms` after their claim, a
    /// batch per step.
    pub fn with_webhooks(self, ledger: Arc<dyn Ledger>, kept_ms: i64) -> ReplayUpkeep {
        ReplayUpkeep {
            webhooks: Some((ledger, kept_ms)),
            ..self
        }
    }

    /// Tells every store this node is alive now. Never reports work: it runs on a clock.
    pub async fn heartbeat_step(&self) -> Result<Outcome, EngineError> {
        let now = self.clock.now();
        for store in &self.stores {
            store.heartbeat(self.node, now).await?;
        }
        Ok(Outcome::default())
    }

    /// Forgets one batch of expired records in each store; reports how many went, so
    /// the loop comes straight back while a backlog lasts.
    pub async fn prune_step(&self) -> Result<Outcome, EngineError> {
        let before = self.clock.now().plus_millis(-self.retention_ms);
        let mut done = 0;
        for store in &self.stores {
            done += store.prune(before, self.batch).await?;
        }
        if done > 0 {
            metrics::counter!("boxoffice_idempotency_pruned_total").increment(done);
        }
        if let Some((ledger, kept_ms)) = &self.webhooks {
            let before = self.clock.now().plus_millis(-kept_ms);
            let forgotten = ledger.prune_webhooks(before, self.batch).await?;
            if forgotten > 0 {
                metrics::counter!("boxoffice_webhook_ids_pruned_total").increment(forgotten);
            }
            done += forgotten;
        }
        Ok(Outcome {
            done: done as usize,
        })
    }
}

#[cfg(test)]
mod tests {
    use boxoffice_domain::Millis;

    use super::*;
    use crate::ports::{
        Begin, Claimant, Lease, ManualClock, ReplayKey, StoreError, StoredResponse,
    };

    /// A store that counts what the upkeep asked of it.
    #[derive(Default)]
    struct Counting {
        beats: parking_lot::Mutex<Vec<(Incarnation, Millis)>>,
        old: parking_lot::Mutex<u64>,
    }

    #[async_trait::async_trait]
    impl IdempotencyStore for Counting {
        async fn begin(
            &self,
            _: &ReplayKey,
            _: &[u8; 32],
            _: Millis,
            _: &Claimant,
        ) -> Result<Begin, StoreError> {
            Ok(Begin::Proceed)
        }
        async fn finish(
            &self,
            _: &ReplayKey,
            _: Lease,
            _: &StoredResponse,
        ) -> Result<(), StoreError> {
            Ok(())
        }
        async fn abandon(&self, _: &ReplayKey, _: Lease) -> Result<(), StoreError> {
            Ok(())
        }
        async fn heartbeat(&self, node: Incarnation, now: Millis) -> Result<(), StoreError> {
            self.beats.lock().push((node, now));
            Ok(())
        }
        async fn prune(&self, before: Millis, limit: u32) -> Result<u64, StoreError> {
            assert_eq!(before, Millis(1_000_000 - 60_000), "now less the retention");
            let mut old = self.old.lock();
            let n = (*old).min(u64::from(limit));
            *old -= n;
            Ok(n)
        }
    }

    #[tokio::test]
    async fn pruning_goes_in_batches_until_the_backlog_is_gone_and_beats_carry_the_node() {
        let store = Arc::new(Counting::default());
        *store.old.lock() = 25;
        let node = Incarnation::random();
        let clock = Arc::new(ManualClock::new(Millis(1_000_000)));
        let upkeep = ReplayUpkeep::new(vec![store.clone()], node, clock, 60_000, 10);
        let mut batches = Vec::new();
        loop {
            let step = upkeep.prune_step().await.expect("prune");
            if step.idle() {
                break;
            }
            batches.push(step.done);
        }
        assert_eq!(batches, [10, 10, 5]);
        upkeep.heartbeat_step().await.expect("beat");
        assert_eq!(*store.beats.lock(), [(node, Millis(1_000_000))]);
    }
}
