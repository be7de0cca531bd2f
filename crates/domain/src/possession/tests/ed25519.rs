//! EdDSA (Ed25519, RFC 8037) proofs, and the cache of decoded keys.

use super::*;

fn ed(n: u8) -> ProofKey {
    ProofKey::ed25519_from_seed(&[n; 32])
}

#[test]
fn the_ed25519_thumbprint_is_rfc_8037s_example() {
    // RFC 8037 A.1-A.3: the secret seed `d` and the thumbprint of its public key.
    let mut seed = [0u8; 32];
    B64.decode_slice("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A", &mut seed)
        .expect("32 bytes");
    let k = ProofKey::ed25519_from_seed(&seed);
    assert_eq!(
        k.thumbprint().as_str(),
        "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
    );
}

#[test]
fn a_fresh_ed25519_proof_checks_and_names_its_key() {
    let k = ed(7);
    let proof = k.proof("POST", HOLD.path, now_s(), "e-1");
    let checked = check(&proof, HOLD, WINDOW, NOW).expect("valid");
    assert_eq!(&checked.jkt, k.thumbprint());
    assert_ne!(k.thumbprint(), key(7).thumbprint());
}

#[test]
fn an_ed25519_signature_by_another_key_is_refused() {
    let (a, b) = (ed(7), ed(8));
    let pa = a.proof("POST", HOLD.path, now_s(), "a");
    let pb = b.proof("POST", HOLD.path, now_s(), "a");
    let (signed_a, _) = pa.rsplit_once('.').unwrap();
    let (_, sig_b) = pb.rsplit_once('.').unwrap();
    let forged = format!("{signed_a}.{sig_b}");
    assert_eq!(
        check(&forged, HOLD, WINDOW, NOW),
        Err(ProofError::BadSignature)
    );
    let cache = KeyCache::new(8);
    assert_eq!(
        cache.check(&forged, HOLD, WINDOW, NOW),
        Err(ProofError::BadSignature)
    );
}

#[test]
fn an_ed25519_proof_for_another_request_or_time_is_refused() {
    let k = ed(7);
    let other = k.proof("DELETE", HOLD.path, now_s(), "a");
    assert_eq!(
        check(&other, HOLD, WINDOW, NOW),
        Err(ProofError::WrongRequest)
    );
    let old = k.proof("POST", HOLD.path, now_s() - 61, "b");
    assert_eq!(check(&old, HOLD, WINDOW, NOW), Err(ProofError::Stale));
}

/// The proof with another protected header, its payload and signature kept.
fn with_header(proof: &str, header: serde_json::Value) -> String {
    let (_, rest) = proof.split_once('.').unwrap();
    format!("{}.{rest}", B64.encode(header.to_string()))
}

#[test]
fn an_algorithm_that_does_not_match_its_key_is_malformed() {
    let (e, p) = (ed(7), key(7));
    let pe = e.proof("POST", HOLD.path, now_s(), "a");
    let pp = p.proof("POST", HOLD.path, now_s(), "a");
    let header = |proof: &str| -> serde_json::Value {
        let (h, _) = proof.split_once('.').unwrap();
        serde_json::from_slice(&B64.decode(h).unwrap()).unwrap()
    };
    let mut es_with_okp = header(&pe);
    es_with_okp["alg"] = "ES256".into();
    let mut ed_with_ec = header(&pp);
    ed_with_ec["alg"] = "EdDSA".into();
    let mut okp_with_y = header(&pe);
    okp_with_y["jwk"]["y"] = header(&pp)["jwk"]["y"].clone();
    let mut okp_private = header(&pe);
    okp_private["jwk"]["d"] = okp_private["jwk"]["x"].clone();
    let mut x448 = header(&pe);
    x448["jwk"]["crv"] = "Ed448".into();
    for (h, proof) in [
        (es_with_okp, &pe),
        (ed_with_ec, &pp),
        (okp_with_y, &pe),
        (okp_private, &pe),
        (x448, &pe),
    ] {
        let token = with_header(proof, h.clone());
        assert_eq!(
            check(&token, HOLD, WINDOW, NOW),
            Err(ProofError::Malformed),
            "{h}"
        );
    }
}

#[test]
fn a_small_order_ed25519_key_is_refused() {
    // The identity point (y = 1): every signature by "it" is trivial to forge.
    let mut identity = [0u8; 32];
    identity[0] = 1;
    let k = ed(7);
    let proof = k.proof("POST", HOLD.path, now_s(), "a");
    let (h, _) = proof.split_once('.').unwrap();
    let mut h: serde_json::Value = serde_json::from_slice(&B64.decode(h).unwrap()).unwrap();
    h["jwk"]["x"] = B64.encode(identity).into();
    let token = with_header(&proof, h);
    assert_eq!(check(&token, HOLD, WINDOW, NOW), Err(ProofError::Malformed));
}

#[test]
fn the_cache_answers_as_a_fresh_decode_and_stays_bounded() {
    let cache = KeyCache::new(4);
    for round in 0..3 {
        for n in 1..=10u8 {
            for k in [ed(n), key(n)] {
                let proof = k.proof("POST", HOLD.path, now_s(), &format!("{round}"));
                let cached = cache.check(&proof, HOLD, WINDOW, NOW);
                assert_eq!(cached, check(&proof, HOLD, WINDOW, NOW));
                assert_eq!(&cached.expect("valid").jkt, k.thumbprint());
                assert!(cache.len() <= 4, "{} keys kept", cache.len());
            }
        }
    }
    assert!(!cache.is_empty());
}

#[test]
fn a_key_in_use_survives_the_generation_turn() {
    let cache = KeyCache::new(4);
    let kept = ed(1);
    let proof = kept.proof("POST", HOLD.path, now_s(), "a");
    for n in 2..=20u8 {
        cache.check(&proof, HOLD, WINDOW, NOW).expect("valid");
        let other = ed(n).proof("POST", HOLD.path, now_s(), "b");
        cache.check(&other, HOLD, WINDOW, NOW).expect("valid");
        let members = members_of(&proof);
        assert!(cache.find(&members.digest).is_some(), "after key {n}");
    }
}

fn members_of(proof: &str) -> KeyMembers {
    let (h, _) = proof.split_once('.').unwrap();
    let header: Header = serde_json::from_slice(&B64.decode(h).unwrap()).unwrap();
    let alg = Alg::from_header(&header.alg).unwrap();
    KeyMembers::read(alg, &header.jwk).unwrap()
}
