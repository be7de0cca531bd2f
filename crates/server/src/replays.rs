//! The replay stores' settings (`[idempotency]`) and upkeep: this process's claimant
//! (a fresh incarnation per start), its heartbeat and the pruning of old records, as
//! worker loops beside the engine's.

use std::sync::Arc;
use std::time::Duration;

use boxoffice_engine::ports::{Claimant, Clock, IdempotencyStore, Incarnation, Ledger};
use boxoffice_engine::replays::ReplayUpkeep;
use boxoffice_engine::worker::run_every;
use serde::Deserialize;
use tokio::sync::watch;

use crate::config::WorkerConfig;

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IdempotencyConfig {
    /// How long an unfinished request of a live process blocks retries of its key
    /// (`request_in_progress`). A process that died frees its keys at once. At most a
    /// day, and at most the retention. Default 60000.
    pub lease_ms: i64,
    /// How long a finished request is replayed; older records are pruned. Default 86400.
    pub retention_s: u64,
    /// Most replay records of the hot store (in-process or Redis) kept at once; at the
    /// cap the oldest finished ones make room. In process a record with a 300-byte
    /// response takes about 430 bytes (a hold's, kept packed, about 200), so the
    /// default 500,000 is at most about 215 MB.
    pub max_records: u64,
    /// Most replay records of queue joins kept at once, in a store of their own beside
    /// the holds' (so the crowd's joins never push a hold's record out). At the cap the
    /// oldest finished ones are forgotten, which a join can afford: a retry whose
    /// record is gone runs the join again and finds the same place. Default 500000.
    pub max_join_records: u64,
    /// A node silent for this long is dead and its claims are taken over; at least
    /// twice `workers.heartbeat_interval_ms`. Default 10000.
    pub node_dead_after_ms: i64,
    /// Records deleted per statement while pruning, so the ledger is never held long.
    /// Default 1000.
    pub prune_batch: u32,
    /// How long a processed payment webhook id is kept in the ledger after its claim,
    /// so that a duplicate delivery is recognised; afterwards it is forgotten (pruned
    /// with the replays). Must outlast the provider's retries of one event (Stripe
    /// retries a webhook for up to three days): a duplicate delivered after its id was
    /// forgotten is handled again. Default 604800 (seven days).
    pub webhook_ids_kept_s: u64,
}

impl Default for IdempotencyConfig {
    fn default() -> Self {
        IdempotencyConfig {
            lease_ms: 60_000,
            retention_s: 86_400,
            max_records: 500_000,
            max_join_records: 500_000,
            node_dead_after_ms: 10_000,
            prune_batch: 1_000,
            webhook_ids_kept_s: 7 * 86_400,
        }
    }
}

/// The longest lease a claim may take: a day.
const MAX_LEASE_MS: i64 = 86_400_000;

impl IdempotencyConfig {
    /// Refuses settings under which nothing is kept. (That a live node must not look
    /// dead is checked with the heartbeat, in `Config::check`.)
    pub fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.lease_ms > 0
                && self.retention_s > 0
                && self.max_records > 0
                && self.max_join_records > 0,
            "idempotency.lease_ms, retention_s, max_records and max_join_records must be positive"
        );
        anyhow::ensure!(
            self.lease_ms <= MAX_LEASE_MS && self.lease_ms <= self.retention_ms(),
            "idempotency.lease_ms ({}) must be at most a day, and at most the retention \
             (retention_s): a request runs for seconds, and a claim must not be pruned while \
             it runs",
            self.lease_ms
        );
        anyhow::ensure!(
            self.prune_batch > 0,
            "idempotency.prune_batch must be positive"
        );
        anyhow::ensure!(
            self.webhook_ids_kept_s >= 86_400,
            "idempotency.webhook_ids_kept_s must be at least a day: a duplicate webhook \
             delivered after its id is forgotten is handled again"
        );
        Ok(())
    }

    pub fn retention_ms(&self) -> i64 {
        i64::try_from(self.retention_s)
            .unwrap_or(i64::MAX)
            .saturating_mul(1000)
    }

    /// This process's claims: a new incarnation, so claims of an earlier life are dead.
    pub fn claimant(&self) -> Claimant {
        Claimant {
            node: Incarnation::random(),
            lease_ms: self.lease_ms,
            dead_after_ms: self.node_dead_after_ms,
        }
    }

    /// The upkeep of `stores`, and of `ledger`'s processed webhook ids.
    pub fn upkeep(
        &self,
        stores: Vec<Arc<dyn IdempotencyStore>>,
        ledger: Arc<dyn Ledger>,
        node: Incarnation,
        clock: Arc<dyn Clock>,
    ) -> ReplayUpkeep {
        let kept_ms =
            i64::try_from(self.webhook_ids_kept_s.saturating_mul(1000)).unwrap_or(i64::MAX);
        ReplayUpkeep::new(stores, node, clock, self.retention_ms(), self.prune_batch)
            .with_webhooks(ledger, kept_ms)
    }
}

/// The heartbeat and pruning loops, until `stop`.
pub fn spawn_upkeep(
    upkeep: Arc<ReplayUpkeep>,
    workers: &WorkerConfig,
    stop: watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let ms = Duration::from_millis;
    let (beat, prune) = (upkeep.clone(), upkeep);
    vec![
        tokio::spawn(run_every(
            "heartbeat",
            ms(workers.heartbeat_interval_ms),
            stop.clone(),
            move || {
                let u = beat.clone();
                async move { u.heartbeat_step().await }
            },
        )),
        tokio::spawn(run_every(
            "replay-prune",
            ms(workers.replay_prune_interval_ms),
            stop,
            move || {
                let u = prune.clone();
                async move { u.prune_step().await }
            },
        )),
    ]
}
