//! A fast, non-cryptographic hasher for the hot maps (holds by id, counts by buyer).
//!
//! The standard SipHash costs more than the rest of a hold put together. Every key hashed
//! here is minted by the server (random hold nonces, UUID buyer ids, numeric event ids),
//! so a client cannot choose keys to flood one bucket; do not use it for client text
//! (client text is first digested under a secret key: `Keyed`).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FxHash-style multiply-rotate, as in rustc-hash.
#[derive(Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_u128(&mut self, i: u128) {
        self.add(i as u64);
        self.add((i >> 64) as u64);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // The multiply leaves the best bits at the top; hashbrown indexes by the bottom.
        self.hash.rotate_left(26)
    }
}

pub type FxHashMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// A keyed 128-bit digest for client text that names records living only in this
/// process (Idempotency-Keys and request fingerprints): SipHash-2-4 under two secret
/// keys drawn at random for each store. SipHash is a pseudorandom function: without
/// the keys a client cannot choose two texts that meet, which is all these names need,
/// at a small part of SHA-256's cost.
pub struct Keyed {
    keys: [(u64, u64); 2],
}

impl Keyed {
    pub fn random() -> Keyed {
        let k: [u64; 4] = rand::random();
        Keyed {
            keys: [(k[0], k[1]), (k[2], k[3])],
        }
    }

    /// The digest of `parts`, one after the other.
    pub fn digest(&self, parts: &[&[u8]]) -> [u8; 16] {
        let mut out = [0u8; 16];
        for (half, &keys) in out.chunks_exact_mut(8).zip(&self.keys) {
            half.copy_from_slice(&Self::half(keys, parts).to_le_bytes());
        }
        out
    }

    /// The first 64 bits of `digest`, for names compared only among a few texts (a
    /// replay record's fingerprint is compared only with its own key's retries).
    pub fn digest64(&self, parts: &[&[u8]]) -> [u8; 8] {
        Self::half(self.keys[0], parts).to_le_bytes()
    }

    fn half((k0, k1): (u64, u64), parts: &[&[u8]]) -> u64 {
        // SipHash-2-4 itself is what is wanted, not the process's RandomState
        // (SipHash-1-3, with related keys across instances): the deprecation only
        // steers hash maps elsewhere.
        #[allow(deprecated)]
        let mut h = std::hash::SipHasher::new_with_keys(k0, k1);
        for part in parts {
            h.write(part);
        }
        h.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keyed_digest_reads_its_parts_as_one_text_and_depends_on_its_keys() {
        let keyed = Keyed::random();
        assert_eq!(keyed.digest(&[b"ab", b"c"]), keyed.digest(&[b"a", b"bc"]));
        assert_ne!(keyed.digest(&[b"abc"]), keyed.digest(&[b"abd"]));
        assert_ne!(keyed.digest(&[b"abc"]), Keyed::random().digest(&[b"abc"]));
        assert_eq!(keyed.digest64(&[b"abc"]), keyed.digest(&[b"abc"])[..8]);
    }
}
