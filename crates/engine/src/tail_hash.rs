//! A cheap hasher for the engine's hot maps, in place of SipHash, whose cost on every
//! hold was more than the rest of these lookups. It reads numbers whole and text by its
//! last `TAIL` bytes only, so it is for maps whose keys nobody outside can choose or
//! whose text ends in what nobody can choose: events by id (only events the ledger made
//! are kept; a lookup of any other id only probes) and verified tokens by their text
//! (see `verified`). The hash only picks the bucket: keys are still compared whole.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// How many of a text's last bytes its hash reads.
pub(crate) const TAIL: usize = 16;

pub(crate) type TailMap<K, V> = HashMap<K, V, BuildHasherDefault<TailHasher>>;

#[derive(Default)]
pub(crate) struct TailHasher {
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

    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64);
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
