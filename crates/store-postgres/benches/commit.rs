//! Commit throughput on the machine's PostgreSQL (`synchronous_commit = on`), five ways,
//! in one run on one throw-away database:
//!
//! 1. the ledger with group commit as configured by default (two writers, each sending
//!    its batch to `ledger_commit_batch` in one call),
//! 2. the same with one writer,
//! 3. the ledger with one transaction per order (BEGIN, the function, COMMIT),
//!    concurrently on its pool,
//! 4. the cheapest per-order form: the function called alone, as its own implicit
//!    transaction (one round trip per order), on a pool of the same size,
//! 5. the seeds' approach: per order, in its own transaction, a conditional
//!    `UPDATE … SET remaining = remaining - 1 WHERE id = $1 AND remaining > 0` on one
//!    hot row plus an insert of the sale.
//!
//! `cargo bench -p boxoffice-store-postgres --bench commit -- [orders] [committers]`
//! (defaults: 10,000 orders, 256 concurrent committers). Without `--bench` (as under
//! `cargo test --all-targets`) it runs a small smoke version.

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use boxoffice_domain::BuyerId;
use boxoffice_engine::ports::{CommitOutcome, Ledger, Order};
use boxoffice_store_postgres::{PostgresLedger, PostgresOptions};
use boxoffice_testkit::ledger::fixtures::{T0, authorized, commit_of, spec};
use futures::StreamExt;
use sqlx::PgPool;

struct Run {
    per_sec: f64,
    p50: Duration,
    p99: Duration,
    per_transaction: f64,
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let full = args.iter().any(|a| a == "--bench");
    let numbers: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let orders = numbers
        .first()
        .copied()
        .unwrap_or(if full { 10_000 } else { 300 });
    let committers = numbers
        .get(1)
        .copied()
        .unwrap_or(if full { 256 } else { 32 });
    let db = common::TestDatabase::create();
    let defaults = PostgresOptions::default();
    println!(
        "commit bench: {orders} orders, {committers} concurrent committers, pool {} + {} writers, \
         max batch {}, synchronous_commit=on",
        defaults.pool_size, defaults.writers, defaults.max_batch
    );
    let one_writer = PostgresOptions {
        writers: 1,
        ..PostgresOptions::default()
    };
    let per_order = PostgresOptions {
        group_commit: false,
        ..PostgresOptions::default()
    };
    let grouped = run_ledger(&db.url, defaults, orders, committers).await;
    let grouped_one = run_ledger(&db.url, one_writer, orders, committers).await;
    let single = run_ledger(&db.url, per_order, orders, committers).await;
    let statement = run_statement(&db.url, orders, committers).await;
    let hot = run_hot_row(&db.url, orders, committers).await;
    report("group commit", &grouped);
    report("group commit, 1 writer", &grouped_one);
    report("one transaction per order", &single);
    report("one statement per order", &statement);
    report("hot-row UPDATE per order", &hot);
    println!(
        "ratios: group / per-order {:.1}x, group / per-statement {:.1}x, group / hot-row {:.1}x",
        grouped.per_sec / single.per_sec,
        grouped.per_sec / statement.per_sec,
        grouped.per_sec / hot.per_sec
    );
}

fn report(name: &str, r: &Run) {
    println!(
        "{name:>26}: {:>8.0} orders/s  p50 {:>7.2} ms  p99 {:>7.2} ms  {:.1} orders/transaction",
        r.per_sec,
        r.p50.as_secs_f64() * 1e3,
        r.p99.as_secs_f64() * 1e3,
        r.per_transaction
    );
}

async fn run_ledger(url: &str, options: PostgresOptions, orders: usize, committers: usize) -> Run {
    let prepared = Arc::new(prepare(url, orders).await);
    let pg = Arc::new(connect(url, options).await);
    let ledger: Arc<dyn Ledger> = pg.clone();
    let (elapsed, latencies) = timed(committers, prepared.len(), move |i| {
        let (ledger, prepared) = (ledger.clone(), prepared.clone());
        async move {
            let outcome = ledger.commit(&commit_of(&prepared[i], 4)).await;
            assert_eq!(outcome, Ok(CommitOutcome::Committed));
        }
    })
    .await;
    let (transactions, jobs) = pg.write_stats();
    summarize(elapsed, latencies, jobs as f64 / transactions.max(1) as f64)
}

