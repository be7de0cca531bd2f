//! A cache of admission tokens already verified. Every hold presents one, and checking
//! it (base64, JSON, and HMAC or the far dearer Ed25519) is the largest piece of engine
//! work on the hold path; a token seen before is recognised by its exact text and
//! re-checked only for expiry.
//! Bounded: when full the cache is emptied, so a flood of distinct tokens costs memory
//! for at most `CAPACITY` of them.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

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

/// Tokens by their text, hashed by their last bytes only (`TailHasher`).
type Shard = Mutex<HashMap<Box<str>, Verified, BuildHasherDefault<TailHasher>>>;

pub(crate) struct VerifiedTokens {
    shards: [Shard; SHARDS],
}

/// How many of a token's last bytes its hash reads.
const TAIL: usize = 16;

/// Hashes a token by its last `TAIL` bytes: the end of its signature, which nobody
/// without the signing key can choose, so tokens in the cache (all of them verified)
/// spread evenly, while hashing a whole token with SipHash cost more than the rest of
/// the lookup. A client may send text that lands on a cached token's bucket, but that
/// only makes its own lookup compare against the few tokens there. Keys are equal by
/// their whole text as ever: the hash only picks the bucket.
#[derive(Default)]
struct TailHasher {
    hash: u64,
}

impl Hasher for TailHasher {
    fn write(&mut self, bytes: &[u8]) {
        let tail = &bytes[bytes.len().saturating_sub(TAIL)..];
        for chunk in tail.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }

    fn write_u64(&mut self, word: u64) {
        // FxHash's multiply-rotate step, as in rustc-hash.
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        // The multiply leaves the best bits at the top; the map indexes by the bottom.
        self.hash.rotate_left(26)
    }
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
