//! The key ring: which key signs each kind of token, which keys still verify, and the
//! public half published for edges. Every key is typed (HMAC secret or Ed25519 key)
//! and a token's header must name both its key and that key's algorithm, so a token
//! can never pick how it is checked (no `alg` confusion between HS256 and EdDSA).

use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::{Claims, TokenError, TokenKind, jws};
use crate::secret::Secret;
use crate::time::Millis;

type HmacSha256 = Hmac<Sha256>;

/// Most keys of each kind a ring holds: rotation needs two or three.
const MAX_KEYS: usize = 16;

/// How queue tickets and admission tokens are signed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeAlgorithm {
    /// HMAC-SHA256 with the shared key: an edge needs the secret to verify.
    #[default]
    Hs256,
    /// Ed25519: an edge verifies with the public keys at /.well-known/jwks.json.
    Eddsa,
}

#[derive(Clone)]
enum Material {
    Hmac(Secret<Vec<u8>>),
    Ed25519(Box<(SigningKey, VerifyingKey)>),
}

#[derive(Clone)]
struct Key {
    kid: String,
    /// The encoded protected header of tokens this key signs.
    header: String,
    material: Material,
}

impl Key {
    fn alg(&self) -> &'static str {
        match self.material {
            Material::Hmac(_) => "HS256",
            Material::Ed25519(_) => "EdDSA",
        }
    }

    fn sign(&self, signed: &[u8]) -> Vec<u8> {
        match &self.material {
            Material::Hmac(secret) => {
                let mut mac =
                    HmacSha256::new_from_slice(secret.expose()).expect("hmac takes any key");
                mac.update(signed);
                mac.finalize().into_bytes().to_vec()
            }
            Material::Ed25519(pair) => pair.0.sign(signed).to_bytes().to_vec(),
        }
    }

    /// Constant-time for HMAC (`verify_slice`); strict Ed25519 (no malleable or
    /// small-order signatures).
    fn verify(&self, signed: &[u8], signature: &str) -> Result<(), TokenError> {
        match &self.material {
            Material::Hmac(secret) => {
                let sig = jws::signature::<32>(signature)?;
                let mut mac =
                    HmacSha256::new_from_slice(secret.expose()).expect("hmac takes any key");
                mac.update(signed);
                mac.verify_slice(&sig).map_err(|_| TokenError::BadSignature)
            }
            Material::Ed25519(pair) => {
                let sig = ed25519_dalek::Signature::from_bytes(&jws::signature::<64>(signature)?);
                pair.1
                    .verify_strict(signed, &sig)
                    .map_err(|_| TokenError::BadSignature)
            }
        }
    }
}

/// The signing keys: the current HMAC key signs buyer sessions and challenges, the
/// current edge key (HMAC or Ed25519) signs tickets and admission tokens, and every
/// listed key verifies.
#[derive(Clone)]
pub struct KeyRing {
    keys: Vec<Key>,
    /// Index of the key signing tokens only nodes read.
    nodes: usize,
    /// Index of the key signing queue tickets and admission tokens.
    edge: usize,
}

fn check_kids<'a>(kids: impl Iterator<Item = &'a str>) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for kid in kids {
        if kid.is_empty() || kid.len() > 64 || !kid.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(format!(
                "key id {kid:?} must be 1-64 visible ASCII characters"
            ));
        }
        if !seen.insert(kid) {
            return Err(format!("key id {kid:?} is used twice"));
        }
    }
    Ok(())
}

impl KeyRing {
    /// HMAC keys as (key id, secret), current first; every token is HS256. Secrets
    /// shorter than 32 bytes are refused.
    pub fn new(hmac: Vec<(String, Vec<u8>)>) -> Result<KeyRing, String> {
        if hmac.is_empty() || hmac.len() > MAX_KEYS {
            return Err(format!("the key ring needs 1 to {MAX_KEYS} HMAC keys"));
        }
        if let Some((kid, _)) = hmac.iter().find(|(_, s)| s.len() < 32) {
            return Err(format!("signing key {kid:?} is shorter than 32 bytes"));
        }
        check_kids(hmac.iter().map(|(k, _)| k.as_str()))?;
        let keys = hmac
            .into_iter()
            .map(|(kid, secret)| Key {
                header: jws::encode_header("HS256", &kid),
                kid,
                material: Material::Hmac(Secret::new(secret)),
            })
            .collect();
        Ok(KeyRing {
            keys,
            nodes: 0,
            edge: 0,
        })
    }

