//! Proof of work at join: a cost per queue place that a person pays once and a bot
//! farm pays per account. The server hands out a signed challenge (a `pow_challenge`
//! token bound to buyer, session and event, carrying the difficulty); the client finds a
//! `nonce` such that `sha256(challenge + ":" + nonce)` starts with `difficulty` zero
//! bits. Checking a solution is one HMAC and one SHA-256: O(1), no store lookup.

use sha2::{Digest, Sha256};

/// Hardest difficulty accepted: 2^32 hashes is far beyond any client's patience.
pub const MAX_DIFFICULTY: u8 = 32;
/// Nonces are short printable strings; anything longer is refused unhashed.
pub const MAX_NONCE_LEN: usize = 64;

/// Number of leading zero bits of `digest`.
pub fn leading_zero_bits(digest: &[u8]) -> u32 {
    let mut bits = 0;
    for &b in digest {
        if b == 0 {
            bits += 8;
        } else {
            return bits + b.leading_zeros();
        }
    }
    bits
}

/// Whether `nonce` solves `challenge` at `difficulty`.
pub fn solves(challenge: &str, nonce: &str, difficulty: u8) -> bool {
    if nonce.is_empty() || nonce.len() > MAX_NONCE_LEN {
        return false;
    }
    let mut h = Sha256::new();
    h.update(challenge.as_bytes());
    h.update(b":");
    h.update(nonce.as_bytes());
    leading_zero_bits(&h.finalize()) >= u32::from(difficulty)
}

/// Finds a solution by counting up: what a client does (and tests, at low difficulty).
pub fn solve(challenge: &str, difficulty: u8) -> String {
    (0u64..)
        .map(|n| n.to_string())
        .find(|n| solves(challenge, n, difficulty))
        .expect("some nonce solves any difficulty below 64")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_zero_bits_counts_across_bytes() {
        assert_eq!(leading_zero_bits(&[0, 0, 0b0001_0000]), 19);
        assert_eq!(leading_zero_bits(&[0x80]), 0);
        assert_eq!(leading_zero_bits(&[0, 0]), 16);
    }

    #[test]
    fn a_found_nonce_solves_and_a_wrong_one_does_not() {
        let nonce = solve("challenge-1", 12);
        assert!(solves("challenge-1", &nonce, 12));
        // The same nonce for another challenge is almost surely not a solution at 12
        // bits; pick a difficulty where it demonstrably fails.
        let other = (0..).find(|d| !solves("challenge-2", &nonce, *d)).unwrap();
        assert!(!solves("challenge-2", &nonce, other));
        assert!(!solves("challenge-1", "", 0), "an empty nonce is refused");
        assert!(!solves("challenge-1", &"1".repeat(65), 0), "too long");
        assert!(solves("anything", "x", 0), "difficulty 0 accepts any nonce");
    }
}
