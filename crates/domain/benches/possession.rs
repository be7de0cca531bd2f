//! Proofs of possession (RFC 9449 DPoP) per second on one core (criterion runs one
//! thread): what a node spends on each hold, checkout and release of an event that asks
//! for proofs, and what a client spends making one. Both algorithms, in one run.
//!
//! - `check_es256`, `check_eddsa`: `possession::check` of a fresh proof (header and JWK
//!   decoded, the key decoded and validated, the signature verified, the claims read
//!   and compared). The replay memory's write is a store call and is not counted here.
//! - `check_*_first_use`: the same through a `KeyCache` that has not seen the key: it
//!   decodes it and, for P-256, computes its multiples (a buyer's first hold).
//! - `check_*_cached`: through a `KeyCache` that has seen the key (a buyer's checkout
//!   and later requests), as a node checks requests bound to a key.
//! - `verify_*_only`: the signature verification alone with a decoded key: the share of
//!   the check that is the curve's, the rest being JSON, base64 and the thumbprint.
//! - `sign_es256`, `sign_eddsa`: `ProofKey::proof`, the recipe of clients that are not
//!   a browser.
//!
//! Run: `cargo bench -p boxoffice-domain --bench possession -- --warm-up-time 1 --measurement-time 3`

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use boxoffice_domain::Millis;
use boxoffice_domain::possession::{KeyCache, ProofKey, ProofRequest, ProofWindow, check};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use p256::ecdsa::signature::Verifier as _;

const NOW: Millis = Millis(1_800_000_000_000);
const PATH: &str = "/v1/events/7/holds";
const REQUEST: ProofRequest<'static> = ProofRequest {
    method: "POST",
    path: PATH,
};
const WINDOW: ProofWindow = ProofWindow {
    max_age_s: 60,
    skew_s: 5,
};

fn proof_of(key: &ProofKey) -> String {
    key.proof(
        "POST",
        PATH,
        NOW.0 / 1000,
        "0b1c9a0e-5d7f-4c1e-9a43-8c2b6f0d1e2a",
    )
}

/// The signed part, the signature bytes and the header's JWK of a proof.
fn parts(proof: &str) -> (String, [u8; 64], serde_json::Value) {
    let (signed, sig) = proof.rsplit_once('.').unwrap();
    let mut bytes = [0u8; 64];
    B64.decode_slice(sig, &mut bytes).unwrap();
    let header: serde_json::Value =
        serde_json::from_slice(&B64.decode(signed.split('.').next().unwrap()).unwrap()).unwrap();
    (signed.to_string(), bytes, header["jwk"].clone())
}

fn coordinate(jwk: &serde_json::Value, name: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    B64.decode_slice(jwk[name].as_str().unwrap(), &mut out)
        .unwrap();
    out
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("possession");
    g.throughput(Throughput::Elements(1));
    let es = ProofKey::from_seed(&[7; 32]).expect("a valid scalar");
    let ed = ProofKey::ed25519_from_seed(&[7; 32]);
    let cache = KeyCache::new(1024);
    for (name, key) in [("es256", &es), ("eddsa", &ed)] {
        let proof = proof_of(key);
        g.bench_function(format!("check_{name}"), |b| {
            b.iter(|| check(&proof, REQUEST, WINDOW, NOW).unwrap())
        });
        g.bench_function(format!("check_{name}_first_use"), |b| {
            b.iter(|| {
                KeyCache::new(2)
                    .check(&proof, REQUEST, WINDOW, NOW)
                    .unwrap()
            })
        });
        g.bench_function(format!("check_{name}_cached"), |b| {
            b.iter(|| cache.check(&proof, REQUEST, WINDOW, NOW).unwrap())
        });
    }
    let (signed, sig, jwk) = parts(&proof_of(&es));
    let point = p256::EncodedPoint::from_affine_coordinates(
        &coordinate(&jwk, "x").into(),
        &coordinate(&jwk, "y").into(),
        false,
    );
    let p256_key = p256::ecdsa::VerifyingKey::from_encoded_point(&point).unwrap();
    let p256_sig = p256::ecdsa::Signature::from_slice(&sig).unwrap();
    g.bench_function("verify_es256_only", |b| {
        b.iter(|| p256_key.verify(signed.as_bytes(), &p256_sig).unwrap())
    });
    let (signed, sig, jwk) = parts(&proof_of(&ed));
    let ed_key = ed25519_dalek::VerifyingKey::from_bytes(&coordinate(&jwk, "x")).unwrap();
    let ed_sig = ed25519_dalek::Signature::from_bytes(&sig);
    g.bench_function("verify_eddsa_only", |b| {
        b.iter(|| ed_key.verify_strict(signed.as_bytes(), &ed_sig).unwrap())
    });
    for (name, key) in [("es256", &es), ("eddsa", &ed)] {
        g.bench_function(format!("sign_{name}"), |b| {
            b.iter(|| key.proof("POST", PATH, NOW.0 / 1000, "0b1c9a0e-5d7f-4c1e"))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
