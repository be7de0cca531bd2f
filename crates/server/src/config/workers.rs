//! `[workers]`: how often each background worker runs its step. The admission tick is
//! the one exception: `engine.admission_interval_ms` also sets how many buyers one
//! batch admits (rate × interval), so it is a rule of the sale and lives in `[engine]`.

use serde::Deserialize;

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerConfig {
    /// How often expired holds are swept and their seats returned. Default 1,000 ms.
    pub expiry_interval_ms: u64,
    /// How often unfinished orders are driven on (the recovery sweep). Default 5,000 ms.
    pub recovery_interval_ms: u64,
    /// How often seats the ledger sold but the hot store still offers or holds are
    /// marked sold there (`boxoffice_drift_repairs_total` counts them). Default 30,000 ms.
    pub drift_repair_interval_ms: u64,
    /// How often this node records that it is alive, so its claims on
    /// Idempotency-Keys are not taken over; `idempotency.node_dead_after_ms` must be
    /// at least twice this. Default 2,000 ms.
    pub heartbeat_interval_ms: u64,
    /// How often replay records older than `idempotency.retention_s` are pruned.
    /// Default 60,000 ms.
    pub replay_prune_interval_ms: u64,
    /// How often the refund jobs of cancelled events take their next page of orders
    /// (a page that did work is followed at once by the next). Default 1,000 ms.
    pub event_cancel_interval_ms: u64,
    /// How often the outbox relay looks for order events to deliver when it has none
    /// in hand (a busy relay goes on at once). Default 500 ms.
    pub relay_interval_ms: u64,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            expiry_interval_ms: 1_000,
            recovery_interval_ms: 5_000,
            drift_repair_interval_ms: 30_000,
            heartbeat_interval_ms: 2_000,
            replay_prune_interval_ms: 60_000,
            event_cancel_interval_ms: 1_000,
            relay_interval_ms: 500,
        }
    }
}

impl WorkerConfig {
    /// A period of zero would spin (and the timer refuses it): every one must be
    /// at least 1 ms.
    pub fn check(&self) -> anyhow::Result<()> {
        let periods = [
            ("expiry_interval_ms", self.expiry_interval_ms),
            ("recovery_interval_ms", self.recovery_interval_ms),
            ("drift_repair_interval_ms", self.drift_repair_interval_ms),
            ("heartbeat_interval_ms", self.heartbeat_interval_ms),
            ("replay_prune_interval_ms", self.replay_prune_interval_ms),
            ("event_cancel_interval_ms", self.event_cancel_interval_ms),
            ("relay_interval_ms", self.relay_interval_ms),
        ];
        match periods.iter().find(|(_, ms)| *ms == 0) {
            Some((name, _)) => anyhow::bail!("workers.{name} must be at least 1"),
            None => Ok(()),
        }
    }
}
