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
/// process (Idempotency-Keys and request fingerprints): SipHash-2-4 with its 128-bit
/// output, under a secret key drawn at random for each store. SipHash is a
/// pseudorandom function: without the key a client cannot choose two texts that meet,
/// which is all these names need, at a small part of SHA-256's cost. One pass gives
/// the 128 bits (the digest was two 64-bit SipHash passes under two keys).
pub struct Keyed {
    key: (u64, u64),
}

impl Keyed {
    pub fn random() -> Keyed {
        Keyed {
            key: rand::random(),
        }
    }

    /// The digest of `parts`, one after the other.
    pub fn digest(&self, parts: &[&[u8]]) -> [u8; 16] {
        let (a, b) = Sip::digest(self.key, true, parts);
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&a.to_le_bytes());
        out[8..].copy_from_slice(&b.to_le_bytes());
        out
    }

    /// SipHash-2-4's 64-bit digest of `parts`, for names compared only among a few
    /// texts (a replay record's fingerprint is compared only with its own key's retries).
    pub fn digest64(&self, parts: &[&[u8]]) -> [u8; 8] {
        Sip::digest(self.key, false, parts).0.to_le_bytes()
    }
}

/// SipHash-2-4 (Aumasson and Bernstein), 64- or 128-bit output, over parts read as one
/// text. `std`'s `SipHasher` gives only the 64-bit output.
struct Sip {
    v: [u64; 4],
    /// Bytes not yet compressed (fewer than 8), little-endian from the low byte.
    tail: u64,
    ntail: usize,
    len: usize,
}

impl Sip {
    fn digest((k0, k1): (u64, u64), wide: bool, parts: &[&[u8]]) -> (u64, u64) {
        let mut s = Sip {
            v: [
                k0 ^ 0x736f_6d65_7073_6575,
                k1 ^ 0x646f_7261_6e64_6f6d ^ if wide { 0xee } else { 0 },
                k0 ^ 0x6c79_6765_6e65_7261,
                k1 ^ 0x7465_6462_7974_6573,
            ],
            tail: 0,
            ntail: 0,
            len: 0,
        };
        for part in parts {
            s.write(part);
        }
        s.finish(wide)
    }

    fn write(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len();
        if self.ntail > 0 {
            while self.ntail < 8 {
                let Some((&b, rest)) = bytes.split_first() else {
                    return;
                };
                self.tail |= u64::from(b) << (8 * self.ntail);
                self.ntail += 1;
                bytes = rest;
            }
            self.compress(self.tail);
            (self.tail, self.ntail) = (0, 0);
        }
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.compress(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        for (i, &b) in words.remainder().iter().enumerate() {
            self.tail |= u64::from(b) << (8 * i);
        }
        self.ntail = words.remainder().len();
    }

    fn compress(&mut self, m: u64) {
        self.v[3] ^= m;
        self.round();
        self.round();
        self.v[0] ^= m;
    }

    fn finish(mut self, wide: bool) -> (u64, u64) {
        self.compress(((self.len as u64) << 56) | self.tail);
        self.v[2] ^= if wide { 0xee } else { 0xff };
        let first = self.rounds4();
        if !wide {
            return (first, 0);
        }
        self.v[1] ^= 0xdd;
        (first, self.rounds4())
    }

    fn rounds4(&mut self) -> u64 {
        for _ in 0..4 {
            self.round();
        }
        self.v.iter().fold(0, |acc, v| acc ^ v)
    }

    #[inline(always)]
    fn round(&mut self) {
        let [v0, v1, v2, v3] = &mut self.v;
        *v0 = v0.wrapping_add(*v1);
        *v1 = v1.rotate_left(13) ^ *v0;
        *v0 = v0.rotate_left(32);
        *v2 = v2.wrapping_add(*v3);
        *v3 = v3.rotate_left(16) ^ *v2;
        *v0 = v0.wrapping_add(*v3);
        *v3 = v3.rotate_left(21) ^ *v0;
        *v2 = v2.wrapping_add(*v1);
        *v1 = v1.rotate_left(17) ^ *v2;
        *v2 = v2.rotate_left(32);
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
        assert_ne!(keyed.digest64(&[b"abc"]), keyed.digest64(&[b"abd"]));
    }

    /// The reference key 00 01 .. 0f and message 00 01 .. (n - 1).
    fn reference() -> (Keyed, [u8; 64]) {
        let key: [u8; 16] = std::array::from_fn(|i| i as u8);
        let half = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap());
        let keyed = Keyed {
            key: (half(&key[..8]), half(&key[8..])),
        };
        (keyed, std::array::from_fn(|i| i as u8))
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn the_digest_is_siphash_2_4_128_on_the_reference_vectors_in_any_split() {
        // SipHash's reference vectors (vectors.h, `vectors_sip128`): row n is the
        // digest of the first n bytes.
        let rows = [
            (0, "a3817f04ba25a8e66df67214c7550293"),
            (1, "da87c1d86b99af44347659119b22fc45"),
            (7, "a1f1ebbed8dbc153c0b84aa61ff08239"),
            (8, "3b62a9ba6258f5610f83e264f31497b4"),
            (9, "264499060ad9baabc47f8b02bb6d71ed"),
            (15, "5493e99933b0a8117e08ec0f97cfc3d9"),
            (16, "6ee2a4ca67b054bbfd3315bf85230577"),
            (17, "473d06e8738db89854c066c47ae47740"),
            (63, "5150d1772f50834a503e069a973fbd7c"),
        ];
        let (keyed, msg) = reference();
        for (n, want) in rows {
            let text = &msg[..n];
            assert_eq!(hex(&keyed.digest(&[text])), want, "{n} bytes");
            // The same text in parts split anywhere, with empty parts among them.
            for cut in 0..=n {
                let (a, b) = text.split_at(cut);
                assert_eq!(
                    hex(&keyed.digest(&[a, b"", b])),
                    want,
                    "{n} bytes cut at {cut}"
                );
            }
        }
    }

    #[test]
    fn the_short_digest_is_siphash_2_4_64_as_std_computes_it() {
        let (keyed, msg) = reference();
        for n in [0, 1, 7, 8, 9, 15, 16, 17, 63] {
            #[allow(deprecated)]
            let mut std = std::hash::SipHasher::new_with_keys(keyed.key.0, keyed.key.1);
            std.write(&msg[..n]);
            let (a, b) = msg[..n].split_at(n / 3);
            assert_eq!(
                keyed.digest64(&[a, b]),
                std.finish().to_le_bytes(),
                "{n} bytes"
            );
        }
    }
}
