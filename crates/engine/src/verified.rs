//! A cache of admission tokens already verified. Every hold presents one, and checking
//! it (base64, JSON, and HMAC or the far dearer Ed25519) is the largest piece of engine
//! work on the hold path; a token seen before is recognised by its exact text and
//! re-checked only for expiry.
//! Bounded: when full the cache is emptied, so a flood of distinct tokens costs memory
//! for at most `CAPACITY` of them.

use std::collections::HashMap;

use boxoffice_domain::{BuyerId, EventId, Millis};
use parking_lot::Mutex;

const CAPACITY: usize = 200_000;

#[derive(Clone)]
pub(crate) struct Verified {
    pub event: EventId,
    pub buyer: BuyerId,
    pub session: String,
    pub exp: Millis,
    /// The key the token is bound to (`cnf.jkt`), if any.
    pub key: Option<boxoffice_domain::possession::Thumbprint>,
}

/// Independent shards, so a shard's map growing (and copying itself) holds up only the
/// requests that land on that shard.
const SHARDS: usize = 16;

pub(crate) struct VerifiedTokens {
    shards: [Mutex<HashMap<Box<str>, Verified>>; SHARDS],
}

impl Default for VerifiedTokens {
    fn default() -> Self {
        VerifiedTokens {
            shards: std::array::from_fn(|_| Mutex::default()),
        }
    }
}

impl VerifiedTokens {
    /// A token ends with its signature, so its last characters spread tokens evenly
    /// (the very last one of a base64 HMAC carries only a few bits).
    fn shard(&self, token: &str) -> &Mutex<HashMap<Box<str>, Verified>> {
        let tail = &token.as_bytes()[token.len().saturating_sub(8)..];
        let h = tail
            .iter()
            .fold(0usize, |h, &b| h.wrapping_mul(31).wrapping_add(b as usize));
        &self.shards[h % SHARDS]
    }

    /// The verified claims of `token`, if it was verified before and is still valid.
    pub fn get(&self, token: &str, now: Millis) -> Option<Verified> {
        self.shard(token)
            .lock()
            .get(token)
            .filter(|v| v.exp > now)
            .cloned()
    }

    pub fn insert(&self, token: &str, verified: Verified) {
        let mut map = self.shard(token).lock();
        if map.len() >= CAPACITY / SHARDS {
            map.clear();
        }
        map.insert(token.into(), verified);
    }
}
