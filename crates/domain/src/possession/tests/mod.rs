use super::*;

mod ed25519;
mod es256;

const NOW: Millis = Millis(1_800_000_000_000);
const WINDOW: ProofWindow = ProofWindow {
    max_age_s: 60,
    skew_s: 5,
};
const HOLD: ProofRequest<'static> = ProofRequest {
    method: "POST",
    path: "/v1/events/1/holds",
};

fn key(n: u8) -> ProofKey {
    ProofKey::from_seed(&[n; 32]).expect("a valid scalar")
}

fn now_s() -> i64 {
    NOW.0 / 1000
}

#[test]
fn a_fresh_proof_for_the_request_checks_and_names_its_key() {
    let k = key(7);
    let proof = k.proof("POST", "/v1/events/1/holds", now_s(), "a-1");
    let checked = check(&proof, HOLD, WINDOW, NOW).expect("valid");
    assert_eq!(&checked.jkt, k.thumbprint());
    assert_eq!(checked.jti, "a-1");
    assert_eq!(checked.iat, now_s());
}

#[test]
fn the_thumbprint_is_rfc_7638_of_the_key_in_rfc_9449s_example() {
    let jwk = Jwk {
        kty: "EC".into(),
        crv: "P-256".into(),
        x: "l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs".into(),
        y: Some("9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA".into()),
        _alg: None,
        _use: None,
        _key_ops: None,
        _ext: None,
    };
    let members = KeyMembers::read(Alg::Es256, &jwk).expect("well formed");
    assert!(members.decode().is_ok(), "a point on the curve");
    let jkt = members.thumbprint();
    assert_eq!(jkt.as_str(), "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I");
}

#[test]
fn a_proof_for_another_path_or_method_is_refused() {
    let k = key(7);
    let other_path = k.proof("POST", "/v1/events/2/holds", now_s(), "a");
    assert_eq!(
        check(&other_path, HOLD, WINDOW, NOW),
        Err(ProofError::WrongRequest)
    );
    let other_method = k.proof("DELETE", "/v1/events/1/holds", now_s(), "b");
    assert_eq!(
        check(&other_method, HOLD, WINDOW, NOW),
        Err(ProofError::WrongRequest)
    );
}

#[test]
fn an_absolute_htu_is_compared_by_its_path() {
    let k = key(7);
    let proof = k.proof(
        "post",
        "https://tickets.example/v1/events/1/holds?x=1",
        now_s(),
        "a",
    );
    assert!(check(&proof, HOLD, WINDOW, NOW).is_ok());
}

#[test]
fn a_proof_older_than_the_window_or_from_the_future_is_stale() {
    let k = key(7);
    let old = k.proof("POST", HOLD.path, now_s() - 61, "a");
    assert_eq!(check(&old, HOLD, WINDOW, NOW), Err(ProofError::Stale));
    let edge = k.proof("POST", HOLD.path, now_s() - 60, "b");
    assert!(check(&edge, HOLD, WINDOW, NOW).is_ok());
    let ahead = k.proof("POST", HOLD.path, now_s() + 6, "c");
    assert_eq!(check(&ahead, HOLD, WINDOW, NOW), Err(ProofError::Stale));
}

#[test]
fn a_signature_by_another_key_than_the_header_names_is_refused() {
    let (a, b) = (key(7), key(8));
    let pa = a.proof("POST", HOLD.path, now_s(), "a");
    let pb = b.proof("POST", HOLD.path, now_s(), "a");
    let (_, sig_b) = pb.rsplit_once('.').unwrap();
    let (signed_a, _) = pa.rsplit_once('.').unwrap();
    let forged = format!("{signed_a}.{sig_b}");
    assert_eq!(
        check(&forged, HOLD, WINDOW, NOW),
        Err(ProofError::BadSignature)
    );
}

#[test]
fn a_changed_claim_breaks_the_signature() {
    let k = key(7);
    let proof = k.proof("POST", HOLD.path, now_s(), "a");
    let parts: Vec<&str> = proof.split('.').collect();
    let claims = serde_json::json!({"htm": "POST", "htu": HOLD.path, "iat": now_s(), "jti": "b"});
    let changed = format!(
        "{}.{}.{}",
        parts[0],
        B64.encode(claims.to_string()),
        parts[2]
    );
    assert_eq!(
        check(&changed, HOLD, WINDOW, NOW),
        Err(ProofError::BadSignature)
    );
}

#[test]
fn other_forms_are_malformed() {
    let k = key(7);
    let proof = k.proof("POST", HOLD.path, now_s(), "a");
    let (_, rest) = proof.split_once('.').unwrap();
    for header in [
        serde_json::json!({"typ": "JWT", "alg": "ES256"}),
        serde_json::json!({"typ": "dpop+jwt", "alg": "none"}),
        serde_json::json!({"typ": "dpop+jwt", "alg": "HS256"}),
    ] {
        let token = format!("{}.{rest}", B64.encode(header.to_string()));
        assert_eq!(check(&token, HOLD, WINDOW, NOW), Err(ProofError::Malformed));
    }
    assert_eq!(check("a.b", HOLD, WINDOW, NOW), Err(ProofError::Malformed));
    let long = "a".repeat(MAX_PROOF + 1);
    assert_eq!(check(&long, HOLD, WINDOW, NOW), Err(ProofError::Malformed));
    let no_jti = k.proof("POST", HOLD.path, now_s(), "");
    assert_eq!(
        check(&no_jti, HOLD, WINDOW, NOW),
        Err(ProofError::Malformed)
    );
}

#[test]
fn a_private_key_in_the_header_is_refused() {
    let k = key(7);
    let proof = k.proof("POST", HOLD.path, now_s(), "a");
    let (header, rest) = proof.split_once('.').unwrap();
    let mut h: serde_json::Value = serde_json::from_slice(&B64.decode(header).unwrap()).unwrap();
    h["jwk"]["d"] = serde_json::json!("AAAA");
    let token = format!("{}.{rest}", B64.encode(h.to_string()));
    assert_eq!(check(&token, HOLD, WINDOW, NOW), Err(ProofError::Malformed));
}
