use async_trait::async_trait;
use boxoffice_domain::{BuyerId, EventId, Millis};
use serde::Serialize;

use super::StoreError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// 1-based, dense, unique per event.
    pub position: u64,
    /// False when the buyer was already in line (a retried join).
    pub new: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QueueState {
    /// Everyone at or below this position is admitted.
    pub serving_up_to: u64,
    pub queue_length: u64,
    pub sold_out: bool,
    /// When `serving_up_to` last moved.
    pub advanced_at: Millis,
}

/// The waiting room's state: who is where in line, and how far admission has come.
/// Losing it degrades fairness, never correctness.
#[async_trait]
pub trait QueueStore: Send + Sync {
    /// Places the buyer at the back of the line, or returns their existing place.
    async fn join(&self, event: EventId, buyer: BuyerId) -> Result<Place, StoreError>;
    async fn state(&self, event: EventId) -> Result<QueueState, StoreError>;
    /// Moves `serving_up_to` forward to `to` (never backwards, never past the line).
    async fn advance(&self, event: EventId, to: u64, now: Millis)
    -> Result<QueueState, StoreError>;
    async fn set_sold_out(&self, event: EventId, sold_out: bool) -> Result<(), StoreError>;
    async fn drop_event(&self, event: EventId) -> Result<(), StoreError>;
}
