//! Commit throughput with group commit against one transaction per commit, on the same
//! kind of file (WAL, synchronous=FULL, so every COMMIT waits for fsync).
//!
//! `cargo bench -p boxoffice-store-sqlite --bench commit -- [orders] [committers]`
//! (defaults: 10,000 orders, 256 concurrent committers). Each mode gets a fresh file
//! with one event of `orders` seats and `orders` authorized orders, one seat each; the
//! timed part is committing all of them from `committers` tasks at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use boxoffice_domain::BuyerId;
use boxoffice_engine::ports::{CommitOutcome, Ledger, Order};
use boxoffice_store_sqlite::{SqliteLedger, SqliteOptions};
use boxoffice_testkit::ledger::fixtures::{T0, authorized, commit_of, spec};
use futures::StreamExt;

struct Run {
    per_sec: f64,
    p50: Duration,
    p99: Duration,
    per_transaction: f64,
}

#[tokio::main]
async fn main() {
    // `cargo bench` passes `--bench`; only bare numbers are ours. Without `--bench`
    // (`cargo test --all-targets`) it is a quick smoke run that proves the bench works.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let numbers: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let full = args.iter().any(|a| a == "--bench");
    let orders = numbers
        .first()
        .copied()
        .unwrap_or(if full { 10_000 } else { 500 });
    let committers = numbers.get(1).copied().unwrap_or(256);
    println!(
        "commit bench: {orders} orders, {committers} concurrent committers, WAL + synchronous=FULL"
    );
    let grouped = run(true, orders, committers).await;
    let single = run(false, orders, committers).await;
    report("group commit", &grouped);
    report("one transaction per commit", &single);
    println!("ratio: {:.1}x", grouped.per_sec / single.per_sec);
}

fn report(name: &str, r: &Run) {
    println!(
        "{name:>28}: {:>9.0} orders/s  p50 {:>7.2} ms  p99 {:>7.2} ms  {:.1} commits/transaction",
        r.per_sec,
        r.p50.as_secs_f64() * 1e3,
        r.p99.as_secs_f64() * 1e3,
        r.per_transaction
    );
}

async fn run(group_commit: bool, orders: usize, committers: usize) -> Run {
    let dir = tempfile::tempdir().expect("a temp directory");
    let path = dir.path().join("bench.db");
    // Setting up through a grouped writer keeps the per-transaction run's setup short;
    // the timed part reopens the file in the mode under test.
    let prepared = prepare(&path, orders).await;
    let options = SqliteOptions {
        group_commit,
        ..SqliteOptions::default()
    };
    let sqlite = Arc::new(SqliteLedger::open(&path, options).expect("reopen the bench file"));
    let ledger: Arc<dyn Ledger> = sqlite.clone();
    let prepared = Arc::new(prepared);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..committers)
        .map(|_| {
            tokio::spawn(commit_until_done(
                ledger.clone(),
                prepared.clone(),
                next.clone(),
            ))
        })
        .collect();
    let mut latencies = Vec::with_capacity(orders);
    for task in tasks {
        latencies.extend(task.await.expect("a committer finished"));
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let (transactions, jobs) = sqlite.write_stats();
    Run {
        per_sec: orders as f64 / elapsed.as_secs_f64(),
        p50: latencies[latencies.len() / 2],
        p99: latencies[latencies.len() * 99 / 100],
        per_transaction: jobs as f64 / transactions.max(1) as f64,
    }
}

async fn prepare(path: &std::path::Path, orders: usize) -> Vec<Order> {
    let ledger: Arc<dyn Ledger> =
        Arc::new(SqliteLedger::open(path, SqliteOptions::default()).expect("open the bench file"));
    let per_row = 500;
    let rows = orders.div_ceil(per_row as usize) as u32;
    let event = Arc::new(
        ledger
            .create_event(&spec("Bench night", rows, per_row, 4), T0)
            .await
            .expect("create the event"),
    );
    futures::stream::iter(0..orders)
        .map(|i| {
            let (ledger, event) = (ledger.clone(), event.clone());
            async move { authorized(&ledger, &event, BuyerId::random(), &[i]).await }
        })
        .buffer_unordered(256)
        .collect()
        .await
}

async fn commit_until_done(
    ledger: Arc<dyn Ledger>,
    orders: Arc<Vec<Order>>,
    next: Arc<AtomicUsize>,
) -> Vec<Duration> {
    let mut latencies = Vec::new();
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(order) = orders.get(i) else {
            return latencies;
        };
        let started = Instant::now();
        let outcome = ledger
            .commit(&commit_of(order, 4))
            .await
            .expect("the store answered");
        assert_eq!(outcome, CommitOutcome::Committed);
        latencies.push(started.elapsed());
    }
}
