use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;

use super::*;
use crate::ids::{BuyerId, EventId};
use crate::time::Millis;

fn ring(kid: &str, byte: u8) -> KeyRing {
    KeyRing::new(vec![(kid.into(), vec![byte; 32])]).unwrap()
}

fn ed_ring(kid: &str, seed: u8) -> KeyRing {
    ring("k1", 1)
        .with_ed25519(vec![(kid.into(), [seed; 32])])
        .unwrap()
}

fn claims(kind: TokenKind) -> Claims {
    Claims {
        event: Some(EventId(7)),
        position: Some(3),
        ..Claims::new(kind, BuyerId::random(), "s1".into(), Millis(10_000))
    }
}

fn part(token: &str, i: usize) -> serde_json::Value {
    let raw = B64.decode(token.split('.').nth(i).unwrap()).unwrap();
    serde_json::from_slice(&raw).unwrap()
}

#[test]
fn a_signed_token_verifies_until_it_expires() {
    let r = ring("k1", 1);
    let t = r.sign(claims(TokenKind::Admission));
    assert!(
        r.verify_for_event(&t, TokenKind::Admission, EventId(7), Millis(9_999))
            .is_ok()
    );
    assert_eq!(
        r.verify(&t, TokenKind::Admission, Millis(10_000)),
        Err(TokenError::Expired)
    );
}

#[test]
fn tokens_are_compact_jws_with_the_key_id_in_the_protected_header() {
    let r = ring("k1", 1);
    let c = claims(TokenKind::Admission);
    let t = r.sign(c.clone());
    assert_eq!(t.split('.').count(), 3);
    let header = part(&t, 0);
    assert_eq!(header["alg"], "HS256");
    assert_eq!(header["kid"], "k1");
    let payload = part(&t, 1);
    assert_eq!(payload["sub"], c.buyer.to_string());
    assert_eq!(payload["exp"], 10, "exp is a JWT NumericDate in seconds");
    assert_eq!(payload["kind"], "admission");
    assert_eq!(payload["event"], 7);
}

#[test]
fn forged_other_kind_and_other_event_tokens_are_refused() {
    let r = ring("k1", 1);
    let t = r.sign(claims(TokenKind::QueueTicket));
    assert_eq!(
        r.verify(&t, TokenKind::Admission, Millis(0)),
        Err(TokenError::WrongKind(TokenKind::Admission))
    );
    assert_eq!(
        r.verify_for_event(&t, TokenKind::QueueTicket, EventId(8), Millis(0)),
        Err(TokenError::WrongEvent)
    );
    let forged = ring("k1", 2).sign(claims(TokenKind::QueueTicket));
    assert_eq!(
        r.verify(&forged, TokenKind::QueueTicket, Millis(0)),
        Err(TokenError::BadSignature)
    );
    let (signed, _) = t.rsplit_once('.').unwrap();
    assert_eq!(
        r.verify(
            &format!("{signed}.{}", "A".repeat(43)),
            TokenKind::QueueTicket,
            Millis(0)
        ),
        Err(TokenError::BadSignature)
    );
    assert_eq!(
        r.verify("garbage", TokenKind::QueueTicket, Millis(0)),
        Err(TokenError::Malformed)
    );
}

#[test]
fn a_payload_changed_under_a_valid_signature_is_refused() {
    let r = ring("k1", 1);
    let t = r.sign(claims(TokenKind::Admission));
    let parts: Vec<&str> = t.split('.').collect();
    let mut payload = part(&t, 1);
    payload["event"] = 8.into();
    let swapped = B64.encode(payload.to_string());
    let tampered = format!("{}.{swapped}.{}", parts[0], parts[2]);
    assert_eq!(
        r.verify(&tampered, TokenKind::Admission, Millis(0)),
        Err(TokenError::BadSignature)
    );
}

#[test]
fn a_token_presented_from_another_session_is_refused() {
    let r = ring("k1", 1);
    let t = r.sign(claims(TokenKind::Admission));
    let ok = r.verify_bound(&t, TokenKind::Admission, EventId(7), "s1", Millis(0));
    assert!(ok.is_ok());
    assert_eq!(
        r.verify_bound(&t, TokenKind::Admission, EventId(7), "s2", Millis(0)),
        Err(TokenError::WrongSession)
    );
}

#[test]
fn rotated_keys_keep_old_tokens_valid_while_listed() {
    let old = ring("k1", 1);
    let t = old.sign(claims(TokenKind::Buyer));
    let rotated =
        KeyRing::new(vec![("k2".into(), vec![2; 32]), ("k1".into(), vec![1; 32])]).unwrap();
    assert!(rotated.verify(&t, TokenKind::Buyer, Millis(0)).is_ok());
    assert_eq!(
        part(&rotated.sign(claims(TokenKind::Buyer)), 0)["kid"],
        "k2"
    );
    assert_eq!(
        ring("k2", 2).verify(&t, TokenKind::Buyer, Millis(0)),
        Err(TokenError::UnknownKey)
    );
}

