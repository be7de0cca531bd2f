//! The public keys a proof may carry in its header (RFC 7517 JWK) and what a node keeps
//! of them: ES256 keys (`EC`, `P-256`) and EdDSA keys (`OKP`, `Ed25519`, RFC 8037),
//! their RFC 7638 thumbprints, and a bounded cache of keys already decoded.
//!
//! A thumbprint is computed from the members as sent: each coordinate must be the
//! 43-character base64url of 32 bytes, and the decoder refuses non-zero trailing bits,
//! so the text is the one canonical encoding and hashing it is hashing the key. A
//! thumbprint (SHA-256) names one key, so a key decoded once is looked up by it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use p256::ecdsa::signature::Verifier as _;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::es256::Es256Key;
use super::{ProofError, Thumbprint};

/// The signature algorithms a proof may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alg {
    /// ECDSA P-256 with SHA-256: what every browser's WebCrypto can keep non-extractable.
    Es256,
    /// Ed25519 (RFC 8037): about seven times cheaper to check.
    EdDsa,
}

impl Alg {
    pub(super) fn from_header(alg: &str) -> Option<Alg> {
        match alg {
            "ES256" => Some(Alg::Es256),
            "EdDSA" => Some(Alg::EdDsa),
            _ => None,
        }
    }
}

/// A public JWK. Any other member (a private `d` above all) makes the proof malformed.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Jwk {
    pub kty: String,
    pub crv: String,
    pub x: String,
    #[serde(default)]
    pub y: Option<String>,
    #[serde(default, rename = "alg")]
    pub _alg: Option<String>,
    #[serde(default, rename = "use")]
    pub _use: Option<String>,
    #[serde(default, rename = "key_ops")]
    pub _key_ops: Option<Vec<String>>,
    #[serde(default, rename = "ext")]
    pub _ext: Option<bool>,
}

/// A decoded public key, ready to verify.
#[derive(Clone)]
pub(super) enum PublicKey {
    P256(p256::ecdsa::VerifyingKey),
    /// A P-256 key with its precomputed multiples (`es256`): what the cache keeps.
    P256Tables(Arc<Es256Key>),
    Ed25519(ed25519_dalek::VerifyingKey),
}

impl PublicKey {
    /// Verifies a JWS signature (`r‖s` for ES256, RFC 8032's for EdDSA) over `signed`.
    pub(super) fn verify(&self, signed: &[u8], sig: &[u8; 64]) -> Result<(), ProofError> {
        match self {
            PublicKey::P256(key) => {
                let sig = p256::ecdsa::Signature::from_slice(sig)
                    .map_err(|_| ProofError::BadSignature)?;
                key.verify(signed, &sig)
            }
            PublicKey::P256Tables(key) => {
                let sig = p256::ecdsa::Signature::from_slice(sig)
                    .map_err(|_| ProofError::BadSignature)?;
                return match key.verify(signed, &sig) {
                    true => Ok(()),
                    false => Err(ProofError::BadSignature),
                };
            }
            PublicKey::Ed25519(key) => {
                key.verify_strict(signed, &ed25519_dalek::Signature::from_bytes(sig))
            }
        }
        .map_err(|_| ProofError::BadSignature)
    }
}

/// A header's key, its members checked against `alg`, not yet decoded.
pub(super) struct KeyMembers {
    alg: Alg,
    x: [u8; 32],
    y: [u8; 32],
    pub(super) digest: [u8; 32],
}

