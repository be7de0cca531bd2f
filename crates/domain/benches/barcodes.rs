//! Barcode verifications and signatures per second on one core (criterion runs one
//! thread), as a gate and the issuing server do them.
//!
//! - `verify/static`: decode, parse, event and key, Ed25519 signature, revocation (a
//!   list of 50,000 revoked tickets, a stadium's worth).
//! - `verify/rotating`: the same and the time-step code (three HMACs at most).
//! - `sign/static`, `sign/rotating`: issuing a barcode, and for a rotating one also the
//!   holder's secret and the code shown.
//!
//! Run: `cargo bench -p boxoffice-domain --bench barcodes -- --warm-up-time 1 --measurement-time 3`

use boxoffice_domain::ticket::{EventKeys, Revocations, RotationSecret, SeatLabel, Ticket, verify};
use boxoffice_domain::{BuyerId, EventId, Millis, OrderId};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use uuid::Uuid;

const NOW: Millis = Millis(1_800_000_000_000);

fn ticket() -> Ticket {
    let seat = SeatLabel::try_from("FLOOR-C-12".to_owned()).expect("a valid label");
    Ticket::issue(OrderId::random(), EventId(1234), seat, BuyerId::random())
}

fn revocations() -> Revocations {
    let mut r = Revocations::default();
    for n in 0..50_000u128 {
        r.revoke(boxoffice_domain::ticket::TicketId(Uuid::from_u128(n)), 1);
    }
    r
}

fn bench_verify(c: &mut Criterion) {
    let mut g = c.benchmark_group("verify");
    g.throughput(Throughput::Elements(1));
    let revoked = revocations();
    let plain = EventKeys::generate(EventId(1234), [7; 32]).expect("keys");
    let code = plain.issue(&ticket(), NOW).expect("issue").0.text();
    g.bench_function("static", |b| {
        b.iter(|| verify(&code, plain.public(), &revoked, None, NOW).expect("admits"))
    });

    let rotating = plain.with_rotation(RotationSecret::from_bytes([9; 32]));
    let (code, secret) = rotating.issue(&ticket(), NOW).expect("issue");
    let shown = code.text_at(&secret.expect("a rotating secret"), NOW);
    let rotation = rotating.rotation();
    g.bench_function("rotating", |b| {
        b.iter(|| verify(&shown, rotating.public(), &revoked, rotation, NOW).expect("admits"))
    });
    g.finish();
}

fn bench_sign(c: &mut Criterion) {
    let mut g = c.benchmark_group("sign");
    g.throughput(Throughput::Elements(1));
    let t = ticket();
    let plain = EventKeys::generate(EventId(1234), [7; 32]).expect("keys");
    g.bench_function("static", |b| {
        b.iter(|| plain.issue(&t, NOW).expect("issue").0.text())
    });
    let rotating = plain.with_rotation(RotationSecret::from_bytes([9; 32]));
    g.bench_function("rotating", |b| {
        b.iter(|| {
            let (code, secret) = rotating.issue(&t, NOW).expect("issue");
            code.text_at(&secret.expect("a rotating secret"), NOW)
        })
    });
    g.finish();
}

criterion_group!(benches, bench_verify, bench_sign);
criterion_main!(benches);
