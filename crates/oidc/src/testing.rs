//! A stand-in identity provider for tests: keys it generates itself (RS256, ES256,
//! EdDSA), a JWKS it serves on 127.0.0.1:0, and access tokens it signs. Keys can be
//! published, withdrawn, or kept off the JWKS (an unknown kid); the JWKS can be taken
//! offline; fetches are counted.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use boxoffice_domain::Millis;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::OidcConfig;

#[derive(Default)]
struct Published {
    keys: Mutex<Vec<Value>>,
    fetches: AtomicUsize,
    offline: AtomicBool,
}

pub struct TestProvider {
    pub issuer: String,
    pub audience: String,
    pub jwks_url: String,
    published: Arc<Published>,
    signers: Mutex<HashMap<String, (Algorithm, EncodingKey)>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for TestProvider {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn serve_jwks(State(p): State<Arc<Published>>) -> Response {
    p.fetches.fetch_add(1, Ordering::SeqCst);
    if p.offline.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    Json(json!({"keys": *p.keys.lock()})).into_response()
}

fn random_32() -> [u8; 32] {
    let (a, b) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
    let mut out = [0u8; 32];
    out[..16].copy_from_slice(a.as_bytes());
    out[16..].copy_from_slice(b.as_bytes());
    out
}

/// A new key pair for `alg`: its public JWK (without kid) and its signing key.
fn generate(alg: Algorithm) -> (Value, EncodingKey) {
    use p256::elliptic_curve::sec1::ToEncodedPoint as _;
    use p256::pkcs8::EncodePrivateKey as _;
    match alg {
        Algorithm::EdDSA => {
            let key = ed25519_dalek::SigningKey::from_bytes(&random_32());
            let der = key.to_pkcs8_der().expect("an Ed25519 key encodes");
            let x = B64.encode(key.verifying_key().as_bytes());
            let jwk = json!({"kty": "OKP", "crv": "Ed25519", "x": x});
            (jwk, EncodingKey::from_ed_der(der.as_bytes()))
        }
        Algorithm::ES256 => {
            let key = p256::SecretKey::from_slice(&random_32()).expect("a P-256 scalar");
            let point = key.public_key().to_encoded_point(false);
            let (x, y) = (point.x().expect("x"), point.y().expect("y"));
            let jwk = json!({"kty": "EC", "crv": "P-256", "x": B64.encode(x), "y": B64.encode(y)});
            let der = key.to_pkcs8_der().expect("a P-256 key encodes");
            (jwk, EncodingKey::from_ec_der(der.as_bytes()))
        }
        Algorithm::RS256 => {
            use rsa::pkcs1::EncodeRsaPrivateKey as _;
            use rsa::traits::PublicKeyParts as _;
            let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).expect("RSA key");
            let n = B64.encode(key.n().to_bytes_be());
            let e = B64.encode(key.e().to_bytes_be());
            let der = key.to_pkcs1_der().expect("an RSA key encodes");
            (
                json!({"kty": "RSA", "n": n, "e": e}),
                EncodingKey::from_rsa_der(der.as_bytes()),
            )
        }
        other => panic!("the test provider does not make {other:?} keys"),
    }
}

impl TestProvider {
    /// Serves an empty JWKS on loopback; add keys with `add_key`.
    pub async fn start() -> TestProvider {
        let published = Arc::new(Published::default());
        let app = axum::Router::new()
            .route("/jwks", axum::routing::get(serve_jwks))
            .with_state(published.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("an address");
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        TestProvider {
            issuer: format!("http://{addr}/realm"),
            audience: "boxoffice-api".into(),
            jwks_url: format!("http://{addr}/jwks"),
            published,
            signers: Mutex::default(),
            server,
        }
    }

    /// A new key for `alg`, published in the JWKS under a fresh kid.
    pub fn add_key(&self, alg: Algorithm) -> String {
        let (kid, jwk) = self.add_unpublished_key(alg);
        self.published.keys.lock().push(jwk);
        kid
    }

    /// A key the provider signs with but does not publish: its tokens name an unknown kid.
    pub fn add_unpublished_key(&self, alg: Algorithm) -> (String, Value) {
        let kid = format!("kid-{}", uuid::Uuid::new_v4().simple());
        let (mut jwk, key) = generate(alg);
        jwk["kid"] = kid.clone().into();
        jwk["alg"] = format!("{alg:?}").into();
        jwk["use"] = "sig".into();
        self.signers.lock().insert(kid.clone(), (alg, key));
        (kid, jwk)
    }

    /// Stops publishing `kid` (a rotation that retires it).
    pub fn withdraw(&self, kid: &str) {
        self.published.keys.lock().retain(|k| k["kid"] != kid);
    }

    pub fn set_offline(&self, offline: bool) {
        self.published.offline.store(offline, Ordering::SeqCst);
    }

    /// How many times the JWKS was asked for.
    pub fn fetches(&self) -> usize {
        self.published.fetches.load(Ordering::SeqCst)
    }

    /// Claims of a valid access token for `sub` at `now`, valid for an hour.
    pub fn claims(&self, sub: &str, now: Millis) -> Value {
        let secs = now.0 / 1000;
        json!({
            "iss": self.issuer, "aud": self.audience, "sub": sub,
            "iat": secs, "exp": secs + 3600, "email_verified": true,
            "created_at": secs - 86_400 * 365, "sid": "login-session-1",
        })
    }

    /// `claims` signed with the key `kid`.
    pub fn sign(&self, kid: &str, claims: &Value) -> String {
        let signers = self.signers.lock();
        let (alg, key) = signers.get(kid).expect("a key this provider made");
        let mut header = Header::new(*alg);
        header.kid = Some(kid.to_string());
        jsonwebtoken::encode(&header, claims, key).expect("the token signs")
    }

    /// What a server trusting this provider configures.
    pub fn config(&self) -> OidcConfig {
        serde_json::from_value(json!({
            "issuer": self.issuer, "audience": self.audience, "jwks_url": self.jwks_url,
            "created_at_claim": "created_at",
        }))
        .expect("a valid [oidc] section")
    }
}
