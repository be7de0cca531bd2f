//! `ProofKey`: a client's key and the proofs it signs, the recipe for clients that are
//! not a browser (the rehearsal's crowd, the tests). A browser makes the same proofs
//! with WebCrypto (`web/app/pop.js`).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use p256::ecdsa::signature::Signer as _;

use super::Thumbprint;
use super::keys::{Alg, Jwk, KeyMembers};

#[derive(Clone)]
enum Signing {
    Es256(p256::ecdsa::SigningKey),
    EdDsa(ed25519_dalek::SigningKey),
}

#[derive(Clone)]
pub struct ProofKey {
    signing: Signing,
    /// The encoded protected header, the same for every proof.
    header: String,
    jkt: Thumbprint,
}

impl ProofKey {
    /// An ES256 (P-256) key from 32 random bytes (the caller draws them: no I/O here).
    /// None for the rare seed that is not a valid P-256 scalar.
    pub fn from_seed(seed: &[u8; 32]) -> Option<ProofKey> {
        let signing = p256::ecdsa::SigningKey::from_slice(seed).ok()?;
        let point = signing.verifying_key().to_encoded_point(false);
        let jwk = jwk("EC", "P-256", point.x()?, Some(point.y()?));
        Some(ProofKey::new(Signing::Es256(signing), Alg::Es256, jwk))
    }

    /// An EdDSA (Ed25519) key from its 32-byte secret seed (the caller draws it).
    pub fn ed25519_from_seed(seed: &[u8; 32]) -> ProofKey {
        let signing = ed25519_dalek::SigningKey::from_bytes(seed);
        let public = signing.verifying_key().to_bytes();
        let jwk = jwk("OKP", "Ed25519", &public, None);
        ProofKey::new(Signing::EdDsa(signing), Alg::EdDsa, jwk)
    }

    fn new(signing: Signing, alg: Alg, jwk: Jwk) -> ProofKey {
        let jkt = KeyMembers::read(alg, &jwk)
            .expect("a key this module made is well formed")
            .thumbprint();
        let mut members = serde_json::json!({"kty": jwk.kty, "crv": jwk.crv, "x": jwk.x});
        if let Some(y) = jwk.y {
            members["y"] = y.into();
        }
        let name = match alg {
            Alg::Es256 => "ES256",
            Alg::EdDsa => "EdDSA",
        };
        let header = serde_json::json!({"typ": "dpop+jwt", "alg": name, "jwk": members});
        ProofKey {
            signing,
            header: B64.encode(header.to_string()),
            jkt,
        }
    }

    pub fn thumbprint(&self) -> &Thumbprint {
        &self.jkt
    }

    /// A proof for one request: `iat` in seconds since the epoch, `jti` unique per
    /// proof (a UUID).
    pub fn proof(&self, method: &str, path: &str, iat: i64, jti: &str) -> String {
        let claims = serde_json::json!({"htm": method, "htu": path, "iat": iat, "jti": jti});
        let mut out = format!("{}.{}", self.header, B64.encode(claims.to_string()));
        let sig: [u8; 64] = match &self.signing {
            Signing::Es256(k) => {
                let sig: p256::ecdsa::Signature = k.sign(out.as_bytes());
                let mut bytes = [0u8; 64];
                bytes.copy_from_slice(&sig.to_bytes());
                bytes
            }
            Signing::EdDsa(k) => k.sign(out.as_bytes()).to_bytes(),
        };
        out.push('.');
        out.push_str(&B64.encode(sig));
        out
    }
}

fn jwk(kty: &str, crv: &str, x: &[u8], y: Option<&[u8]>) -> Jwk {
    Jwk {
        kty: kty.into(),
        crv: crv.into(),
        x: B64.encode(x),
        y: y.map(|y| B64.encode(y)),
        _alg: None,
        _use: None,
        _key_ops: None,
        _ext: None,
    }
}
