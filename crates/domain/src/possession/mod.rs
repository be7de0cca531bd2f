//! Proof of possession (the DPoP scheme of RFC 9449): admission that cannot change
//! hands. A buyer's client makes a key pair it cannot export (WebCrypto: Ed25519 where
//! the browser has it, ECDSA P-256 elsewhere) and shows its public half when it joins
//! the line; the queue ticket and the admission
//! token then carry the key's RFC 7638 thumbprint (`cnf.jkt`). Every hold, checkout and
//! release carries a fresh proof: a compact JWS with `typ: dpop+jwt`, `alg: EdDSA` or `ES256`
//! and the public key in its header, over the request's method (`htm`), path (`htu`), time
//! (`iat`) and a unique id (`jti`). A token copied to another client is useless there,
//! since that client cannot sign with the key the token names.
//!
//! This module checks one proof against one request; the replay memory (a `jti` seen
//! before) and the binding to a token are the engine's. A node checks with a
//! `KeyCache`, so each buyer's key is decoded once (`keys`). `ProofKey` is the client's
//! half of the recipe, for the rehearsal's crowd and the tests (`client`).

mod client;
mod es256;
mod keys;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde::{Deserialize, Serialize};

use crate::time::Millis;
pub use client::ProofKey;
pub use keys::KeyCache;
use keys::{Alg, Jwk, KeyMembers};

/// Longest proof accepted: a proof with its key is about 600 bytes (ES256) or 500 (EdDSA).
pub const MAX_PROOF: usize = 2_048;
/// Longest `jti` accepted (a UUID is 36 characters).
pub const MAX_JTI: usize = 128;

/// Whether an event's buyers prove possession of a key at each hold, checkout and
/// release.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PopMode {
    /// Nothing is asked or checked (the default).
    #[default]
    Off,
    /// A client may bind its admission to a key at join; once it has, every hold,
    /// checkout and release of that admission needs a proof signed with that key.
    Optional,
    /// Every join binds a key and every hold, checkout and release carries a proof.
    Required,
}

/// The RFC 7638 thumbprint of a public key: base64url(SHA-256 of its canonical JWK).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Thumbprint(pub String);

impl Thumbprint {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The `cnf` (confirmation) claim of a token bound to a key (RFC 7800, RFC 9449 §6).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confirmation {
    pub jkt: Thumbprint,
}

/// The request a proof must be for.
#[derive(Clone, Copy, Debug)]
pub struct ProofRequest<'a> {
    /// `POST`, `DELETE`, ...
    pub method: &'a str,
    /// The request's path, without query.
    pub path: &'a str,
}

/// How old (and how far ahead of our clock) a proof's `iat` may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProofWindow {
    pub max_age_s: u64,
    pub skew_s: u64,
}

/// A proof whose signature, form and request matched, not yet checked against a token
/// or the replay memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckedProof {
    pub jkt: Thumbprint,
    pub jti: String,
    /// Seconds since the epoch.
    pub iat: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    #[error("the proof is not a well-formed ES256 or EdDSA dpop+jwt with its public key")]
    Malformed,
    #[error("the proof's signature does not verify with the key in its header")]
    BadSignature,
    #[error("the proof was made for another method or path")]
    WrongRequest,
    #[error("the proof's iat is outside the accepted window")]
    Stale,
}

#[derive(Deserialize)]
struct Header {
    typ: String,
    alg: String,
    jwk: Jwk,
    /// Extensions we would have to understand: none is (RFC 7515 4.1.11).
    #[serde(default)]
    crit: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ProofClaims {
    htm: String,
    htu: String,
    iat: i64,
    jti: String,
}

/// The path an `htu` names: an absolute URI's path, or the path itself, without query
/// or fragment. Only the path is compared: behind a proxy or a CDN a node cannot know
/// the origin the client used.
fn htu_path(htu: &str) -> &str {
    let rest = htu
        .strip_prefix("https://")
        .or_else(|| htu.strip_prefix("http://"));
    let path = match rest {
        Some(r) => r.find('/').map_or("/", |i| &r[i..]),
        None => htu,
    };
    path.split(['?', '#']).next().unwrap_or(path)
}

/// Checks a proof's form, signature, request and age. `now` is the server's clock.
/// The key is decoded for this proof alone; a node checks with `KeyCache::check`.
pub fn check(
    proof: &str,
    request: ProofRequest<'_>,
    window: ProofWindow,
    now: Millis,
) -> Result<CheckedProof, ProofError> {
    check_with(None, proof, request, window, now)
}

impl KeyCache {
    /// `check`, with the proof's key decoded once and kept by its thumbprint.
    pub fn check(
        &self,
        proof: &str,
        request: ProofRequest<'_>,
        window: ProofWindow,
        now: Millis,
    ) -> Result<CheckedProof, ProofError> {
        check_with(Some(self), proof, request, window, now)
    }
}

fn check_with(
    cache: Option<&KeyCache>,
    proof: &str,
    request: ProofRequest<'_>,
    window: ProofWindow,
    now: Millis,
) -> Result<CheckedProof, ProofError> {
    if proof.len() > MAX_PROOF {
        return Err(ProofError::Malformed);
    }
    let (signed, signature) = proof.rsplit_once('.').ok_or(ProofError::Malformed)?;
    let (header, payload) = signed.split_once('.').ok_or(ProofError::Malformed)?;
    let header: Header = decode_json(header)?;
    let alg = Alg::from_header(&header.alg).ok_or(ProofError::Malformed)?;
    if header.typ != "dpop+jwt" || header.crit.is_some() {
        return Err(ProofError::Malformed);
    }
    let members = KeyMembers::read(alg, &header.jwk)?;
    let key = match cache {
        Some(cache) => cache.key(&members)?,
        None => members.decode()?,
    };
    let mut sig = [0u8; 64];
    if signature.len() != 86 || !matches!(B64.decode_slice(signature, &mut sig), Ok(64)) {
        return Err(ProofError::BadSignature);
    }
    key.verify(signed.as_bytes(), &sig)?;
    let claims: ProofClaims = decode_json(payload)?;
    if claims.jti.is_empty()
        || claims.jti.len() > MAX_JTI
        || !claims.jti.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(ProofError::Malformed);
    }
    if !claims.htm.eq_ignore_ascii_case(request.method) || htu_path(&claims.htu) != request.path {
        return Err(ProofError::WrongRequest);
    }
    let now_s = now.0.div_euclid(1000);
    let oldest = now_s.saturating_sub(i64::try_from(window.max_age_s).unwrap_or(i64::MAX));
    let newest = now_s.saturating_add(i64::try_from(window.skew_s).unwrap_or(i64::MAX));
    if claims.iat < oldest || claims.iat > newest {
        return Err(ProofError::Stale);
    }
    Ok(CheckedProof {
        jkt: members.thumbprint(),
        jti: claims.jti,
        iat: claims.iat,
    })
}

fn decode_json<T: serde::de::DeserializeOwned>(b64: &str) -> Result<T, ProofError> {
    let bytes = B64.decode(b64).map_err(|_| ProofError::Malformed)?;
    serde_json::from_slice(&bytes).map_err(|_| ProofError::Malformed)
}

#[cfg(test)]
mod tests;
