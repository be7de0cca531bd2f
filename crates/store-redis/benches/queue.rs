//! Joins per second through the `QueueStore` port on Redis: N distinct buyers join one
//! open line from C concurrent tasks spread over K connections (K nodes' worth), then
//! every buyer joins again (a retry, which must return the same place).
//!
//! `cargo bench -p boxoffice-store-redis --bench queue` joins 100,000 buyers per case;
//! without `--bench` (e.g. `cargo test --benches`) it is a smoke run of 2,000. The
//! server is `BOXOFFICE_TEST_REDIS_URL` or redis://127.0.0.1:6379; every key lives
//! under a fresh prefix and is deleted at the end.

use std::sync::Arc;
use std::time::Instant;

use boxoffice_domain::{BuyerId, EventId};
use boxoffice_engine::ports::QueueStore;
use boxoffice_store_redis::{Prefix, RedisConn, RedisQueue};

/// Joins every buyer once, task `t` through connection `t % queues.len()`; returns
/// joins/s and the largest position handed out.
async fn join_all(
    queues: &[Arc<RedisQueue>],
    event: EventId,
    buyers: Arc<Vec<BuyerId>>,
    tasks: usize,
) -> (f64, u64) {
    let started = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|t| {
            let (q, buyers) = (queues[t % queues.len()].clone(), buyers.clone());
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
    let n = if full { 100_000 } else { 2_000 };
    let url = std::env::var("BOXOFFICE_TEST_REDIS_URL").unwrap_or("redis://127.0.0.1:6379".into());
    let prefix = format!("bo-bench-{:08x}", uuid::Uuid::new_v4().as_u128() as u32);
    let buyers: Arc<Vec<BuyerId>> = Arc::new((0..n).map(|_| BuyerId::random()).collect());
    let mut queues = Vec::new();
    for _ in 0..3 {
        let conn = RedisConn::connect(&url)
            .await
            .expect("Redis must be reachable");
        let prefix = Prefix::new(prefix.clone()).expect("prefix");
        queues.push(Arc::new(RedisQueue::new(conn, prefix)));
    }
    println!("{n} distinct buyers join one open line (RedisQueue), then all join again:");
    let cases = [(1, 1), (1, 64), (3, 64), (3, 192)];
    for (i, (conns, tasks)) in cases.into_iter().enumerate() {
        let event = EventId(i as i64 + 1);
        let (first, top) = join_all(&queues[..conns], event, buyers.clone(), tasks).await;
        // Every buyer placed once: the line is exactly as long as the crowd.
        assert_eq!(top, n as u64, "positions are not dense");
        let (again, top) = join_all(&queues[..conns], event, buyers.clone(), tasks).await;
        assert_eq!(top, n as u64, "a retry took a new place");
        queues[0].drop_event(event).await.expect("drop");
        println!(
            "  {conns} conn, {tasks:>3} tasks: first join {first:>8.0} joins/s, retry {again:>8.0} joins/s"
        );
    }
}
