//! Tokens in their standard form through HTTP: forged or foreign admission tokens are
//! refused and change nothing, and with EdDSA an edge verifies admission tokens with
//! the published key set and a stock JWT library, without calling the server.

use std::time::Duration;

use crate::common::*;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use boxoffice_domain::token::{Claims, EdgeAlgorithm, KeyRing, TokenKind};
use boxoffice_domain::{BuyerId, EventId};
use boxoffice_engine::ports::Clock;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn within<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(120), f)
        .await
        .expect("the test finished in time");
}

/// Holds with `token` and returns (status, error code), then checks nothing changed.
async fn refused_hold(app: &TestApp, event: EventId, token: &str) -> (StatusCode, Value) {
    let before = app.counts(event).await;
    let res = app.hold(event, token, json!({"seat_ids": ["A-1-1"]})).await;
    let out = (
        res.status(),
        res.json::<Value>().await.unwrap()["error"].clone(),
    );
    assert_eq!(
        app.counts(event).await,
        before,
        "a refused hold changed the counts"
    );
    out
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_admission_token_is_refused_and_changes_nothing() {
    within(async {
        let app = spawn().await;
        let event = app.create_event(&spec(1, 5, 0, 4)).await;
        let (_, admission) = app.admitted_buyer(event).await;
        // Another buyer's id written into a real token, the signature kept.
        let parts: Vec<&str> = admission.split('.').collect();
        let mut claims: Value = serde_json::from_slice(&B64.decode(parts[1]).unwrap()).unwrap();
        claims["sub"] = json!(BuyerId::random());
        let swapped = format!(
            "{}.{}.{}",
            parts[0],
            B64.encode(claims.to_string()),
            parts[2]
        );
        let resigned = format!("{}.{}.{}", parts[0], parts[1], "A".repeat(43));
        for forged in [swapped, resigned] {
            let (status, code) = refused_hold(&app, event, &forged).await;
            assert_eq!(
                (status, code),
                (StatusCode::UNAUTHORIZED, json!("invalid_token"))
            );
        }
        assert_eq!(app.counts(event).await["held"], 0);
        app.stop().await;
    })
    .await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admission_token_signed_by_an_unknown_kid_is_refused_and_changes_nothing() {
    within(async {
        let app = spawn().await;
        let event = app.create_event(&spec(1, 5, 0, 4)).await;
        let claims = Claims {
            event: Some(event),
            position: Some(1),
            ..Claims::new(
                TokenKind::Admission,
                BuyerId::random(),
                "s".into(),
                app.clock.now().plus_secs(600),
            )
        };
        let stranger = KeyRing::new(vec![("k-stranger".into(), vec![42; 32])]).unwrap();
        let (status, code) = refused_hold(&app, event, &stranger.sign(claims)).await;
        assert_eq!(
            (status, code),
            (StatusCode::UNAUTHORIZED, json!("token_unknown_key"))
        );
        app.stop().await;
    })
    .await;
}

/// What an edge does with only the published keys: pick the key by `kid`, check the
/// signature and the expiry, then the claims that make it an admission for this event.
fn edge_verifies(jwks: &JwkSet, token: &str, event: EventId, now_s: i64) -> Result<Value, String> {
    let header = jsonwebtoken::decode_header(token).map_err(|e| e.to_string())?;
    let kid = header.kid.ok_or("no kid")?;
    let jwk = jwks
        .find(&kid)
        .ok_or(format!("kid {kid} is not published"))?;
    let key = DecodingKey::from_jwk(jwk).map_err(|e| e.to_string())?;
    let mut v = Validation::new(Algorithm::EdDSA);
    // The server runs on a test clock; the expiry is checked against it below.
    v.validate_exp = false;
    let data = jsonwebtoken::decode::<Value>(token, &key, &v).map_err(|e| e.to_string())?;
    let c = data.claims;
    if c["exp"].as_i64().is_none_or(|exp| exp <= now_s) {
        return Err("expired".into());
    }
    if c["kind"] != "admission" || c["event"] != json!(event) {
        return Err(format!("not an admission for {event}: {c}"));
    }
    Ok(c)
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eddsa_admission_token_verifies_against_the_published_jwks_as_an_edge_would() {
    within(async {
        let app = spawn_with(|c| c.tokens.edge_algorithm = EdgeAlgorithm::Eddsa).await;
        let event = app.create_event(&spec(1, 5, 0, 4)).await;
        let (buyer_token, admission) = app.admitted_buyer(event).await;
        let res = app.get("/.well-known/jwks.json", "").await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()["cache-control"], "public, max-age=300");
        let jwks: JwkSet = res.json().await.unwrap();
        assert_eq!(jwks.keys.len(), 1);
        let now_s = app.clock.now().0 / 1000;
        let claims = edge_verifies(&jwks, &admission, event, now_s).expect("the edge accepts it");
        assert_eq!(claims["position"], 1);
        let other = EventId(event.0 + 1);
        assert!(edge_verifies(&jwks, &admission, other, now_s).is_err());
        assert!(
            edge_verifies(&jwks, &admission, event, now_s + 901).is_err(),
            "expired"
        );
        // Buyer sessions stay HMAC: the published keys cannot pass one off as admission.
        assert!(edge_verifies(&jwks, &buyer_token, event, now_s).is_err());
        let (signed, _) = admission.rsplit_once('.').unwrap();
        let forged = format!("{signed}.{}", "A".repeat(86));
        assert!(edge_verifies(&jwks, &forged, event, now_s).is_err());
        let (status, code) = refused_hold(&app, event, &forged).await;
        assert_eq!(
            (status, code),
            (StatusCode::UNAUTHORIZED, json!("invalid_token"))
        );
        // And the server itself takes the EdDSA token it issued.
        let res = app
            .hold(event, &admission, json!({"seat_ids": ["A-1-1"]}))
            .await;
        assert_eq!(res.status(), StatusCode::CREATED);
        app.stop().await;
    })
    .await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_hs256_the_published_key_set_is_empty_and_no_secret_leaves_the_server() {
    within(async {
        let app = spawn().await;
        let res = app.get("/.well-known/jwks.json", "").await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.json::<Value>().await.unwrap(), json!({"keys": []}));
        app.stop().await;
    })
    .await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_sharing_a_data_directory_sign_with_one_ed25519_key() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let first = boxoffice_server::secrets::ed25519_keys(dir.path()).unwrap();
        let second = boxoffice_server::secrets::ed25519_keys(dir.path()).unwrap();
        assert_eq!(first, second);
        assert!(first[0].0.starts_with("ed-"));
        let other = tempfile::tempdir().unwrap();
        let elsewhere = boxoffice_server::secrets::ed25519_keys(other.path()).unwrap();
        assert_ne!(
            first[0].0, elsewhere[0].0,
            "another deployment, another kid"
        );
    })
    .await;
}
