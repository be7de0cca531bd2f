//! The verifiable shuffle of the pre-opening pool (docs/ARCHITECTURE.md P7).
//!
//! Everyone who joins before the sale opens lands in one pool. At opening the pool is
//! ordered by `HMAC-SHA256(key = seed, message = buyer id in its hyphenated text form)`,
//! ascending, ties broken by the buyer id's text; the pool takes positions 1..=P and
//! later arrivals append. `sha256(seed)` is published before opening (so the seed cannot
//! be chosen after seeing the pool) and the seed after (so anyone can recompute the
//! order from the published pool alone). Every function here is pure.

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::ids::BuyerId;

/// The secret that orders one event's pre-opening pool: 32 random bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Seed(pub [u8; 32]);

/// A buyer's draw: the HMAC the pool is sorted by.
pub type Draw = [u8; 32];

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("a seed is 64 hex digits")]
pub struct BadSeed;

impl Seed {
    /// What is published before opening: `hex(sha256(seed))`.
    pub fn commitment(&self) -> String {
        hex(&Sha256::digest(self.0))
    }

    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    pub fn from_hex(s: &str) -> Result<Seed, BadSeed> {
        let bytes = s.as_bytes();
        if bytes.len() != 64 {
            return Err(BadSeed);
        }
        let mut out = [0u8; 32];
        for (i, pair) in bytes.chunks(2).enumerate() {
            let text = std::str::from_utf8(pair).map_err(|_| BadSeed)?;
            out[i] = u8::from_str_radix(text, 16).map_err(|_| BadSeed)?;
        }
        Ok(Seed(out))
    }

    /// Whether `commitment` is this seed's published hash.
    pub fn matches(&self, commitment: &str) -> bool {
        self.commitment().eq_ignore_ascii_case(commitment)
    }
}

// The seed is a secret until opening: never print it by accident.
impl fmt::Debug for Seed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Seed(commitment {})", self.commitment())
    }
}

/// The buyer's draw under `seed`.
pub fn draw(seed: &Seed, buyer: BuyerId) -> Draw {
    let mut mac = Hmac::<Sha256>::new_from_slice(&seed.0).expect("hmac takes any key length");
    mac.update(buyer.to_string().as_bytes());
    mac.finalize().into_bytes().into()
}

/// The pool in queue order: position `i + 1` is `result[i]`. Duplicates are dropped.
pub fn order_pool(seed: &Seed, pool: &[BuyerId]) -> Vec<BuyerId> {
    let mut keyed: Vec<(Draw, String, BuyerId)> = pool
        .iter()
        .map(|&b| (draw(seed, b), b.to_string(), b))
        .collect();
    keyed.sort_unstable();
    keyed.dedup_by(|a, b| a.2 == b.2);
    keyed.into_iter().map(|(_, _, b)| b).collect()
}

/// The buyer's position in the ordered pool, computed in one pass without sorting:
/// one plus the number of pool members that sort before them. `None` if not in the pool.
pub fn position_in_pool(seed: &Seed, pool: &[BuyerId], buyer: BuyerId) -> Option<u64> {
    if !pool.contains(&buyer) {
        return None;
    }
    let mine = (draw(seed, buyer), buyer.to_string());
    let mut seen = std::collections::HashSet::with_capacity(pool.len());
    let ahead = pool
        .iter()
        .filter(|&&b| b != buyer && seen.insert(b))
        .filter(|&&b| (draw(seed, b), b.to_string()) < mine)
        .count();
    Some(ahead as u64 + 1)
}

pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn buyers(n: usize) -> Vec<BuyerId> {
        (0..n).map(|_| BuyerId::random()).collect()
    }

    #[test]
    fn the_commitment_is_the_sha256_of_the_seed_and_the_hex_form_round_trips() {
        let seed = Seed([7; 32]);
        assert_eq!(
            seed.commitment(),
            hex(&Sha256::digest([7u8; 32])),
            "commitment = sha256(seed)"
        );
        assert_eq!(Seed::from_hex(&seed.to_hex()), Ok(seed));
        assert!(seed.matches(&seed.commitment().to_uppercase()));
        assert_eq!(Seed::from_hex("abc"), Err(BadSeed));
        assert_eq!(Seed::from_hex(&"zz".repeat(32)), Err(BadSeed));
    }

    #[test]
    fn the_order_does_not_depend_on_arrival_order_and_changes_with_the_seed() {
        let pool = buyers(200);
        let mut reversed = pool.clone();
        reversed.reverse();
        let a = order_pool(&Seed([1; 32]), &pool);
        assert_eq!(a, order_pool(&Seed([1; 32]), &reversed));
        assert_ne!(a, order_pool(&Seed([2; 32]), &pool));
        // UUIDv7 ids rise with time: arrival order must not survive the shuffle.
        assert_ne!(a, pool);
    }

    proptest! {
        #[test]
        fn every_position_recomputed_alone_equals_the_ordered_pool(
            n in 1usize..60, seed in any::<[u8; 32]>()
        ) {
            let pool = buyers(n);
            let seed = Seed(seed);
            let ordered = order_pool(&seed, &pool);
            prop_assert_eq!(ordered.len(), n);
            for (i, &b) in ordered.iter().enumerate() {
                prop_assert_eq!(position_in_pool(&seed, &pool, b), Some(i as u64 + 1));
            }
            prop_assert_eq!(position_in_pool(&seed, &pool, BuyerId::random()), None);
        }
    }
}
