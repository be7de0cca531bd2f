//! The verifiable pre-opening pool: the seed is drawn (first writer wins across nodes)
//! before anyone can see the pool, its hash is published, and at opening the pool is
//! ordered by `HMAC(seed, buyer_id)` and placed ahead of later arrivals. Once placed,
//! the seed and the pool's members are public, so anyone can recompute every position.

use boxoffice_domain::fairness::{Seed, order_pool};
use boxoffice_domain::{EventId, SaleStatus};
use serde::Serialize;

use super::settings::SEED;
use crate::{Engine, EngineError};

/// The proof of an event's pre-opening draw (GET /v1/events/{id}/queue/fairness).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Fairness)]
pub struct FairnessView {
    pub event_id: EventId,
    /// `hex(sha256(seed))`, published before opening.
    pub commitment: String,
    /// The seed in hex, once the pool is placed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
    /// Buyers who joined before opening.
    pub pool_size: u64,
    /// The pool has its drawn positions.
    pub placed: bool,
    /// How to recompute the order from this document alone.
    pub algorithm: &'static str,
    /// Where this page of the pool starts.
    pub pool_offset: u64,
    /// Pool members (buyer ids, arrival order) from `pool_offset`, once placed.
    pub pool: Vec<String>,
}

const ALGORITHM: &str = "check sha256(seed) == commitment; draw(b) = HMAC-SHA256(key = the \
    32 seed bytes, message = b as lowercase hyphenated UUID text); the pool sorted by \
    (draw, buyer id text) ascending takes positions 1..=pool_size; later arrivals follow \
    in arrival order. `boxoffice verify-position` does this.";

impl Engine {
    /// The event's seed, drawn now if no node has drawn it yet. The ledger keeps it for
    /// good (first writer wins), so a restart or a lost queue store never draws another
    /// one behind a published commitment; the queue store's copy spares the ledger a
    /// read per join.
    pub(crate) async fn fairness_seed(&self, event: EventId) -> Result<Seed, EngineError> {
        let stored = match self.ports.queue.settings(event).await?.remove(SEED) {
            Some(seed) => seed,
            None => {
                let mut bytes = [0u8; 32];
                bytes[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
                bytes[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
                let fresh = Seed(bytes).to_hex();
                let kept = self.ports.ledger.fairness_seed(event, &fresh).await?;
                self.ports
                    .queue
                    .set_setting(event, SEED, &kept, false)
                    .await?
            }
        };
        Seed::from_hex(&stored)
            .map_err(|_| EngineError::Internal(format!("unreadable seed for event {event}")))
    }

    /// At start-up, for each event not yet open: a queue store that lost the
    /// pre-opening pool (the in-process one at every restart) gets it back from the
    /// ledger, in arrival order. Returns how many buyers came back.
    pub async fn restore_pools(&self) -> Result<usize, EngineError> {
        let mut back = 0;
        for event in self
            .ports
            .ledger
            .events_with_status(SaleStatus::Scheduled)
            .await?
        {
            if self.ports.queue.state(event).await?.queue_length > 0 {
                continue;
            }
            for buyer in self.ports.ledger.pool_joins(event).await? {
                self.ports.queue.join(event, buyer, false).await?;
                back += 1;
            }
        }
        Ok(back)
    }

    /// Seals and places the pool if that has not happened yet. Safe to run on every
    /// node and every tick: the seed is shared and placing twice changes nothing.
    pub(crate) async fn place_pool(&self, event: EventId) -> Result<(), EngineError> {
        let pool = self.ports.queue.seal_pool(event).await?;
        let state = self.ports.queue.state(event).await?;
        if state.placed {
            return Ok(());
        }
        let seed = self.fairness_seed(event).await?;
        let ordered = order_pool(&seed, &pool);
        self.ports.queue.place_pool(event, &ordered).await?;
        tracing::info!(event = %event, pool = ordered.len(), "pre-opening pool placed");
        Ok(())
    }

    pub async fn fairness(
        &self,
        event: EventId,
        offset: u64,
        limit: u64,
    ) -> Result<FairnessView, EngineError> {
        self.event(event).await?;
        let seed = self.fairness_seed(event).await?;
        let state = self.ports.queue.state(event).await?;
        // Past the end there is nothing to read, however large the offset asked.
        let pool = if state.placed && offset < state.pool_size {
            self.ports.queue.pool_members(event, offset, limit).await?
        } else {
            Vec::new()
        };
        Ok(FairnessView {
            event_id: event,
            commitment: seed.commitment(),
            seed: state.placed.then(|| seed.to_hex()),
            pool_size: state.pool_size,
            placed: state.placed,
            algorithm: ALGORITHM,
            pool_offset: offset,
            pool: pool.iter().map(ToString::to_string).collect(),
        })
    }
}
