//! What proof-of-possession checks remember (docs/ARCHITECTURE.md, "Admission that
//! cannot change hands"): the ids of proofs already used, for the replay window, and
//! the key each hold was taken with, for as long as the hold can be paid for or
//! released. Kept beside the hot store (in process, or in Redis shared by the nodes):
//! holds live there, and so does what binds them.

use std::time::Duration;

use async_trait::async_trait;
use boxoffice_domain::possession::Thumbprint;
use boxoffice_domain::{EventId, HoldId};

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

    /// Records that `hold` was taken with key `jkt`, for `ttl`.
    async fn bind_hold(
        &self,
        hold: HoldId,
        jkt: &Thumbprint,
        ttl: Duration,
    ) -> Result<(), StoreError>;

    /// The key `hold` was taken with, if it was bound and the binding has not lapsed.
    async fn hold_key(&self, hold: HoldId) -> Result<Option<Thumbprint>, StoreError>;
}
