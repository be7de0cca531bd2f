//! Access tokens from a stand-in identity provider whose keys and JWKS the test makes:
//! what is accepted, what is refused and why, and how the key cache behaves under
//! rotation, floods of unknown key ids and an unreachable provider.

use std::time::Duration;

use boxoffice_domain::Millis;
use boxoffice_domain::token::TokenError;
use boxoffice_engine::ports::{IdentityError, IdentityProvider};
use boxoffice_oidc::testing::TestProvider;
use boxoffice_oidc::{OidcProvider, buyer_id};
use jsonwebtoken::Algorithm;
use serde_json::json;

const NOW: Millis = Millis(1_800_000_000_000);

fn at(secs: i64) -> Millis {
    NOW.plus_millis(secs * 1000)
}

/// Runs a test body with a deadline, so a hung fetch fails fast.
async fn within<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("the test finished in time");
}

fn refused(r: Result<impl std::fmt::Debug, IdentityError>) -> TokenError {
    match r {
        Err(IdentityError::Refused(e)) => e,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[boxoffice_testkit::test]
async fn tokens_signed_rs256_es256_and_eddsa_by_the_provider_are_accepted() {
    within(async {
        let idp = TestProvider::start().await;
        let oidc = OidcProvider::new(idp.config()).unwrap();
        let algs = [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA];
        let kids: Vec<String> = algs.iter().map(|alg| idp.add_key(*alg)).collect();
        for (alg, kid) in algs.iter().zip(&kids) {
            let token = idp.sign(kid, &idp.claims("auth0|alice", NOW));
            let id = oidc.verify(&token, at(60)).await.unwrap_or_else(|e| {
                panic!("{alg:?} token refused: {e}");
            });
            assert_eq!(id.buyer, buyer_id(&idp.issuer, "auth0|alice"));
            assert!(id.verified);
            assert_eq!(
                id.account_created_at,
                Some(Millis(NOW.0 - 86_400_000 * 365))
            );
        }
    })
    .await;
}

#[boxoffice_testkit::test]
async fn wrong_issuer_audience_expiry_key_or_signature_are_each_refused_with_their_reason() {
    within(async {
        let idp = TestProvider::start().await;
        let oidc = OidcProvider::new(idp.config()).unwrap();
        let kid = idp.add_key(Algorithm::EdDSA);
        let good = idp.claims("bob", NOW);
        let with = |k: &str, v: serde_json::Value| {
            let mut c = good.clone();
            c[k] = v;
            idp.sign(&kid, &c)
        };
        let cases = [
            (
                with("iss", json!("https://evil.example/")),
                TokenError::WrongIssuer,
            ),
            (with("aud", json!("another-api")), TokenError::WrongAudience),
            (with("exp", json!(NOW.0 / 1000 - 31)), TokenError::Expired),
            (
                with("nbf", json!(NOW.0 / 1000 + 120)),
                TokenError::NotYetValid,
            ),
        ];
        for (token, want) in cases {
            assert_eq!(refused(oidc.verify(&token, NOW).await), want);
        }
        let (stranger, _) = idp.add_unpublished_key(Algorithm::EdDSA);
        let unknown = idp.sign(&stranger, &good);
        assert_eq!(
            refused(oidc.verify(&unknown, NOW).await),
            TokenError::UnknownKey
        );
        let token = idp.sign(&kid, &good);
        let (signed, _) = token.rsplit_once('.').unwrap();
        let forged = format!("{signed}.{}", "A".repeat(86));
        assert_eq!(
            refused(oidc.verify(&forged, NOW).await),
            TokenError::BadSignature
        );
        // Within the leeway an expiry or a start time is not held against the token.
        assert!(
            oidc.verify(&with("exp", json!(NOW.0 / 1000 - 5)), NOW)
                .await
                .is_ok()
        );
    })
    .await;
}

/// HS256 under a published key id would let anyone who knows the public key sign.
#[boxoffice_testkit::test]
async fn an_hmac_signed_token_is_never_accepted() {
    within(async {
        let idp = TestProvider::start().await;
        let oidc = OidcProvider::new(idp.config()).unwrap();
        let kid = idp.add_key(Algorithm::EdDSA);
        let mut header = jsonwebtoken::Header::new(Algorithm::HS256);
        header.kid = Some(kid);
        let key = jsonwebtoken::EncodingKey::from_secret(b"anyone-can-pick-this-secret-value");
        let token = jsonwebtoken::encode(&header, &idp.claims("eve", NOW), &key).unwrap();
        assert_eq!(
            refused(oidc.verify(&token, NOW).await),
            TokenError::BadSignature
        );
        let mut cfg = idp.config();
        cfg.algorithms = vec!["HS256".into()];
        assert!(OidcProvider::new(cfg).is_err(), "HMAC cannot be configured");
    })
    .await;
}

#[boxoffice_testkit::test]
async fn a_rotated_key_is_accepted_after_the_refetch_floor_and_a_retired_one_is_refused() {
    within(async {
        let idp = TestProvider::start().await;
        let oidc = OidcProvider::new(idp.config()).unwrap();
        let old = idp.add_key(Algorithm::ES256);
        let old_token = idp.sign(&old, &idp.claims("carol", NOW));
        assert!(oidc.verify(&old_token, NOW).await.is_ok());
        let new = idp.add_key(Algorithm::RS256);
        idp.withdraw(&old);
        let new_token = idp.sign(&new, &idp.claims("carol", NOW));
        // The keys were fetched a moment ago: the floor keeps us from asking again.
        assert_eq!(
            refused(oidc.verify(&new_token, at(1)).await),
            TokenError::UnknownKey
        );
        assert!(
            oidc.verify(&new_token, at(31)).await.is_ok(),
            "refetched after the floor"
        );
        assert_eq!(idp.fetches(), 2);
        // The refetched set no longer lists the retired key.
        assert_eq!(
            refused(oidc.verify(&old_token, at(32)).await),
            TokenError::UnknownKey
        );
        // Past the cache TTL the set is fetched again even for a known key.
        assert!(oidc.verify(&new_token, at(31 + 601)).await.is_ok());
        assert_eq!(idp.fetches(), 3);
    })
    .await;
}

#[boxoffice_testkit::test]
async fn a_flood_of_unknown_key_ids_asks_the_provider_at_most_once_per_floor() {
    within(async {
        let idp = TestProvider::start().await;
        let oidc = OidcProvider::new(idp.config()).unwrap();
        let kid = idp.add_key(Algorithm::EdDSA);
        assert!(
            oidc.verify(&idp.sign(&kid, &idp.claims("dan", NOW)), NOW)
                .await
                .is_ok()
        );
        let (stranger, _) = idp.add_unpublished_key(Algorithm::EdDSA);
        let bogus = idp.sign(&stranger, &idp.claims("dan", NOW));
        for i in 0..200 {
            let now = NOW.plus_millis(i * 100); // 20 seconds of flood
            assert_eq!(
                refused(oidc.verify(&bogus, now).await),
                TokenError::UnknownKey
            );
        }
        assert_eq!(idp.fetches(), 1, "no refetch within the 30 s floor");
        assert_eq!(
            refused(oidc.verify(&bogus, at(45)).await),
            TokenError::UnknownKey
        );
        assert_eq!(idp.fetches(), 2, "one refetch once the floor passed");
    })
    .await;
}

#[boxoffice_testkit::test]
async fn an_unreachable_provider_is_unavailable_not_a_refusal_and_known_keys_keep_working() {
    within(async {
        let idp = TestProvider::start().await;
        let oidc = OidcProvider::new(idp.config()).unwrap();
        let kid = idp.add_key(Algorithm::EdDSA);
        let token = idp.sign(&kid, &idp.claims("erin", NOW));
        idp.set_offline(true);
        assert!(matches!(
            oidc.verify(&token, NOW).await,
            Err(IdentityError::Unavailable(_))
        ));
        idp.set_offline(false);
        assert!(oidc.verify(&token, at(31)).await.is_ok());
        idp.set_offline(true);
        assert!(
            oidc.verify(&token, at(1000)).await.is_ok(),
            "stale keys still verify"
        );
    })
    .await;
}

#[boxoffice_testkit::test]
async fn a_token_without_the_buyer_claim_is_malformed_and_sessions_follow_the_sid_claim() {
    within(async {
        let idp = TestProvider::start().await;
        let oidc = OidcProvider::new(idp.config()).unwrap();
        let kid = idp.add_key(Algorithm::EdDSA);
        let mut claims = idp.claims("frank", NOW);
        let a = oidc.verify(&idp.sign(&kid, &claims), NOW).await.unwrap();
        claims["iat"] = json!(NOW.0 / 1000 + 1);
        let refreshed = oidc.verify(&idp.sign(&kid, &claims), NOW).await.unwrap();
        assert_eq!(
            a.session, refreshed.session,
            "a refreshed token keeps its session"
        );
        claims["sid"] = json!("login-session-2");
        let other = oidc.verify(&idp.sign(&kid, &claims), NOW).await.unwrap();
        assert_ne!(a.session, other.session, "another login is another session");
        claims.as_object_mut().unwrap().remove("sub");
        let token = idp.sign(&kid, &claims);
        assert_eq!(
            refused(oidc.verify(&token, NOW).await),
            TokenError::Malformed
        );
    })
    .await;
}
