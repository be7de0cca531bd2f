use async_trait::async_trait;
use boxoffice_domain::Millis;
use serde::{Deserialize, Serialize};

use super::StoreError;

/// A finished response kept for replays.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Begin {
    /// First time: the caller runs the request and then calls `finish` (or `abandon`).
    Proceed,
    /// Done before: send this again.
    Replay(StoredResponse),
    /// The same key was used for a different request.
    Mismatch,
    /// The first request with this key is still running.
    InFlight,
}

/// Remembers `Idempotency-Key`s. `scope` separates callers (a buyer, the operator).
/// A claim that is never finished lapses after `lease_ms` so a crash cannot wedge a key.
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    async fn begin(
        &self,
        scope: &str,
        key: &str,
        fingerprint: &[u8; 32],
        now: Millis,
        lease_ms: i64,
    ) -> Result<Begin, StoreError>;
    async fn finish(
        &self,
        scope: &str,
        key: &str,
        response: &StoredResponse,
    ) -> Result<(), StoreError>;
    /// Forgets an unfinished claim so a retry runs again (used when the request failed
    /// in a way that changed nothing, e.g. the store was unavailable).
    async fn abandon(&self, scope: &str, key: &str) -> Result<(), StoreError>;
}
