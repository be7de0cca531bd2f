//! The table-driven ES256 verification (`es256`) against `p256`'s own.

use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::ecdsa::{Signature, SigningKey};

use super::super::es256::Es256Key;
use super::*;

fn signing(n: u32) -> SigningKey {
    let mut seed = [0u8; 32];
    seed[..4].copy_from_slice(&n.to_be_bytes());
    seed[31] = 1;
    SigningKey::from_slice(&seed).expect("a valid scalar")
}

#[test]
fn the_tables_accept_exactly_what_p256_accepts() {
    for n in 0..24u32 {
        let (a, b) = (signing(n), signing(n + 1000));
        let table = Es256Key::new(a.verifying_key());
        let msg = format!("header.payload-{n}");
        let sig: Signature = a.sign(msg.as_bytes());
        let other: Signature = b.sign(msg.as_bytes());
        let elsewhere: Signature = a.sign(b"another message");
        for (s, m) in [
            (sig, &msg[..]),
            (other, &msg),
            (elsewhere, &msg),
            (sig, "header.payload-x"),
        ] {
            let want = a.verifying_key().verify(m.as_bytes(), &s).is_ok();
            assert_eq!(table.verify(m.as_bytes(), &s), want, "key {n}");
        }
        assert!(table.verify(msg.as_bytes(), &sig));
        // The high-S twin of a valid signature verifies in both (ECDSA itself allows it).
        let (r, s) = sig.split_scalars();
        let high = Signature::from_scalars(*r, -*s).expect("nonzero");
        let want = a.verifying_key().verify(msg.as_bytes(), &high).is_ok();
        assert!(want);
        assert_eq!(table.verify(msg.as_bytes(), &high), want);
    }
}

#[test]
fn a_cached_es256_check_refuses_what_a_fresh_one_refuses() {
    let cache = KeyCache::new(16);
    let (a, b) = (key(3), key(4));
    let good = a.proof("POST", HOLD.path, now_s(), "a");
    let (signed_a, _) = good.rsplit_once('.').unwrap();
    let pb = b.proof("POST", HOLD.path, now_s(), "a");
    let (_, sig_b) = pb.rsplit_once('.').unwrap();
    let forged = format!("{signed_a}.{sig_b}");
    for _ in 0..2 {
        assert!(cache.check(&good, HOLD, WINDOW, NOW).is_ok());
        assert_eq!(
            cache.check(&forged, HOLD, WINDOW, NOW),
            Err(ProofError::BadSignature)
        );
    }
}
