//! Token verifications per second on one core (criterion runs one thread): an admission
//! token as the hold path checks it, signature, payload and expiry.
//!
//! - `legacy_hmac`: the format used before compact JWS (`base64url(claims).hmac`, the
//!   key id inside the claims), as a faithful copy of its verify kept for comparison.
//! - `jws_hs256`: compact JWS, HMAC-SHA256 with the shared key (the default).
//! - `jws_eddsa`: compact JWS, Ed25519 (`[tokens] edge_algorithm = "eddsa"`).
//!
//! Run: `cargo bench -p boxoffice-domain --bench tokens -- --warm-up-time 1 --measurement-time 3`

use boxoffice_domain::token::{Claims, KeyRing, TokenKind};
use boxoffice_domain::{BuyerId, EventId, Millis};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn claims() -> Claims {
    Claims {
        event: Some(EventId(7)),
        position: Some(123_456),
        ..Claims::new(
            TokenKind::Admission,
            BuyerId::random(),
            "0123456789abcdef0123456789abcdef".into(),
            Millis(1_900_000_000_000),
        )
    }
}

/// The previous token format, signing and verifying exactly as it did.
mod legacy {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
    use boxoffice_domain::token::{TokenError, TokenKind};
    use boxoffice_domain::{BuyerId, EventId, Millis};
    use hmac::{Hmac, Mac};
    use serde::{Deserialize, Serialize};
    use sha2::Sha256;

    type HmacSha256 = Hmac<Sha256>;

    #[derive(Clone, Debug, Serialize, Deserialize)]
    pub struct Claims {
        pub kind: TokenKind,
        pub kid: String,
        pub buyer: BuyerId,
        pub sid: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub event: Option<EventId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub position: Option<u64>,
        pub exp: Millis,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pub verified: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub account_created_at: Option<Millis>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub difficulty: Option<u8>,
    }

    pub struct Ring {
        pub keys: Vec<(String, Vec<u8>)>,
    }

    impl Ring {
        pub fn sign(&self, mut claims: Claims) -> String {
            let (kid, secret) = &self.keys[0];
            claims.kid = kid.clone();
            let body = B64.encode(serde_json::to_vec(&claims).unwrap());
            let mut mac = HmacSha256::new_from_slice(secret).unwrap();
            mac.update(body.as_bytes());
            format!("{body}.{}", B64.encode(mac.finalize().into_bytes()))
        }

        pub fn verify(
            &self,
            token: &str,
            kind: TokenKind,
            now: Millis,
        ) -> Result<Claims, TokenError> {
            let (body, sig) = token.split_once('.').ok_or(TokenError::Malformed)?;
            let sig = B64.decode(sig).map_err(|_| TokenError::Malformed)?;
            let json = B64.decode(body).map_err(|_| TokenError::Malformed)?;
            let claims: Claims =
                serde_json::from_slice(&json).map_err(|_| TokenError::Malformed)?;
            let (_, secret) = self
                .keys
                .iter()
                .find(|(k, _)| *k == claims.kid)
                .ok_or(TokenError::UnknownKey)?;
            let mut mac = HmacSha256::new_from_slice(secret).expect("hmac takes any key length");
            mac.update(body.as_bytes());
            mac.verify_slice(&sig)
                .map_err(|_| TokenError::BadSignature)?;
            if claims.kind != kind {
                return Err(TokenError::WrongKind(kind));
            }
            if claims.exp <= now {
                return Err(TokenError::Expired);
            }
            Ok(claims)
        }
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("verify");
    g.throughput(Throughput::Elements(1));
    let now = Millis(1_800_000_000_000);
    let c0 = claims();

    let old = legacy::Ring {
        keys: vec![("k1".into(), vec![7; 32])],
    };
    let old_token = old.sign(legacy::Claims {
        kind: c0.kind,
        kid: String::new(),
        buyer: c0.buyer,
        sid: c0.sid.clone(),
        event: c0.event,
        position: c0.position,
        exp: c0.exp,
        verified: false,
        account_created_at: None,
        difficulty: None,
    });
    g.bench_function("legacy_hmac", |b| {
        b.iter(|| old.verify(&old_token, TokenKind::Admission, now).unwrap())
    });

    let hs = KeyRing::new(vec![("k1".into(), vec![7; 32])]).unwrap();
    let hs_token = hs.sign(c0.clone());
    g.bench_function("jws_hs256", |b| {
        b.iter(|| hs.verify(&hs_token, TokenKind::Admission, now).unwrap())
    });

    let ed = KeyRing::new(vec![("k1".into(), vec![7; 32])])
        .unwrap()
        .with_ed25519(vec![("e1".into(), [9; 32])])
        .unwrap();
    let ed_token = ed.sign(c0);
    g.bench_function("jws_eddsa", |b| {
        b.iter(|| ed.verify(&ed_token, TokenKind::Admission, now).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
