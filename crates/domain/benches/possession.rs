//! Proofs of possession (RFC 9449 DPoP, ES256) per second on one core (criterion runs
//! one thread): what a node spends on each hold, checkout and release of an event that
//! asks for proofs, and what a client spends making one.
//!
//! - `check_es256`: `possession::check` of a fresh proof (header and JWK decoded, the
//!   P-256 point validated, the signature verified, the claims read and compared). The
//!   replay memory's write is a store call and is not counted here.
//! - `sign_es256`: `ProofKey::proof`, the recipe of clients that are not a browser.
//!
//! Run: `cargo bench -p boxoffice-domain --bench possession -- --warm-up-time 1 --measurement-time 3`

use boxoffice_domain::Millis;
use boxoffice_domain::possession::{ProofKey, ProofRequest, ProofWindow, check};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("possession");
    g.throughput(Throughput::Elements(1));
    let now = Millis(1_800_000_000_000);
    let key = ProofKey::from_seed(&[7; 32]).expect("a valid scalar");
    let path = "/v1/events/7/holds";
    let proof = key.proof(
        "POST",
        path,
        now.0 / 1000,
        "0b1c9a0e-5d7f-4c1e-9a43-8c2b6f0d1e2a",
    );
    let request = ProofRequest {
        method: "POST",
        path,
    };
    let window = ProofWindow {
        max_age_s: 60,
        skew_s: 5,
    };
    g.bench_function("check_es256", |b| {
        b.iter(|| check(&proof, request, window, now).unwrap())
    });
    g.bench_function("sign_es256", |b| {
        b.iter(|| key.proof("POST", path, now.0 / 1000, "0b1c9a0e-5d7f-4c1e"))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
