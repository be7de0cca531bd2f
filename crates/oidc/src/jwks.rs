//! The provider's signing keys, fetched from its JWKS URL and cached. They are fetched
//! again when the cache is older than its TTL, or when a token names a key id the cache
//! does not know (the provider rotated its keys), but never twice within the refetch
//! floor: a flood of tokens with made-up key ids costs the provider one request per
//! floor, and a failed fetch keeps the keys already known.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use boxoffice_domain::Millis;
use boxoffice_domain::token::TokenError;
use boxoffice_engine::ports::IdentityError;
use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use parking_lot::RwLock;

use crate::OidcConfig;

/// Largest JWKS document read; real ones are a few kilobytes.
const MAX_BODY: usize = 256 * 1024;
/// Most keys kept from one document.
const MAX_KEYS: usize = 64;

struct Entry {
    key: DecodingKey,
    /// The algorithm the provider pinned to the key, if it did.
    alg: Option<String>,
}

#[derive(Default)]
struct Cached {
    keys: HashMap<String, Arc<Entry>>,
    fetched_at: Option<Millis>,
    /// When the last fetch started, successful or not: the refetch floor counts from it.
    attempted_at: Option<Millis>,
}

pub(crate) struct Jwks {
    client: reqwest::Client,
    url: String,
    ttl_ms: i64,
    floor_ms: i64,
    cached: RwLock<Cached>,
    /// One fetch at a time; others wait for it and read its result.
    fetching: tokio::sync::Mutex<()>,
}

fn ms(secs: u64) -> i64 {
    i64::try_from(secs).unwrap_or(i64::MAX / 1000) * 1000
}

impl Jwks {
    pub(crate) fn new(config: &OidcConfig) -> Result<Jwks, String> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(config.fetch_timeout_ms))
            // The URL checked at start-up is the one fetched: no redirect to another.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("building the JWKS client: {e}"))?;
        Ok(Jwks {
            client,
            url: config.jwks_url.clone(),
            ttl_ms: ms(config.jwks_cache_ttl_s),
            floor_ms: ms(config.jwks_refetch_min_s),
            cached: RwLock::default(),
            fetching: tokio::sync::Mutex::new(()),
        })
    }

    /// The key `kid` names (the only key, when the token names none), for `alg`.
    pub(crate) async fn key(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
        now: Millis,
    ) -> Result<DecodingKey, IdentityError> {
        self.refresh_if_needed(kid, now).await;
        let entry = match self.lookup(kid) {
            Some(e) => e,
            None if self.cached.read().fetched_at.is_none() => {
                return Err(IdentityError::Unavailable(
                    "the identity provider's keys could not be fetched".into(),
                ));
            }
            None => return Err(TokenError::UnknownKey.into()),
        };
        if entry
            .alg
            .as_deref()
            .is_some_and(|a| a != format!("{alg:?}"))
        {
            return Err(TokenError::BadSignature.into());
        }
        Ok(entry.key.clone())
    }

    /// Fetches the set when the key is unknown, or when the set is past its TTL; a
    /// failure is logged and the keys already known stay in use.
    async fn refresh_if_needed(&self, kid: Option<&str>, now: Millis) {
        let fresh = self
            .cached
            .read()
            .fetched_at
            .is_some_and(|at| now.0.saturating_sub(at.0) < self.ttl_ms);
        let outcome = match self.lookup(kid) {
            None => Some(self.refresh(now).await),
            // A known key whose set is merely stale: one request refreshes it, the
            // others carry on with the key they have.
            Some(_) if !fresh => match self.fetching.try_lock() {
                Ok(one) => Some(self.refresh_holding(one, now).await),
                Err(_) => None,
            },
            Some(_) => None,
        };
        if let Some(Err(e)) = outcome {
            tracing::warn!(url = %self.url, error = %e, "could not fetch the identity provider's keys");
        }
    }

    fn lookup(&self, kid: Option<&str>) -> Option<Arc<Entry>> {
        let cached = self.cached.read();
        match kid {
            Some(kid) => cached.keys.get(kid).cloned(),
            None if cached.keys.len() == 1 => cached.keys.values().next().cloned(),
            None => None,
        }
    }

    /// Fetches the key set unless a fetch started within the floor; returns how many
    /// keys are known after it.
    pub(crate) async fn refresh(&self, now: Millis) -> Result<usize, String> {
        let one = self.fetching.lock().await;
        self.refresh_holding(one, now).await
    }

    async fn refresh_holding(
        &self,
        _one: tokio::sync::MutexGuard<'_, ()>,
        now: Millis,
    ) -> Result<usize, String> {
        let due = |c: &Cached| {
            c.attempted_at
                .is_none_or(|at| now.0.saturating_sub(at.0) >= self.floor_ms)
        };
        if !due(&self.cached.read()) {
            return Ok(self.cached.read().keys.len());
        }
        self.cached.write().attempted_at = Some(now);
        let keys = self.fetch().await?;
        let mut cached = self.cached.write();
        cached.keys = keys;
        cached.fetched_at = Some(now);
        Ok(cached.keys.len())
    }

    async fn fetch(&self) -> Result<HashMap<String, Arc<Entry>>, String> {
        let mut res = self
            .client
            .get(&self.url)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !res.status().is_success() {
            return Err(format!("the JWKS URL answered {}", res.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = res.chunk().await.map_err(|e| e.to_string())? {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(format!("the JWKS document is larger than {MAX_BODY} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        parse(&body)
    }
}

/// The usable signing keys of a JWKS document. Keys this server cannot use (encryption
/// keys, symmetric keys, unknown types) are skipped rather than failing the set.
fn parse(body: &[u8]) -> Result<HashMap<String, Arc<Entry>>, String> {
    #[derive(serde::Deserialize)]
    struct Set {
        keys: Vec<serde_json::Value>,
    }
    let set: Set = serde_json::from_slice(body).map_err(|e| format!("not a JWKS: {e}"))?;
    let mut out = HashMap::new();
    let single = set.keys.len() == 1;
    for raw in set.keys.into_iter().take(MAX_KEYS) {
        let Ok(jwk) = serde_json::from_value::<Jwk>(raw) else {
            continue;
        };
        let symmetric = matches!(
            jwk.algorithm,
            jsonwebtoken::jwk::AlgorithmParameters::OctetKey(_)
        );
        if symmetric || matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
            continue;
        }
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        let Some(kid) = jwk.common.key_id.clone().or(single.then(String::new)) else {
            continue;
        };
        let alg = jwk.common.key_algorithm.map(|a| a.to_string());
        out.insert(kid, Arc::new(Entry { key, alg }));
    }
    Ok(out)
}
