//! The replay stores' settings (`[idempotency]`) and upkeep: this process's claimant
//! (a fresh incarnation per start), its heartbeat and the pruning of old records, as
//! worker loops beside the engine's.

use std::sync::Arc;
use std::time::Duration;

use boxoffice_engine::ports::{Claimant, Clock, IdempotencyStore, Incarnation};
use boxoffice_engine::replays::ReplayUpkeep;
use boxoffice_engine::worker::run_every;
use serde::Deserialize;
use tokio::sync::watch;

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IdempotencyConfig {
    /// How long an unfinished request of a live process blocks retries of its key
    /// (`request_in_progress`). A process that died frees its keys at once. Default 60000.
    pub lease_ms: i64,
    /// How long a finished request is replayed; older records are pruned. Default 86400.
    pub retention_s: u64,
    /// Most replay records of the hot store (in-process or Redis) kept at once; at the
    /// cap the oldest finished ones make room. In process a record with a 300-byte
    /// response takes about 460 bytes, so the default 500,000 is about 230 MB.
    pub max_records: u64,
    /// How often this node records that it is alive. Default 2000.
    pub heartbeat_interval_ms: u64,
    /// A node silent for this long is dead and its claims are taken over; at least
    /// twice the heartbeat interval. Default 10000.
    pub node_dead_after_ms: i64,
    /// How often old records are pruned. Default 60000.
    pub prune_interval_ms: u64,
    /// Records deleted per statement while pruning, so the ledger is never held long.
    /// Default 1000.
    pub prune_batch: u32,
}

impl Default for IdempotencyConfig {
    fn default() -> Self {
        IdempotencyConfig {
            lease_ms: 60_000,
            retention_s: 86_400,
            max_records: 500_000,
            heartbeat_interval_ms: 2_000,
            node_dead_after_ms: 10_000,
            prune_interval_ms: 60_000,
            prune_batch: 1_000,
        }
    }
}

impl IdempotencyConfig {
    /// Refuses settings under which a live node would look dead, or nothing is kept.
    pub fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.node_dead_after_ms >= 2 * self.heartbeat_interval_ms as i64,
            "idempotency.node_dead_after_ms ({}) must be at least twice \
             idempotency.heartbeat_interval_ms ({})",
            self.node_dead_after_ms,
            self.heartbeat_interval_ms
        );
        anyhow::ensure!(
            self.lease_ms > 0 && self.retention_s > 0 && self.max_records > 0,
            "idempotency.lease_ms, retention_s and max_records must be positive"
        );
        anyhow::ensure!(
            self.prune_batch > 0,
            "idempotency.prune_batch must be positive"
        );
        Ok(())
    }

    pub fn retention_ms(&self) -> i64 {
        self.retention_s as i64 * 1000
    }

    /// This process's claims: a new incarnation, so claims of an earlier life are dead.
    pub fn claimant(&self) -> Claimant {
        Claimant {
            node: Incarnation::random(),
            lease_ms: self.lease_ms,
            dead_after_ms: self.node_dead_after_ms,
        }
    }

    pub fn upkeep(
        &self,
        stores: Vec<Arc<dyn IdempotencyStore>>,
        node: Incarnation,
        clock: Arc<dyn Clock>,
    ) -> ReplayUpkeep {
        ReplayUpkeep::new(stores, node, clock, self.retention_ms(), self.prune_batch)
    }
}

/// The heartbeat and pruning loops, until `stop`.
pub fn spawn_upkeep(
    upkeep: Arc<ReplayUpkeep>,
    config: &IdempotencyConfig,
    stop: watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let ms = Duration::from_millis;
    let (beat, prune) = (upkeep.clone(), upkeep);
    vec![
        tokio::spawn(run_every(
            "heartbeat",
            ms(config.heartbeat_interval_ms),
            stop.clone(),
            move || {
                let u = beat.clone();
                async move { u.heartbeat_step().await }
            },
        )),
        tokio::spawn(run_every(
            "replay-prune",
            ms(config.prune_interval_ms),
            stop,
            move || {
                let u = prune.clone();
                async move { u.prune_step().await }
            },
        )),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_node_bound_shorter_than_two_heartbeats_is_refused() {
        let ok = IdempotencyConfig::default();
        assert!(ok.check().is_ok());
        let tight = IdempotencyConfig {
            heartbeat_interval_ms: 6_000,
            ..ok
        };
        let e = tight.check().unwrap_err().to_string();
        assert!(e.contains("node_dead_after_ms"), "{e}");
    }
}
