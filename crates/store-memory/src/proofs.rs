//! `MemoryProofs`: the proof-of-possession memory of the embedded mode (the port is
//! `ProofMemory`): proof ids seen in the replay window, in this process.
//!
//! Bounded in count: each event remembers at most `max_per_event` proof ids. At the
//! cap, lapsed entries are swept out first; if none has lapsed the call answers
//! `Full`, never forgetting an id still inside its window, which would let it be
//! replayed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use boxoffice_domain::EventId;
use boxoffice_domain::possession::Thumbprint;
use boxoffice_engine::ports::{FirstUse, ProofMemory, StoreError};
use parking_lot::Mutex;
use sha2::{Digest, Sha256};

/// Most proof ids per event unless configured otherwise.
pub const MAX_REMEMBERED: usize = 1_000_000;

pub struct MemoryProofs {
    /// Per event: a digest of (key, proof id) → when it may be forgotten.
    seen: Mutex<HashMap<EventId, HashMap<[u8; 16], Instant>>>,
    max: usize,
}

impl Default for MemoryProofs {
    fn default() -> Self {
        MemoryProofs::new(MAX_REMEMBERED)
    }
}

impl MemoryProofs {
    pub fn new(max: usize) -> Self {
        MemoryProofs {
            seen: Mutex::default(),
            max: max.max(1),
        }
    }
}

/// A fixed-size digest, so a long id costs no more memory than a short one.
fn digest(jkt: &Thumbprint, jti: &str) -> [u8; 16] {
    let mut h = Sha256::new();
    h.update(jkt.as_str().as_bytes());
    h.update([0]);
    h.update(jti.as_bytes());
    let full = h.finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&full[..16]);
    out
}

#[async_trait]
impl ProofMemory for MemoryProofs {
    async fn first_use(
        &self,
        event: EventId,
        jkt: &Thumbprint,
        jti: &str,
        ttl: Duration,
    ) -> Result<FirstUse, StoreError> {
        let now = Instant::now();
        let id = digest(jkt, jti);
        let mut seen = self.seen.lock();
        let ids = seen.entry(event).or_default();
        if ids.get(&id).is_some_and(|until| *until > now) {
            return Ok(FirstUse::Replayed);
        }
        if ids.len() >= self.max {
            ids.retain(|_, until| *until > now);
            if ids.len() >= self.max {
                return Ok(FirstUse::Full);
            }
        }
        ids.insert(id, now + ttl);
        Ok(FirstUse::Fresh)
    }
}