#[test]
fn with_eddsa_tickets_and_admission_tokens_are_ed25519_and_sessions_stay_hmac() {
    let r = ed_ring("e1", 9);
    let admission = r.sign(claims(TokenKind::Admission));
    let ticket = r.sign(claims(TokenKind::QueueTicket));
    let session = r.sign(claims(TokenKind::Buyer));
    assert_eq!(part(&admission, 0)["alg"], "EdDSA");
    assert_eq!(part(&ticket, 0)["kid"], "e1");
    assert_eq!(part(&session, 0)["alg"], "HS256");
    assert!(
        r.verify(&admission, TokenKind::Admission, Millis(0))
            .is_ok()
    );
    assert!(r.verify(&session, TokenKind::Buyer, Millis(0)).is_ok());
    assert_eq!(r.edge_algorithm(), EdgeAlgorithm::Eddsa);
    let other = ed_ring("e1", 10).sign(claims(TokenKind::Admission));
    assert_eq!(
        r.verify(&other, TokenKind::Admission, Millis(0)),
        Err(TokenError::BadSignature)
    );
}

#[test]
fn the_published_key_set_verifies_eddsa_tokens_and_never_shows_a_secret() {
    let r = ring("k1", 1)
        .with_ed25519(vec![("e2".into(), [2; 32]), ("e1".into(), [1; 32])])
        .unwrap();
    let jwks: serde_json::Value = serde_json::from_str(&r.jwks()).unwrap();
    let keys = jwks["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 2, "HMAC keys are never published: {jwks}");
    assert_eq!(keys[0]["kid"], "e2", "the current key comes first");
    let t = r.sign(claims(TokenKind::Admission));
    let x = B64.decode(keys[0]["x"].as_str().unwrap()).unwrap();
    let key = ed25519_dalek::VerifyingKey::from_bytes(&x.try_into().unwrap()).unwrap();
    let (signed, sig) = t.rsplit_once('.').unwrap();
    let sig = ed25519_dalek::Signature::from_slice(&B64.decode(sig).unwrap()).unwrap();
    assert!(key.verify_strict(signed.as_bytes(), &sig).is_ok());
    assert_eq!(ring("k1", 1).jwks(), r#"{"keys":[]}"#);
}

/// A header naming an Ed25519 key id but asking for HS256 (with the public key as the
/// HMAC secret, the classic `alg` confusion) is refused, and so is any unknown kid.
#[test]
fn a_header_cannot_choose_another_algorithm_or_an_unknown_key() {
    let r = ed_ring("e1", 9);
    let x = B64.decode(
        serde_json::from_str::<serde_json::Value>(&r.jwks()).unwrap()["keys"][0]["x"]
            .as_str()
            .unwrap(),
    );
    let confused = KeyRing::new(vec![("e1".into(), x.unwrap())])
        .unwrap()
        .sign(claims(TokenKind::Admission));
    assert_eq!(
        r.verify(&confused, TokenKind::Admission, Millis(0)),
        Err(TokenError::BadSignature)
    );
    let unknown = ring("k9", 1).sign(claims(TokenKind::Admission));
    assert_eq!(
        r.verify(&unknown, TokenKind::Admission, Millis(0)),
        Err(TokenError::UnknownKey)
    );
    assert!(r.names_own_key(&r.sign(claims(TokenKind::Buyer))));
    assert!(!r.names_own_key(&unknown));
}

#[test]
fn a_header_with_critical_extensions_or_a_wrong_signature_length_is_refused() {
    let r = ring("k1", 1);
    let t = r.sign(claims(TokenKind::Admission));
    let crit = B64.encode(r#"{"alg":"HS256","kid":"k1","crit":["b64"]}"#);
    let rest = t.split_once('.').unwrap().1;
    assert_eq!(
        r.verify(&format!("{crit}.{rest}"), TokenKind::Admission, Millis(0)),
        Err(TokenError::Malformed)
    );
    let (signed, _) = t.rsplit_once('.').unwrap();
    assert_eq!(
        r.verify(&format!("{signed}.AAAA"), TokenKind::Admission, Millis(0)),
        Err(TokenError::BadSignature)
    );
    assert_eq!(
        r.verify(&"a.".repeat(3000), TokenKind::Admission, Millis(0)),
        Err(TokenError::Malformed)
    );
}

#[test]
fn a_ring_refuses_duplicate_or_unprintable_key_ids() {
    assert!(KeyRing::new(vec![("k1".into(), vec![1; 32]), ("k1".into(), vec![2; 32])]).is_err());
    assert!(KeyRing::new(vec![("k 1".into(), vec![1; 32])]).is_err());
    assert!(
        ring("k1", 1)
            .with_ed25519(vec![("k1".into(), [1; 32])])
            .is_err()
    );
    assert!(KeyRing::new(vec![("k1".into(), vec![1; 31])]).is_err());
}