    /// Adds Ed25519 keys as (key id, 32-byte seed), current first: the current one signs
    /// queue tickets and admission tokens from now on; all of them verify and are
    /// published.
    pub fn with_ed25519(mut self, ed: Vec<(String, [u8; 32])>) -> Result<KeyRing, String> {
        if ed.is_empty() || ed.len() > MAX_KEYS {
            return Err(format!("EdDSA signing needs 1 to {MAX_KEYS} Ed25519 keys"));
        }
        let first = self.keys.len();
        for (kid, seed) in ed {
            let signing = SigningKey::from_bytes(&seed);
            let verifying = signing.verifying_key();
            self.keys.push(Key {
                header: jws::encode_header("EdDSA", &kid),
                kid,
                material: Material::Ed25519(Box::new((signing, verifying))),
            });
        }
        check_kids(self.keys.iter().map(|k| k.kid.as_str()))?;
        self.edge = first;
        Ok(self)
    }

    /// Which algorithm signs queue tickets and admission tokens.
    pub fn edge_algorithm(&self) -> EdgeAlgorithm {
        match self.keys[self.edge].material {
            Material::Hmac(_) => EdgeAlgorithm::Hs256,
            Material::Ed25519(_) => EdgeAlgorithm::Eddsa,
        }
    }

    pub fn sign(&self, claims: Claims) -> String {
        let key = &self.keys[if claims.kind.edge_facing() {
            self.edge
        } else {
            self.nodes
        }];
        let payload = jws::encode(&serde_json::to_vec(&claims).expect("claims serialize"));
        let mut token = String::with_capacity(key.header.len() + payload.len() + 90);
        token.push_str(&key.header);
        token.push('.');
        token.push_str(&payload);
        let signature = jws::encode(&key.sign(token.as_bytes()));
        token.push('.');
        token.push_str(&signature);
        token
    }

    /// The key a header names. Our own headers are recognised byte for byte; any other
    /// is decoded, and must name a key of ours together with that key's algorithm.
    fn key_for(&self, header: &str) -> Result<&Key, TokenError> {
        if let Some(key) = self.keys.iter().find(|k| k.header == header) {
            return Ok(key);
        }
        let (alg, kid) = jws::header(header)?;
        let kid = kid.ok_or(TokenError::UnknownKey)?;
        let key = self
            .keys
            .iter()
            .find(|k| k.kid == kid)
            .ok_or(TokenError::UnknownKey)?;
        if key.alg() != alg {
            return Err(TokenError::BadSignature);
        }
        Ok(key)
    }

    /// Whether `token` names one of this ring's keys (with its algorithm): ours to
    /// verify, rather than an identity provider's. Checks no signature.
    pub fn names_own_key(&self, token: &str) -> bool {
        jws::split(token).is_ok_and(|p| self.key_for(p.header).is_ok())
    }

    /// Checks signature (before reading the payload), kind and expiry. The caller
    /// checks event and session binding.
    pub fn verify(&self, token: &str, kind: TokenKind, now: Millis) -> Result<Claims, TokenError> {
        let parts = jws::split(token)?;
        let key = self.key_for(parts.header)?;
        key.verify(parts.signed.as_bytes(), parts.signature)?;
        let json = jws::payload(parts.payload)?;
        let claims: Claims = serde_json::from_slice(&json).map_err(|_| TokenError::Malformed)?;
        if claims.kind != kind {
            return Err(TokenError::WrongKind(kind));
        }
        if claims.exp <= now {
            return Err(TokenError::Expired);
        }
        Ok(claims)
    }

    /// Like `verify`, and the token must be scoped to `event`.
    pub fn verify_for_event(
        &self,
        token: &str,
        kind: TokenKind,
        event: crate::ids::EventId,
        now: Millis,
    ) -> Result<Claims, TokenError> {
        let claims = self.verify(token, kind, now)?;
        if claims.event != Some(event) {
            return Err(TokenError::WrongEvent);
        }
        Ok(claims)
    }

    /// Like `verify_for_event`, and the token must belong to `session`: a token copied
    /// to another device (or sold with a bot's session) is refused there.
    pub fn verify_bound(
        &self,
        token: &str,
        kind: TokenKind,
        event: crate::ids::EventId,
        session: &str,
        now: Millis,
    ) -> Result<Claims, TokenError> {
        let claims = self.verify_for_event(token, kind, event, now)?;
        if claims.sid != session {
            return Err(TokenError::WrongSession);
        }
        Ok(claims)
    }

    /// The JSON Web Key Set of the public keys (Ed25519 only: HMAC secrets are never
    /// published), current first. Empty when tickets and admission tokens are HS256.
    pub fn jwks(&self) -> String {
        let mut eds: Vec<&Key> = self
            .keys
            .iter()
            .filter(|k| matches!(k.material, Material::Ed25519(_)))
            .collect();
        // The current key first; the others in the order they were listed.
        eds.sort_by_key(|k| !std::ptr::eq(*k, &self.keys[self.edge]));
        let keys: Vec<serde_json::Value> = eds
            .into_iter()
            .filter_map(|k| match &k.material {
                Material::Ed25519(pair) => Some(serde_json::json!({
                    "kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig",
                    "kid": k.kid, "x": jws::encode(pair.1.as_bytes()),
                })),
                Material::Hmac(_) => None,
            })
            .collect();
        serde_json::json!({ "keys": keys }).to_string()
    }
}
