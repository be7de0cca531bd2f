//! The expiry worker: returns the seats of holds whose time ran out. The hot store does
//! the expiry and the return to stock in one atomic step, so each seat comes back once.
//! With several nodes sharing the hot store, one node at a time sweeps each event
//! (`Engine::holds_sweep`, a lease per event in the hot store).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use boxoffice_domain::EventId;
use parking_lot::Mutex;

use crate::worker::Outcome;
use crate::{Engine, EngineError};

/// Holds expired per event per step, so one busy event cannot starve the others.
const BATCH: usize = 1_000;

/// How long one node keeps an event's sweep before it must renew it: several worker
/// periods, so the holder renews it long before it lapses; a holder that dies delays
/// the sweep by at most this (a hold or pin on the event expires due holds meanwhile).
const SWEEP_LEASE_MS: u64 = 5_000;

/// The periodic sweeps that one node at a time runs per event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Sweep {
    Expiry,
    Drift,
}

impl Sweep {
    fn name(self) -> &'static str {
        match self {
            Sweep::Expiry => "expiry",
            Sweep::Drift => "drift",
        }
    }
}

/// Per node: until when another node holds a sweep, so this one does not even ask.
#[derive(Default)]
pub(crate) struct Leases {
    elsewhere: Mutex<HashMap<(EventId, Sweep), Instant>>,
    node: std::sync::OnceLock<String>,
}

impl Engine {
    /// Whether this node runs `sweep` on `event` now: it holds the event's lease (taken
    /// or renewed here), or nobody else does. A node that lost the race asks again only
    /// once the holder's lease may have lapsed, so the sweep's cost in the hot store
    /// does not grow with the number of nodes.
    pub(crate) async fn holds_sweep(
        &self,
        event: EventId,
        sweep: Sweep,
    ) -> Result<bool, EngineError> {
        let key = (event, sweep);
        if let Some(until) = self.leases.elsewhere.lock().get(&key)
            && Instant::now() < *until
        {
            return Ok(false);
        }
        let node = self.leases.node.get_or_init(|| self.incarnation.to_hex());
        let lease = self
            .ports
            .arbiter
            .sweep_lease(event, sweep.name(), node, SWEEP_LEASE_MS)
            .await?;
        let mut elsewhere = self.leases.elsewhere.lock();
        match lease {
            None => {
                elsewhere.remove(&key);
                Ok(true)
            }
            Some(left_ms) => {
                let until = Instant::now() + Duration::from_millis(left_ms);
                elsewhere.insert(key, until);
                Ok(false)
            }
        }
    }
}

impl Engine {
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn expiry_step(&self) -> Result<Outcome, EngineError> {
        let now = self.now();
        let mut done = 0;
        let open = self.open_events().await?;
        self.sync_catalog(&open).await?;
        for event in open {
            // One node sweeps each event; its metrics below are that node's to export.
            if !self.holds_sweep(event, Sweep::Expiry).await? {
                continue;
            }
            // A shared hot store can lose an event (flush, failover): rebuild it (P5).
            if !self.ports.arbiter.is_loaded(event).await? {
                self.rebuild_lost(event).await?;
            }
            let expired = self.ports.arbiter.expire_due(event, now, BATCH).await?;
            done += expired.len();
            // Counted as soon as the seats are free again, not after the other events.
            metrics::counter!("boxoffice_holds_expired_total").increment(expired.len() as u64);
            if let Ok(c) = self.ports.arbiter.counts(event).await {
                let id = event.to_string();
                metrics::gauge!("boxoffice_active_holds", "event" => id.clone())
                    .set(c.active_holds as f64);
                metrics::gauge!("boxoffice_seats_sold", "event" => id.clone()).set(c.sold as f64);
                metrics::gauge!("boxoffice_seats_free", "event" => id).set(c.free as f64);
            }
        }
        Ok(Outcome { done })
    }
}
