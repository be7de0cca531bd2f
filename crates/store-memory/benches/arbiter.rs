//! Holds per second through the `SeatArbiter` port on one core (the calls never wait,
//! so they are polled to completion inline, with no runtime in the way).
//!
//! - `hot_seat/refill`: every buyer asks for the best 2 seats of a 100-seat section;
//!   when it sells out the event is reloaded (the reload is part of the cost).
//! - `hot_seat/hold_release`: the same best 2 seats held and released again and again.
//! - `spread/hold_release`: 2 random named seats of a 50,000-seat event, then release.
//!
//! Run: `cargo bench -p boxoffice-store-memory -- --warm-up-time 1 --measurement-time 3`

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use boxoffice_domain::catalog::{RowSpec, SectionSpec};
use boxoffice_domain::{BuyerId, EventId, EventSpec, HoldId, Millis, SeatIndex};
use boxoffice_engine::ports::{ArbiterError, ArbiterLayout, HoldRequest, SeatArbiter, SeatChoice};
use boxoffice_store_memory::InMemoryArbiter;
use boxoffice_testkit::arbiter::{layout_of, race_spec, small_spec};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// The in-memory arbiter never returns `Pending`; anything else is a bug worth a panic.
fn now<F: Future>(f: F) -> F::Output {
    match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the in-memory arbiter must not wait"),
    }
}

const T0: Millis = Millis(1_700_000_000_000);

struct Load {
    arb: InMemoryArbiter,
    layout: ArbiterLayout,
    buyers: Vec<BuyerId>,
    next: u128,
}

impl Load {
    fn new(layout: ArbiterLayout) -> Load {
        let arb = InMemoryArbiter::new();
        now(arb.load(&layout, &[])).expect("load");
        Load {
            arb,
            layout,
            buyers: (0..4096).map(|_| BuyerId::random()).collect(),
            next: 0,
        }
    }

    /// A fresh hold id and a buyer from the pool (ids are cheap counters, not UUIDs,
    /// so the bench measures the arbiter rather than the random-number generator).
    fn request(&mut self, choice: SeatChoice) -> HoldRequest {
        self.next += 1;
        let buyer = self.buyers[self.next as usize % self.buyers.len()];
        let hold = HoldId {
            event: self.layout.event,
            nonce: self.next.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        };
        HoldRequest {
            hold,
            buyer,
            choice,
            expires_at: T0.plus_secs(480),
            key: None,
        }
    }
}

fn stadium() -> EventSpec {
    let mut spec = small_spec();
    let rows: Vec<RowSpec> = (0..40)
        .map(|r| RowSpec {
            label: format!("R{r}"),
            seats: 25,
            tier: None,
        })
        .collect();
    spec.sections = (0..50)
        .map(|s| SectionSpec {
            key: format!("S{s}"),
            name: format!("Stand {s}"),
            tier: "B".into(),
            quality: s,
            rows: rows.clone(),
            ga_capacity: None,
        })
        .collect();
    spec
}

fn hot_seat(c: &mut Criterion) {
    let mut g = c.benchmark_group("hot_seat");
    g.throughput(Throughput::Elements(1));
    let best2 = SeatChoice::BestAvailable {
        section: 0,
        quantity: 2,
        adjacent: true,
    };
    let mut load = Load::new(layout_of(&race_spec(), EventId(1)));
    g.bench_function("refill", |b| {
        b.iter(|| {
            let req = load.request(best2.clone());
            match now(load.arb.hold(&req, T0)) {
                Err(ArbiterError::SoldOut) => {
                    now(load.arb.load(&load.layout, &[])).expect("reload")
                }
                other => drop(other.expect("hold")),
            }
        })
    });
    let mut load = Load::new(layout_of(&race_spec(), EventId(2)));
    g.bench_function("hold_release", |b| {
        b.iter(|| {
            let req = load.request(best2.clone());
            let view = now(load.arb.hold(&req, T0)).expect("hold");
            now(load.arb.release(view.hold)).expect("release");
        })
    });
    g.finish();
}

fn spread(c: &mut Criterion) {
    let mut g = c.benchmark_group("spread");
    g.throughput(Throughput::Elements(1));
    let mut load = Load::new(layout_of(&stadium(), EventId(3)));
    let n = load.layout.seats.len() as u64;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut seat = move || {
        // xorshift64: random enough to spread over the event, free of library cost.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n) as SeatIndex
    };
    g.bench_function("hold_release", |b| {
        b.iter(|| {
            let (a, mut z) = (seat(), seat());
            while z == a {
                z = seat();
            }
            let req = load.request(SeatChoice::Named(vec![a, z]));
            let view = now(load.arb.hold(&req, T0)).expect("hold");
            now(load.arb.release(view.hold)).expect("release");
        })
    });
    g.finish();
}

criterion_group!(benches, hot_seat, spread);
criterion_main!(benches);
