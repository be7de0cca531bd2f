//! A cache of admission tokens already verified. Every hold presents one, and checking
//! it (base64, JSON, and HMAC or the far dearer Ed25519) is the largest piece of engine
//! work on the hold path; a token seen before is recognised by its exact text and
//! re-checked only for expiry.
//! Bounded: when full the cache is emptied, so a flood of distinct tokens costs memory
//! for at most `CAPACITY` of them.

use boxoffice_domain::{BuyerId, EventId, Millis};
use parking_lot::Mutex;

use crate::tail_hash::TailMap;

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

/// Tokens by their text, hashed by their last bytes only (`TailHasher`): the end of a
/// signature, which nobody without the signing key can choose, so the tokens in the
/// cache (all of them verified) spread evenly. A client may send text that lands on a
/// cached token's bucket, but that only makes its own lookup compare against the few
/// tokens there: keys are equal by their whole text as ever.
type Shard = Mutex<TailMap<Box<str>, Verified>>;

pub(crate) struct VerifiedTokens {
    shards: [Shard; SHARDS],
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
    fn shard(&self, token: &str) -> &Shard {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tail_hash::TAIL;

    fn verified(exp: i64) -> Verified {
        Verified {
            event: EventId(1),
            buyer: BuyerId::random(),
            session: "s".into(),
            exp: Millis(exp),
            key: None,
        }
    }

    #[test]
    fn a_token_is_found_by_its_whole_text_not_by_its_tail() {
        let cache = VerifiedTokens::default();
        let tail = "x".repeat(TAIL);
        let (a, b) = (format!("aaaa.{tail}"), format!("bbbb.{tail}"));
        cache.insert(&a, verified(10));
        assert!(cache.get(&a, Millis(5)).is_some());
        assert!(
            cache.get(&b, Millis(5)).is_none(),
            "same tail, another token"
        );
        assert!(cache.get(&a, Millis(10)).is_none(), "expired");
        cache.insert(&b, verified(10));
        assert!(cache.get(&a, Millis(5)).is_some() && cache.get(&b, Millis(5)).is_some());
        assert!(cache.get("", Millis(5)).is_none());
    }
}
