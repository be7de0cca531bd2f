//! The public form of an event's keys: a JSON Web Key Set (RFC 7517, Ed25519 keys as
//! in RFC 8037) with the event's id beside the keys, so a gate can tell which event a
//! downloaded set is for:
//!
//! ```json
//! {"event_id": 7, "keys": [{"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA",
//!   "use": "sig", "kid": "2", "x": "<32 bytes, base64url>"}]}
//! ```
//!
//! Reading one is strict: only Ed25519 signing keys, each `kid` a key number written
//! the one way we write it, and everything `PublicKeys::new` checks.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ed25519_dalek::VerifyingKey;
use serde::{Deserialize, Serialize};

use super::KeyError;
use super::keys::{KeyId, MAX_KEYS, PublicKeys};
use crate::ids::EventId;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeySet {
    event_id: EventId,
    keys: Vec<Jwk>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Jwk {
    kty: String,
    crv: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    alg: Option<String>,
    #[serde(default, rename = "use", skip_serializing_if = "Option::is_none")]
    use_: Option<String>,
    kid: String,
    x: String,
}

impl Jwk {
    fn public(kid: KeyId, key: &VerifyingKey) -> Jwk {
        Jwk {
            kty: "OKP".into(),
            crv: "Ed25519".into(),
            alg: Some("EdDSA".into()),
            use_: Some("sig".into()),
            kid: kid.0.to_string(),
            x: B64.encode(key.as_bytes()),
        }
    }

    fn parse(&self) -> Result<(KeyId, VerifyingKey), KeyError> {
        let signing = self.alg.as_deref().is_none_or(|a| a == "EdDSA")
            && self.use_.as_deref().is_none_or(|u| u == "sig");
        if self.kty != "OKP" || self.crv != "Ed25519" || !signing {
            return Err(KeyError::BadKey);
        }
        let kid = self.kid.parse::<u32>().map_err(|_| KeyError::BadKey)?;
        if kid.to_string() != self.kid {
            return Err(KeyError::BadKey);
        }
        let mut x = [0u8; 32];
        match B64.decode_slice(&self.x, &mut x) {
            Ok(32) if self.x.len() == 43 => {}
            _ => return Err(KeyError::BadKey),
        }
        let key = VerifyingKey::from_bytes(&x).map_err(|_| KeyError::BadKey)?;
        Ok((KeyId(kid), key))
    }
}

impl From<PublicKeys> for KeySet {
    fn from(p: PublicKeys) -> KeySet {
        KeySet {
            event_id: p.event,
            keys: p.keys.iter().map(|(id, k)| Jwk::public(*id, k)).collect(),
        }
    }
}

impl TryFrom<KeySet> for PublicKeys {
    type Error = KeyError;
    fn try_from(set: KeySet) -> Result<PublicKeys, KeyError> {
        if set.keys.len() > MAX_KEYS {
            return Err(KeyError::TooManyKeys);
        }
        let keys = set.keys.iter().map(Jwk::parse).collect::<Result<_, _>>()?;
        PublicKeys::new(set.event_id, keys)
    }
}

impl Serialize for PublicKeys {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        KeySet::from(self.clone()).serialize(s)
    }
}

impl<'de> Deserialize<'de> for PublicKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let set = KeySet::deserialize(d)?;
        PublicKeys::try_from(set).map_err(serde::de::Error::custom)
    }
}
