//! What the in-process velocity store costs per request: the payment gate's `check` (the
//! counters a checkout with default rules reads: the buyer's lockout, attempts and
//! declines, the card's and the network's attempts and declines, three of them
//! counting the attempt) and the buyer signals' `link_all` at a join (the device's and
//! the network's clusters). The store holds 10,000 buyers' history before the clock
//! starts; each call is another buyer's, on another card and network, so the maps are
//! read and written as a busy on-sale reads and writes them.
//!
//! `cargo bench -p boxoffice-store-memory --bench velocity`.

use boxoffice_domain::{EventId, Millis};
use boxoffice_engine::ports::{Counter, Dimension, Join, VelocityStore};
use boxoffice_store_memory::MemoryVelocity;
use criterion::{Criterion, criterion_group, criterion_main};

const BUYERS: usize = 10_000;
const EVENT: EventId = EventId(1);
const WINDOW_MS: u64 = 600_000;

/// A key as the engine makes them: a prefix and a 32-character hash.
fn key(prefix: &str, i: usize) -> String {
    format!(
        "{prefix}:{:032x}",
        (i as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835)
    )
}

/// The gate's counters for buyer `i` (card and network shared by every 10th buyer).
fn counters(i: usize) -> Vec<Counter> {
    let c = |prefix: &str, n: usize, add: bool| Counter {
        key: key(prefix, n),
        limit: 1_000_000,
        window_ms: WINDOW_MS,
        add,
    };
    vec![
        c("bl", i, false),
        c("ba", i, true),
        c("bd", i, false),
        c("ca", i / 10, true),
        c("cd", i / 10, false),
        c("na", i / 10, true),
        c("nd", i / 10, false),
    ]
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let store = MemoryVelocity::new();
    let gates: Vec<Vec<Counter>> = (0..BUYERS).map(counters).collect();
    let members: Vec<(String, String, String)> = (0..BUYERS)
        .map(|i| (key("m", i), key("d", i / 5), key("n", i / 10)))
        .collect();
    let join = |i: usize| {
        let (m, d, n) = &members[i % BUYERS];
        [(Dimension::Device, d), (Dimension::Network, n)].map(|(dimension, k)| Join {
            dimension,
            key: k.as_str(),
            member: m.as_str(),
            most: Some(1_000_000),
            cap: 50,
            ttl_ms: 3_600_000,
        })
    };
    let mut now = Millis(1_700_000_000_000);
    rt.block_on(async {
        for (i, gate) in gates.iter().enumerate() {
            store.check(EVENT, gate, now).await.expect("check");
            store
                .link_all(EVENT, &join(i), now)
                .await
                .expect("link_all");
        }
    });
    let mut i = 0;
    c.bench_function("velocity check, 7 counters (3 counting)", |b| {
        b.iter(|| {
            i = (i + 1) % BUYERS;
            now = Millis(now.0 + 1);
            rt.block_on(store.check(EVENT, &gates[i], now))
                .expect("check")
        })
    });
    c.bench_function("buyer signals link_all, device + network", |b| {
        b.iter(|| {
            i = (i + 1) % BUYERS;
            now = Millis(now.0 + 1);
            rt.block_on(store.link_all(EVENT, &join(i), now))
                .expect("link_all")
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
