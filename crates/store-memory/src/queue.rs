//! `InMemoryQueue`: the waiting room's line for the embedded deployment.
//!
//! One map of buyer → position per event behind its own mutex. A `HashMap<BuyerId, u64>`
//! costs about 40 bytes per buyer once growth slack is counted (16-byte key, 8-byte
//! value, control byte, load factor ≤ 7/8, capacity doubling), so 2,000,000 buyers fit
//! in well under 100 MB.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use boxoffice_domain::{BuyerId, EventId, Millis};
use boxoffice_engine::ports::{Place, QueueState, QueueStore, StoreError};
use parking_lot::{Mutex, RwLock};

use crate::hash::FxHashMap;

#[derive(Default)]
struct Line {
    /// Buyer ids are minted by the server, so the fast hasher is safe here.
    positions: FxHashMap<BuyerId, u64>,
    state: QueueState,
}

#[derive(Default)]
pub struct InMemoryQueue {
    events: RwLock<HashMap<EventId, Arc<Mutex<Line>>>>,
}

impl InMemoryQueue {
    pub fn new() -> Self {
        Self::default()
    }

    fn line(&self, event: EventId) -> Arc<Mutex<Line>> {
        if let Some(line) = self.events.read().get(&event) {
            return line.clone();
        }
        self.events.write().entry(event).or_default().clone()
    }

    fn existing(&self, event: EventId) -> Option<Arc<Mutex<Line>>> {
        self.events.read().get(&event).cloned()
    }
}

#[async_trait]
impl QueueStore for InMemoryQueue {
    async fn join(&self, event: EventId, buyer: BuyerId) -> Result<Place, StoreError> {
        let line = self.line(event);
        let mut line = line.lock();
        let next = line.state.queue_length + 1;
        let position = *line.positions.entry(buyer).or_insert(next);
        let new = position == next;
        if new {
            line.state.queue_length = next;
        }
        Ok(Place { position, new })
    }

    async fn state(&self, event: EventId) -> Result<QueueState, StoreError> {
        Ok(self
            .existing(event)
            .map(|l| l.lock().state)
            .unwrap_or_default())
    }

    async fn advance(
        &self,
        event: EventId,
        to: u64,
        now: Millis,
    ) -> Result<QueueState, StoreError> {
        // Nobody in line means nothing to advance; do not create a line for it.
        let Some(line) = self.existing(event) else {
            return Ok(QueueState::default());
        };
        let mut line = line.lock();
        let target = to.min(line.state.queue_length);
        if target > line.state.serving_up_to {
            line.state.serving_up_to = target;
            line.state.advanced_at = now;
        }
        Ok(line.state)
    }

    async fn set_sold_out(&self, event: EventId, sold_out: bool) -> Result<(), StoreError> {
        self.line(event).lock().state.sold_out = sold_out;
        Ok(())
    }

    async fn drop_event(&self, event: EventId) -> Result<(), StoreError> {
        self.events.write().remove(&event);
        Ok(())
    }
}
