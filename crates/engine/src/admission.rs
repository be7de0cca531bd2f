//! Admission: each tick moves an open event's "serving up to" forward by one batch
//! (rate × interval, a token bucket that refills per tick), and keeps the sold-out flag
//! in step with the inventory: when nothing is free the whole line is told at once, and
//! told again if expired holds return seats.

use boxoffice_domain::EventId;

use crate::worker::Outcome;
use crate::{Engine, EngineError};

impl Engine {
    pub async fn admission_step(&self) -> Result<Outcome, EngineError> {
        for event in self.open_events().await? {
            // One event's trouble must not stall the others' lines.
            if let Err(e) = self.admit_batch(event).await {
                tracing::warn!(event = %event, error = %e, "admission batch failed");
            }
        }
        // Admission runs on a clock, not on a backlog: always report idle so the loop waits.
        Ok(Outcome::default())
    }

    /// Admits the next batch of one event; returns whether the line moved.
    pub async fn admit_batch(&self, event: EventId) -> Result<bool, EngineError> {
        let entry = self.event(event).await?;
        let now = self.now();
        let counts = self.ports.arbiter.counts(event).await?;
        let sold_out = counts.free == 0;
        let state = self.ports.queue.state(event).await?;
        if state.sold_out != sold_out {
            self.ports.queue.set_sold_out(event, sold_out).await?;
        }
        if sold_out || state.serving_up_to >= state.queue_length {
            return Ok(false);
        }
        let rate = entry.event.sale.admission_rate_per_s as u64;
        let batch = (rate * self.config.admission_interval_ms)
            .div_ceil(1000)
            .max(1);
        let to = state.serving_up_to.saturating_add(batch);
        let after = self.ports.queue.advance(event, to, now).await?;
        Ok(after.serving_up_to > state.serving_up_to)
    }
}