async fn connect(url: &str, options: PostgresOptions) -> PostgresLedger {
    PostgresLedger::connect(url, options)
        .await
        .expect("connect to the bench database")
}

/// Each order alone in `ledger_commit_batch`, without BEGIN/COMMIT: the server commits
/// the implicit transaction before it answers.
async fn run_statement(url: &str, orders: usize, committers: usize) -> Run {
    let prepared = Arc::new(prepare(url, orders).await);
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(PostgresOptions::default().pool_size)
        .connect(url)
        .await
        .expect("the per-statement pool");
    let (elapsed, latencies) = timed(committers, prepared.len(), move |i| {
        let (pool, prepared) = (pool.clone(), prepared.clone());
        async move {
            let c = commit_of(&prepared[i], 4);
            let outcome: Vec<String> = sqlx::query_scalar(
                "SELECT outcome FROM ledger_commit_batch(ARRAY[$1], ARRAY[$2], ARRAY[$3])",
            )
            .bind(c.order.to_string())
            .bind(4_i32)
            .bind(c.now.0)
            .fetch_all(&pool)
            .await
            .expect("commit one order");
            assert_eq!(outcome, ["committed"]);
        }
    })
    .await;
    summarize(elapsed, latencies, 1.0)
}

/// `orders` authorized one-seat orders on a fresh event, written through a grouped
/// ledger so setup stays short whatever is measured next.
async fn prepare(url: &str, orders: usize) -> Vec<Order> {
    let ledger: Arc<dyn Ledger> = Arc::new(connect(url, PostgresOptions::default()).await);
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

/// The seeds' design on the same server and pool size: stock is one counter row that
/// every sale updates, so sales queue on its row lock through each COMMIT.
async fn run_hot_row(url: &str, orders: usize, committers: usize) -> Run {
    let pool = PgPool::connect(url).await.expect("connect for the hot row");
    let setup = "CREATE TABLE hot_events (id BIGINT PRIMARY KEY, remaining BIGINT NOT NULL);
        CREATE TABLE hot_sales (id BIGSERIAL PRIMARY KEY, event_id BIGINT NOT NULL, buyer TEXT NOT NULL);";
    sqlx::raw_sql(setup)
        .execute(&pool)
        .await
        .expect("hot-row tables");
    sqlx::query("INSERT INTO hot_events VALUES (1, $1)")
        .bind(orders as i64)
        .execute(&pool)
        .await
        .expect("stock");
    let options = PostgresOptions::default();
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(options.pool_size)
        .connect(url)
        .await
        .expect("the hot-row pool");
    let (elapsed, latencies) = timed(committers, orders, move |_| {
        let pool = pool.clone();
        async move { sell_from_hot_row(&pool).await }
    })
    .await;
    summarize(elapsed, latencies, 1.0)
}

async fn sell_from_hot_row(pool: &PgPool) {
    let mut tx = pool.begin().await.expect("begin");
    let taken = sqlx::query(
        "UPDATE hot_events SET remaining = remaining - 1 WHERE id = $1 AND remaining > 0",
    )
    .bind(1_i64)
    .execute(&mut *tx)
    .await
    .expect("update the hot row")
    .rows_affected();
    assert_eq!(taken, 1, "stock covers every order");
    sqlx::query("INSERT INTO hot_sales (event_id, buyer) VALUES ($1, $2)")
        .bind(1_i64)
        .bind(BuyerId::random().to_string())
        .execute(&mut *tx)
        .await
        .expect("insert the sale");
    tx.commit().await.expect("commit");
}

/// Runs `work(i)` for i in 0..n from `committers` tasks; (wall time, latency of each).
async fn timed<F, Fut>(committers: usize, n: usize, work: F) -> (Duration, Vec<Duration>)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let work = Arc::new(work);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..committers)
        .map(|_| {
            let (work, next) = (work.clone(), next.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return latencies;
                    }
                    let t = Instant::now();
                    work(i).await;
                    latencies.push(t.elapsed());
                }
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(n);
    for task in tasks {
        latencies.extend(task.await.expect("a committer finished"));
    }
    (started.elapsed(), latencies)
}

fn summarize(elapsed: Duration, mut latencies: Vec<Duration>, per_transaction: f64) -> Run {
    latencies.sort();
    Run {
        per_sec: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: latencies[latencies.len() / 2],
        p99: latencies[latencies.len() * 99 / 100],
        per_transaction,
    }
}
