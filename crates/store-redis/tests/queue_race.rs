//! 100,000 buyers racing to join one line through three API nodes (three separate
//! connections to the machine's Redis, as three `boxoffice serve` would hold): every
//! buyer gets one place, positions are unique and dense, and a pre-opening pool drawn
//! through one node is seen identically through the others.

mod common;

use std::collections::HashSet;
use std::sync::Arc;

use boxoffice_domain::fairness::{Seed, order_pool};
use boxoffice_domain::{BuyerId, EventId};
use boxoffice_engine::ports::QueueStore;
use boxoffice_store_redis::{Prefix, RedisQueue};
use common::{PREFIX, Tracked, connect, redis_url};

async fn nodes() -> Vec<Arc<dyn QueueStore>> {
    let url = redis_url();
    let mut out: Vec<Arc<dyn QueueStore>> = Vec::new();
    for _ in 0..3 {
        let prefix = Prefix::new(PREFIX.as_str()).expect("the test prefix is valid");
        out.push(Arc::new(Tracked::new(
            RedisQueue::new(connect(&url).await, prefix),
            &url,
        )));
    }
    out
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_joins_through_three_nodes_get_unique_dense_positions() {
    const N: usize = 100_000;
    const TASKS: usize = 48;
    let nodes = nodes().await;
    let event = EventId(900_000_000 + (std::process::id() as i64 % 1_000_000));
    let tasks: Vec<_> = (0..TASKS)
        .map(|i| {
            let q = nodes[i % 3].clone();
            tokio::spawn(async move {
                let mut mine = Vec::with_capacity(N / TASKS + 1);
                for _ in 0..N / TASKS + usize::from(i < N % TASKS) {
                    let place = q.join(event, BuyerId::random(), true).await.expect("join");
                    mine.push(place.position.expect("an open line places at once"));
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
    assert_eq!(all.len(), N);
    assert_eq!(all, (1..=N as u64).collect::<HashSet<_>>());
    nodes[0].drop_event(event).await.expect("drop");
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_drawn_through_one_node_reads_the_same_through_the_others() {
    let nodes = nodes().await;
    let event = EventId(910_000_000 + (std::process::id() as i64 % 1_000_000));
    let buyers: Vec<BuyerId> = (0..3_000).map(|_| BuyerId::random()).collect();
    for (i, &b) in buyers.iter().enumerate() {
        nodes[i % 3].join(event, b, false).await.expect("join");
    }
    let seed = Seed([9; 32]);
    let pool = nodes[1].seal_pool(event).await.expect("seal");
    let ordered = order_pool(&seed, &pool);
    nodes[1]
        .place_pool(event, &ordered)
        .await
        .expect("place in chunks");
    for (i, &b) in ordered.iter().enumerate().step_by(37) {
        let place = nodes[(i + 2) % 3].place(event, b).await.expect("read");
        assert_eq!(place.and_then(|p| p.position), Some(i as u64 + 1));
    }
    nodes[0].drop_event(event).await.expect("drop");
}

/// Of the nodes that find a line to open or bring back at once, exactly one may do it;
/// once it lets go (or its claim lapses) the claim can be taken again.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_the_nodes_that_find_a_line_lost_one_brings_it_back() {
    let nodes = nodes().await;
    let event = boxoffice_testkit::arbiter::unique_event();
    let holders: Vec<String> = (0..30).map(|i| format!("caller-{i}")).collect();
    let claims = (0..30).map(|i| nodes[i % 3].claim_line(event, &holders[i], 5_000));
    let won: Vec<usize> = futures::future::join_all(claims)
        .await
        .into_iter()
        .enumerate()
        .filter(|(_, c)| *c.as_ref().expect("claim"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(won.len(), 1, "exactly one claim of thirty");
    let winner = &holders[won[0]];
    nodes[1]
        .release_line_claim(event, "another")
        .await
        .expect("release");
    assert_eq!(
        nodes[2].claim_line(event, "late", 100).await,
        Ok(false),
        "not given up"
    );
    nodes[1]
        .release_line_claim(event, winner)
        .await
        .expect("release");
    assert_eq!(nodes[2].claim_line(event, "late", 100).await, Ok(true));
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(
        nodes[0].claim_line(event, "later", 100).await,
        Ok(true),
        "lapsed"
    );
    assert_eq!(
        nodes[2].renew_line_claim(event, "late", 100).await,
        Ok(false),
        "taken over"
    );
    nodes[0]
        .release_line_claim(event, "later")
        .await
        .expect("release");
    nodes[0].drop_event(event).await.expect("drop");
}

/// A node puts a lost line back (100,000 journaled places, ten round trips) while
/// another node's buyers keep joining. A join that landed between the restore's steps
/// went to the pool, already drawn, at position 0, and stayed there once the line was
/// whole: a buyer with a place in no line. Such a join is now refused (the buyer asks
/// again), and every join that is answered has a place in the line.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_while_the_line_is_put_back_is_refused_or_placed_never_left_in_the_pool() {
    use boxoffice_engine::ports::RestoredLine;
    use std::sync::atomic::{AtomicBool, Ordering};

    let nodes = nodes().await;
    let event = EventId(920_000_000 + (std::process::id() as i64 % 1_000_000));
    nodes[1]
        .join(event, BuyerId::random(), true)
        .await
        .expect("the line opens");
    let line = RestoredLine {
        positions: (1..=100_000).map(|p| (BuyerId::random(), p)).collect(),
        pool: Vec::new(),
        batches: Vec::new(),
    };
    let restoring = Arc::new(AtomicBool::new(true));
    let joiner = {
        let (q, restoring) = (nodes[1].clone(), restoring.clone());
        tokio::spawn(async move {
            let (mut placed, mut refused) = (Vec::new(), 0u32);
            while restoring.load(Ordering::SeqCst) {
                let buyer = BuyerId::random();
                match q.join(event, buyer, false).await {
                    Ok(place) => placed.push((buyer, place.position)),
                    Err(_) => refused += 1,
                }
            }
            (placed, refused)
        })
    };
    // Let the joins begin before the restore does.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    nodes[0].restore_line(event, &line).await.expect("restored");
    restoring.store(false, Ordering::SeqCst);
    let (placed, refused) = joiner.await.expect("the joins");
    for (buyer, position) in &placed {
        assert!(
            position.is_some(),
            "{buyer:?} was answered with no place in the open line"
        );
    }
    assert!(refused > 0, "no join landed while the line was put back");
    // Joins go on behind the line put back.
    let after = nodes[2].join(event, BuyerId::random(), false).await;
    let after = after.expect("joins go on").position.expect("a place");
    assert!(
        after > 100_000,
        "placed at {after}, inside the restored line"
    );
    nodes[0].drop_event(event).await.expect("drop");
}