impl KeyMembers {
    pub(super) fn read(alg: Alg, jwk: &Jwk) -> Result<KeyMembers, ProofError> {
        let x = coordinate(&jwk.x)?;
        let (canonical, y) = match (alg, jwk.kty.as_str(), jwk.crv.as_str(), &jwk.y) {
            (Alg::Es256, "EC", "P-256", Some(y)) => (
                format!(r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{y}"}}"#, jwk.x),
                coordinate(y)?,
            ),
            (Alg::EdDsa, "OKP", "Ed25519", None) => (
                format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#, jwk.x),
                [0; 32],
            ),
            _ => return Err(ProofError::Malformed),
        };
        let digest = Sha256::digest(canonical.as_bytes()).into();
        Ok(KeyMembers { alg, x, y, digest })
    }

    /// RFC 7638 (and RFC 8037 §2 for `OKP`): the required members in lexicographic
    /// order, no whitespace, hashed.
    pub(super) fn thumbprint(&self) -> Thumbprint {
        Thumbprint(B64.encode(self.digest))
    }

    /// The key itself: a point on its curve (and, for Ed25519, not of small order).
    pub(super) fn decode(&self) -> Result<PublicKey, ProofError> {
        match self.alg {
            Alg::Es256 => {
                let point = p256::EncodedPoint::from_affine_coordinates(
                    &self.x.into(),
                    &self.y.into(),
                    false,
                );
                p256::ecdsa::VerifyingKey::from_encoded_point(&point)
                    .map(PublicKey::P256)
                    .map_err(|_| ProofError::Malformed)
            }
            Alg::EdDsa => match ed25519_dalek::VerifyingKey::from_bytes(&self.x) {
                Ok(key) if !key.is_weak() => Ok(PublicKey::Ed25519(key)),
                _ => Err(ProofError::Malformed),
            },
        }
    }
}

fn coordinate(b64: &str) -> Result<[u8; 32], ProofError> {
    let mut out = [0u8; 32];
    if b64.len() != 43 {
        return Err(ProofError::Malformed);
    }
    match B64.decode_slice(b64, &mut out) {
        Ok(32) => Ok(out),
        _ => Err(ProofError::Malformed),
    }
}

/// Decoded keys by thumbprint, so a buyer's key is decoded (its point validated or
/// decompressed, and for P-256 its multiples computed: `es256`) once for its holds,
/// checkouts and releases. Bounded: two generations of at most `capacity / 2` keys
/// each; when the young one fills, the old one is dropped and the young one takes its
/// place, so a key in use stays (a hit in the old generation moves it to the young one)
/// and memory never exceeds `capacity` keys (about 6 KB for a P-256 key, 200 bytes for
/// an Ed25519 one).
pub struct KeyCache {
    half: usize,
    generations: Mutex<[HashMap<[u8; 32], PublicKey>; 2]>,
}

impl KeyCache {
    pub fn new(capacity: usize) -> KeyCache {
        KeyCache {
            half: (capacity / 2).max(1),
            generations: Mutex::default(),
        }
    }

    /// The decoded key of `members`, from the cache or decoded (and kept) now.
    pub(super) fn key(&self, members: &KeyMembers) -> Result<PublicKey, ProofError> {
        if let Some(key) = self.find(&members.digest) {
            return Ok(key);
        }
        let key = match members.decode()? {
            PublicKey::P256(key) => PublicKey::P256Tables(Arc::new(Es256Key::new(&key))),
            other => other,
        };
        self.keep(members.digest, key.clone());
        Ok(key)
    }

    pub(super) fn find(&self, digest: &[u8; 32]) -> Option<PublicKey> {
        let mut g = self.generations.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(key) = g[0].get(digest) {
            return Some(key.clone());
        }
        let key = g[1].remove(digest)?;
        self.insert(&mut g, *digest, key.clone());
        Some(key)
    }

    fn keep(&self, digest: [u8; 32], key: PublicKey) {
        let mut g = self.generations.lock().unwrap_or_else(|e| e.into_inner());
        self.insert(&mut g, digest, key);
    }

    fn insert(&self, g: &mut [HashMap<[u8; 32], PublicKey>; 2], digest: [u8; 32], key: PublicKey) {
        if g[0].len() >= self.half {
            g[1] = std::mem::take(&mut g[0]);
        }
        g[0].insert(digest, key);
    }

    /// How many keys are kept now.
    pub fn len(&self) -> usize {
        let g = self.generations.lock().unwrap_or_else(|e| e.into_inner());
        g[0].len() + g[1].len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
