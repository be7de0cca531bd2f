//! The human check's proof of work on one core (criterion runs one thread): what a node
//! spends checking a solution at join, and what a client spends finding one.
//!
//! - `check`: `pow::solves` of a found nonce (one SHA-256 over the challenge and the
//!   nonce). The challenge token's HMAC, checked beside it, is the token verifier's
//!   cost (the `tokens` bench).
//! - `solve_d10`, `solve_d12`: `pow::solve` at difficulty 10 and 12, counting nonces up
//!   from 0 over a fixed set of challenges (each solved once per iteration), as the
//!   rehearsal's clients do; the expected work is 2^d hashes.
//!
//! Run: `cargo bench -p boxoffice-domain --bench pow -- --warm-up-time 1 --measurement-time 3`

use boxoffice_domain::pow;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("pow");
    g.throughput(Throughput::Elements(1));
    let challenge = "eyJhbGciOiJIUzI1NiJ9.a-challenge-of-the-usual-length.signature";
    let nonce = pow::solve(challenge, 12);
    g.bench_function("check", |b| {
        b.iter(|| assert!(pow::solves(challenge, &nonce, 12)))
    });
    let challenges: Vec<String> = (0..16).map(|i| format!("{challenge}-{i}")).collect();
    g.throughput(Throughput::Elements(challenges.len() as u64));
    for difficulty in [10u8, 12] {
        g.bench_function(format!("solve_d{difficulty}"), |b| {
            b.iter(|| {
                for ch in &challenges {
                    std::hint::black_box(pow::solve(ch, difficulty));
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
