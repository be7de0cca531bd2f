//! Memory per queued buyer in the in-process line with 2,000,000 joined, counted by a
//! global allocator (its own test binary, so nothing else allocates in between), and
//! 100,000 racing joins getting unique, dense positions. `cargo test --release -p
//! boxoffice-store-memory --test queue_memory -- --nocapture` prints the figures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};

use boxoffice_domain::{BuyerId, EventId};
use boxoffice_engine::ports::QueueStore;
use boxoffice_store_memory::InMemoryQueue;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const MILLION: usize = 1_000_000;

/// Bytes the line holds per buyer once `n` have joined (`open`: straight into line;
/// otherwise into the pre-opening pool, then drawn and placed).
async fn bytes_per_buyer(n: usize, open: bool) -> f64 {
    let q = InMemoryQueue::new();
    let event = EventId(if open { 1 } else { 2 });
    let buyers: Vec<BuyerId> = (0..n).map(|_| BuyerId::random()).collect();
    let before = LIVE.load(Ordering::Relaxed);
    for &b in &buyers {
        q.join(event, b, open).await.expect("join");
    }
    if !open {
        let pool = q.seal_pool(event).await.expect("seal");
        q.place_pool(event, &pool).await.expect("place");
        drop(pool);
    }
    let used = LIVE.load(Ordering::Relaxed) - before;
    assert_eq!(q.state(event).await.expect("state").queue_length, n as u64);
    used as f64 / n as f64
}

#[boxoffice_testkit::test]
async fn two_million_queued_buyers_cost_at_most_128_bytes_each() {
    let open = bytes_per_buyer(2 * MILLION, true).await;
    let pooled = bytes_per_buyer(2 * MILLION, false).await;
    println!("2,000,000 joined after opening: {open:.1} bytes per buyer");
    println!(
        "2,000,000 joined before opening (pool kept for verification): {pooled:.1} bytes per buyer"
    );
    assert!(
        open <= 128.0 && pooled <= 128.0,
        "{open} / {pooled} bytes per buyer"
    );
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_racing_joins_get_unique_dense_positions() {
    const N: usize = 100_000;
    let q = Arc::new(InMemoryQueue::new());
    let event = EventId(3);
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move {
                let mut mine = Vec::with_capacity(N / 8);
                for _ in 0..N / 8 {
                    let b = BuyerId::random();
                    let place = q.join(event, b, true).await.expect("join");
                    mine.push(place.position.expect("an open line places at once"));
                    // A retry keeps the place (a double click, a mobile retry).
                    let again = q.join(event, b, true).await.expect("join again");
                    assert_eq!(again.position, place.position);
                }
                mine
            })
        })
        .collect();
    let mut all = HashSet::with_capacity(N);
    for t in tasks {
        for p in t.await.expect("task") {
            assert!(all.insert(p), "position {p} given twice");
        }
    }
    assert_eq!(all, (1..=N as u64).collect::<HashSet<_>>());
}
