//! Joins per second through the `QueueStore` port on the in-process store: N distinct
//! buyers join one open line from C concurrent tasks on a multi-threaded runtime, then
//! every buyer joins again (a retry, which must return the same place).
//!
//! `cargo bench -p boxoffice-store-memory --bench queue` joins 1,000,000 buyers per
//! concurrency; without `--bench` (e.g. `cargo test --benches`) it is a smoke run of
//! 2,000. Buyer ids are made before the clock starts.

use std::sync::Arc;
use std::time::Instant;

use boxoffice_domain::{BuyerId, EventId};
use boxoffice_engine::ports::QueueStore;
use boxoffice_store_memory::InMemoryQueue;

/// Joins every buyer of `buyers` once, split over `tasks` tasks; returns joins/s and
/// the largest position handed out.
async fn join_all(
    q: Arc<dyn QueueStore>,
    event: EventId,
    buyers: Arc<Vec<BuyerId>>,
    tasks: usize,
) -> (f64, u64) {
    let started = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|t| {
            let (q, buyers) = (q.clone(), buyers.clone());
            tokio::spawn(async move {
                let mut top = 0;
                for b in buyers.iter().skip(t).step_by(tasks) {
                    let place = q.join(event, *b, true).await.expect("join");
                    top = top.max(place.position.expect("an open line places at once"));
                }
                top
            })
        })
        .collect();
    let mut top = 0;
    for h in handles {
        top = top.max(h.await.expect("a bench task panicked"));
    }
    (buyers.len() as f64 / started.elapsed().as_secs_f64(), top)
}

#[tokio::main]
async fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let n = if full { 1_000_000 } else { 2_000 };
    let buyers: Arc<Vec<BuyerId>> = Arc::new((0..n).map(|_| BuyerId::random()).collect());
    println!("{n} distinct buyers join one open line (InMemoryQueue), then all join again:");
    for (i, tasks) in [1, 8, 64].into_iter().enumerate() {
        let q: Arc<dyn QueueStore> = Arc::new(InMemoryQueue::new());
        let event = EventId(i as i64 + 1);
        let (first, top) = join_all(q.clone(), event, buyers.clone(), tasks).await;
        // Every buyer placed once: the line is exactly as long as the crowd.
        assert_eq!(top, n as u64, "positions are not dense");
        let (again, top) = join_all(q.clone(), event, buyers.clone(), tasks).await;
        assert_eq!(top, n as u64, "a retry took a new place");
        println!(
            "  {tasks:>3} tasks: first join {first:>10.0} joins/s, retry {again:>10.0} joins/s"
        );
    }
}
