//! What proof-of-possession checks remember (docs/ARCHITECTURE.md, "Admission that
//! cannot change hands"): the ids of proofs already used, for the replay window. Kept
//! beside the hot store (in process, or in Redis shared by the nodes). The key a hold
//! answers to is not here: it is on the hold itself (`HoldRequest::key`), so it lives
//! exactly as long as the hold.

use std::time::Duration;

use async_trait::async_trait;
use boxoffice_domain::EventId;
use boxoffice_domain::possession::Thumbprint;

use super::StoreError;

/// What remembering a proof's id found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirstUse {
    /// Never seen in the window: remembered now.
    Fresh,
    /// Seen before: a replayed proof.
    Replayed,
    /// The memory holds its most ids for this event and window: nothing remembered.
    Full,
}

#[async_trait]
pub trait ProofMemory: Send + Sync {
    /// Remembers proof id `jti` of key `jkt` for an event, for `ttl`, unless it is
    /// remembered already. Atomic: of two racing calls with one id, one is `Fresh`.
    async fn first_use(
        &self,
        event: EventId,
        jkt: &Thumbprint,
        jti: &str,
        ttl: Duration,
    ) -> Result<FirstUse, StoreError>;
}
