//! The expiry worker: returns the seats of holds whose time ran out. The hot store does
//! the expiry and the return to stock in one atomic step, so each seat comes back once.

use crate::worker::Outcome;
use crate::{Engine, EngineError};

/// Holds expired per event per step, so one busy event cannot starve the others.
const BATCH: usize = 1_000;

impl Engine {
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn expiry_step(&self) -> Result<Outcome, EngineError> {
        let now = self.now();
        let mut done = 0;
        let open = self.open_events().await?;
        self.sync_catalog(&open).await?;
        for event in open {
            // A shared hot store can lose an event (flush, failover): rebuild it (P5).
            if !self.ports.arbiter.is_loaded(event).await? {
                self.rebuild_lost(event).await?;
            }
            let expired = self.ports.arbiter.expire_due(event, now, BATCH).await?;
            done += expired.len();
            if let Ok(c) = self.ports.arbiter.counts(event).await {
                let id = event.to_string();
                metrics::gauge!("boxoffice_active_holds", "event" => id.clone())
                    .set(c.active_holds as f64);
                metrics::gauge!("boxoffice_seats_sold", "event" => id.clone()).set(c.sold as f64);
                metrics::gauge!("boxoffice_seats_free", "event" => id).set(c.free as f64);
            }
        }
        metrics::counter!("boxoffice_holds_expired_total").increment(done as u64);
        Ok(Outcome { done })
    }
}
