//! `boxoffice experiment`: the inventory-update experiment against a PostgreSQL. Every
//! variant sells the same units to the same crowd of concurrent buyers (by default 100
//! units, 2,000 buyers), on a database the command creates for itself and drops
//! afterwards: read-then-write, the conditional UPDATE, optimistic versioning with
//! retries, sub-counters, and boxoffice's own hold + commit (the in-process arbiter and
//! the PostgreSQL ledger). Columns: sold, oversold, what the counter says is left,
//! conflicts and retries, throughput, p99.

mod database;
mod ledger;
mod sql;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use serde::Serialize;
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

pub use database::ThrowAway;

/// How one buyer's attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attempt {
    pub won: bool,
    /// Version conflicts retried, empty sub-counters tried, or commits refused.
    pub conflicts: u64,
}

impl Attempt {
    pub fn won(conflicts: u64) -> Attempt {
        Attempt {
            won: true,
            conflicts,
        }
    }

    pub fn lost(conflicts: u64) -> Attempt {
        Attempt {
            won: false,
            conflicts,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    Naive,
    Atomic,
    Optimistic,
    Sharded,
    Boxoffice,
}

impl Variant {
    pub const ALL: [Variant; 5] = [
        Variant::Naive,
        Variant::Atomic,
        Variant::Optimistic,
        Variant::Sharded,
        Variant::Boxoffice,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Variant::Naive => "naive read-then-write",
            Variant::Atomic => "atomic conditional UPDATE",
            Variant::Optimistic => "optimistic version + retry",
            Variant::Sharded => "sharded sub-counters (10)",
            Variant::Boxoffice => "boxoffice hold + ledger commit",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Settings {
    pub units: u32,
    pub buyers: u32,
    /// Connections each variant's pool may open (the buyers share them).
    pub connections: u32,
    pub variants: Vec<Variant>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            units: 100,
            buyers: 2_000,
            connections: 50,
            variants: Variant::ALL.to_vec(),
        }
    }
}

/// One row of the table.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub variant: Variant,
    pub name: &'static str,
    pub units: u32,
    pub buyers: u32,
    /// Buyers told they got a unit.
    pub sold: u64,
    /// Holds (or sold seats) written beyond the units.
    pub oversold: u64,
    /// What the stock counter says is left afterwards.
    pub counter_left: i64,
    pub conflicts: u64,
    /// Buyers answered per second.
    pub throughput_per_s: f64,
    pub p99_ms: f64,
    pub elapsed_ms: f64,
}

/// Runs the experiment on a database created from `admin_url` and dropped afterwards,
/// whatever happened.
pub async fn run(admin_url: &str, settings: &Settings) -> anyhow::Result<Vec<Row>> {
    let db = ThrowAway::create(admin_url).await?;
    let rows = run_on(&db.url, settings).await;
    db.drop_it().await?;
    rows
}

async fn run_on(url: &str, s: &Settings) -> anyhow::Result<Vec<Row>> {
    let pool = PgPoolOptions::new()
        .max_connections(s.connections)
        .acquire_timeout(Duration::from_secs(60))
        .connect(url)
        .await?;
    sql::schema(&pool).await?;
    let mut rows = Vec::new();
    for &variant in &s.variants {
        rows.push(run_variant(&pool, url, variant, s).await?);
    }
    pool.close().await;
    Ok(rows)
}

async fn run_variant(pool: &PgPool, url: &str, v: Variant, s: &Settings) -> anyhow::Result<Row> {
    let units = i32::try_from(s.units)?;
    sql::reset(pool, units).await?;
    let boxoffice = match v {
        Variant::Boxoffice => Some(Arc::new(ledger::Boxoffice::open(url, s.units).await?)),
        _ => None,
    };
    // The crowd arrives at once, as at an on-sale's opening: every connection open
    // before the clock starts, every buyer spawned and waiting, then all let go
    // together (on a loaded machine the first buyers would otherwise run alone, one
    // after another, and the naive variant's lost update would not show).
    let warm = join_all((0..s.connections).map(|_| pool.acquire())).await;
    for conn in warm {
        drop(conn?);
    }
    let gate = Arc::new(tokio::sync::Barrier::new(s.buyers as usize + 1));
    let buyers: Vec<_> = (0..s.buyers)
        .map(|i| {
            let (pool, boxoffice, gate) = (pool.clone(), boxoffice.clone(), gate.clone());
            tokio::spawn(async move {
                gate.wait().await;
                let user = format!("buyer-{i}");
                let t = Instant::now();
                let attempt = match (v, boxoffice) {
                    (Variant::Naive, _) => sql::naive(&pool, &user).await.map_err(Into::into),
                    (Variant::Atomic, _) => sql::atomic(&pool, &user).await.map_err(Into::into),
                    (Variant::Optimistic, _) => {
                        sql::optimistic(&pool, &user).await.map_err(Into::into)
                    }
                    (Variant::Sharded, _) => sql::sharded(&pool, &user).await.map_err(Into::into),
                    (Variant::Boxoffice, Some(b)) => b.buy().await,
                    (Variant::Boxoffice, None) => unreachable!("opened above"),
                };
                attempt.map(|a| (a, t.elapsed()))
            })
        })
        .collect();
    gate.wait().await;
    let started = Instant::now();
    let results = join_all(buyers).await;
    let elapsed = started.elapsed();
    let mut latencies = Vec::with_capacity(results.len());
    let (mut sold, mut conflicts) = (0u64, 0u64);
    for joined in results {
        let (attempt, took) = joined??;
        sold += u64::from(attempt.won);
        conflicts += attempt.conflicts;
        latencies.push(took);
    }
    let (written, counter_left) = match &boxoffice {
        Some(b) => b.tally().await?,
        None => sql::tally(pool, v == Variant::Sharded).await?,
    };
    Ok(Row {
        variant: v,
        name: v.name(),
        units: s.units,
        buyers: s.buyers,
        sold,
        oversold: (written.max(sold as i64) - i64::from(units)).max(0) as u64,
        counter_left,
        conflicts,
        throughput_per_s: f64::from(s.buyers) / elapsed.as_secs_f64(),
        p99_ms: percentile_ms(&mut latencies, 0.99),
        elapsed_ms: elapsed.as_secs_f64() * 1e3,
    })
}

/// The `q` quantile of `samples` in milliseconds (nearest rank).
pub fn percentile_ms(samples: &mut [Duration], q: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    samples.sort_unstable();
    let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
    samples[rank - 1].as_secs_f64() * 1e3
}

/// The rows as a table for a terminal (and for docs/BENCHMARKS.md).
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| variant | sold | oversold | counter left | conflicts / retries | buyers/s | p99 |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} of {} | {} | {} | {} | {} | {:.1} ms |\n",
            r.name,
            r.sold,
            r.units,
            r.oversold,
            r.counter_left,
            r.conflicts,
            crate::plan::n(r.throughput_per_s),
            r.p99_ms
        ));
    }
    out
}
