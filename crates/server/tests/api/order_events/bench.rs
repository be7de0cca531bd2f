//! How fast order events leave the ledger, measured end to end through a real server:
//!
//! - **lag**: checkouts paced at a target rate (`BOXOFFICE_RELAY_BENCH_RATE` orders/s,
//!   default 1,000; the rate reached is printed) while a webhook receiver and a JetStream
//!   stream take every event; the lag of each event is its arrival (the receiver's clock;
//!   JetStream's publish time) minus the moment the order moved (`occurred_at`), p50/p99;
//! - **throughput**: the same number of checkouts while the endpoint answers 503 and the
//!   stream does not exist yet, then both come up: events delivered per second from the
//!   first arrival to the last, per sink.
//!
//! A benchmark, not a test: run it on a quiet machine with
//! `cargo test -p boxoffice --test api order_events::bench -- --ignored --nocapture`
//! (`BOXOFFICE_RELAY_BENCH_ORDERS`, default 2,000; `BOXOFFICE_BENCH_BIN` runs another
//! build of the server, e.g. `target/release/boxoffice`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use boxoffice_testkit::harness::buyers::{checkout, holders};
use boxoffice_testkit::harness::path_str;
use boxoffice_testkit::harness::receiver::Receiver;
use futures::StreamExt;
use serde_json::Value;

use super::{NATS_URL, all_received, from_the_start, history_ids, orders_of};
use crate::common::{bench_boxoffice, uuid};

const OPERATOR: &str = "order-events-bench-operator-key";

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn config(dir: &Path, prefix: &str, stream: &str, relay_ms: u64) -> PathBuf {
    let file = dir.join(format!("boxoffice-{}.toml", uuid()));
    let text = format!(
        "operator_key = \"{OPERATOR}\"\npayments = \"fake\"\n\
         [engine]\nadmission_interval_ms = 50\n\
         [workers]\nrelay_interval_ms = {relay_ms}\n\
         [relay]\nretry_min_ms = 100\nretry_max_ms = 500\nmax_attempts = 100000\nmax_age_s = 86400\n\
         [nats]\nurl = \"{NATS_URL}\"\nsubject_prefix = \"{prefix}\"\nstream = \"{stream}\"\n"
    );
    std::fs::write(&file, text).unwrap();
    file
}

/// A stream name and subject prefix of this run's own.
fn names() -> (String, String) {
    let tag = uuid().replace('-', "")[..12].to_string();
    (format!("BOBENCH_{tag}"), format!("bobench{tag}"))
}

async fn jetstream() -> async_nats::jetstream::Context {
    let client = async_nats::connect(NATS_URL)
        .await
        .unwrap_or_else(|e| panic!("NATS with JetStream must run at {NATS_URL}: {e}"));
    async_nats::jetstream::new(client)
}

async fn create_stream(js: &async_nats::jetstream::Context, name: &str, prefix: &str) {
    js.create_stream(async_nats::jetstream::stream::Config {
        name: name.to_string(),
        subjects: vec![format!("{prefix}.orders.>")],
        max_age: Duration::from_secs(600),
        ..Default::default()
    })
    .await
    .expect("a JetStream stream for the bench");
}

/// Every message of the stream until `expected` ids were seen: (occurred_at, published)
/// in ms of each event's first message.
async fn read_stream(
    js: &async_nats::jetstream::Context,
    name: &str,
    expected: &HashSet<String>,
) -> Vec<(u64, u64)> {
    let mut messages = from_the_start(js, name).await;
    let mut seen = HashSet::new();
    let mut times = Vec::new();
    let what = format!("{} events on stream {name}", expected.len());
    boxoffice_testkit::within(Duration::from_secs(600), what, async {
        while !expected.is_subset(&seen) {
            let m = messages.next().await.expect("the stream goes on").unwrap();
            let doc: Value = serde_json::from_slice(&m.payload).unwrap();
            if !seen.insert(doc["id"].as_str().unwrap().to_string()) {
                continue;
            }
            let published = m.info().unwrap().published.unix_timestamp_nanos() / 1_000_000;
            times.push((doc["occurred_at"].as_u64().unwrap(), published as u64));
        }
    })
    .await;
    times
}

/// `n` checkouts started at `rate` per second (at most 256 in flight): the rate reached.
async fn paced_checkouts(
    c: &reqwest::Client,
    base: &str,
    buyers: Vec<(String, String)>,
    rate: u64,
) -> f64 {
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let gate = Arc::new(tokio::sync::Semaphore::new(256));
    let started = Instant::now();
    let mut running = Vec::with_capacity(buyers.len());
    for b in buyers {
        tick.tick().await;
        let permit = gate.clone().acquire_owned().await.unwrap();
        let (c, base) = (c.clone(), base.to_string());
        running.push(tokio::spawn(async move {
            let (status, _, body) = checkout(&c, &base, &b, &uuid()).await;
            drop(permit);
            assert_eq!(status, 201, "{body}");
        }));
    }
    let n = running.len();
    for r in running {
        r.await.unwrap();
    }
    n as f64 / started.elapsed().as_secs_f64()
}

/// The order ids of the buyers' orders, with their tokens.
fn percentile(sorted: &[u64], p: f64) -> u64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn lags(mut ms: Vec<u64>) -> String {
    ms.sort_unstable();
    format!(
        "p50 {} ms, p99 {} ms, max {} ms over {} events",
        percentile(&ms, 0.5),
        percentile(&ms, 0.99),
        ms[ms.len() - 1],
        ms.len()
    )
}

fn per_second(times: impl Iterator<Item = u64>) -> String {
    let times: Vec<u64> = times.collect();
    let (first, last) = (times.iter().min().unwrap(), times.iter().max().unwrap());
    let secs = ((last - first) as f64 / 1000.0).max(0.001);
    format!(
        "{} events in {secs:.2} s = {:.0} events/s",
        times.len(),
        times.len() as f64 / secs
    )
}

async fn wait_for(receiver: &Receiver, expected: &HashSet<String>) {
    let (limit, every) = (Duration::from_secs(600), Duration::from_millis(20));
    all_received(receiver, expected, limit, every).await;
}

/// Each event's first arrival at the receiver: (occurred_at, received_at).
fn first_arrivals(receiver: &Receiver) -> Vec<(u64, u64)> {
    let mut seen = HashSet::new();
    let accepted = receiver.accepted();
    accepted
        .into_iter()
        .filter(|r| seen.insert(r.id.clone()))
        .map(|r| (r.occurred_at, r.received_at))
        .collect()
}

#[ignore = "a benchmark: cargo test -p boxoffice --test api order_events::bench -- --ignored --nocapture"]
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 3000)]
async fn relay_throughput_and_lag() {
    let n = setting("BOXOFFICE_RELAY_BENCH_ORDERS", 2_000) as usize;
    let rate = setting("BOXOFFICE_RELAY_BENCH_RATE", 1_000);
    let relay_ms = setting("BOXOFFICE_RELAY_BENCH_INTERVAL_MS", 500);
    let js = jetstream().await;
    let c = boxoffice_testkit::harness::http::client();

    // Lag: both sinks up while the orders come in.
    let dir = tempfile::tempdir().unwrap();
    let (stream, prefix) = names();
    create_stream(&js, &stream, &prefix).await;
    let file = config(dir.path(), &prefix, &stream, relay_ms);
    let args = [
        "--data-dir",
        path_str(dir.path()),
        "--config",
        path_str(&file),
    ];
    let (server, base) = bench_boxoffice().start(&args).await;
    let receiver = Receiver::start().await;
    receiver.add_to(&c, &base, OPERATOR).await;
    let buyers = holders(&c, &base, OPERATOR, n).await;
    let reached = paced_checkouts(&c, &base, buyers.clone(), rate).await;
    let expected = history_ids(&c, &base, &orders_of(&c, &base, &buyers).await).await;
    wait_for(&receiver, &expected).await;
    let hook = first_arrivals(&receiver);
    let jet = read_stream(&js, &stream, &expected).await;
    eprintln!(
        "relay every {relay_ms} ms; {n} checkouts at {reached:.0}/s (asked {rate}/s), {} events",
        expected.len()
    );
    eprintln!(
        "lag to the webhook: {}",
        lags(hook.iter().map(|(o, r)| r.saturating_sub(*o)).collect())
    );
    eprintln!(
        "lag to JetStream:  {}",
        lags(jet.iter().map(|(o, p)| p.saturating_sub(*o)).collect())
    );
    drop(server);
    js.delete_stream(&stream).await.unwrap();

    // Throughput: a backlog made while the endpoint answers 503 and NATS is unreachable
    // (a closed port), then a restart with both sinks reachable.
    let dir = tempfile::tempdir().unwrap();
    let (stream, prefix) = names();
    let file = config(dir.path(), &prefix, &stream, relay_ms);
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace(NATS_URL, "nats://127.0.0.1:1")).unwrap();
    let args = [
        "--data-dir",
        path_str(dir.path()),
        "--config",
        path_str(&file),
    ];
    let (server, base) = bench_boxoffice().start(&args).await;
    let receiver = Receiver::start().await;
    receiver.add_to(&c, &base, OPERATOR).await;
    receiver.set_down(true);
    let buyers = holders(&c, &base, OPERATOR, n).await;
    paced_checkouts(&c, &base, buyers.clone(), 100_000).await;
    let expected = history_ids(&c, &base, &orders_of(&c, &base, &buyers).await).await;
    boxoffice_testkit::harness::process::kill_and_check(server, &base).await;
    std::fs::write(&file, text).unwrap();
    create_stream(&js, &stream, &prefix).await;
    receiver.set_down(false);
    let (_server, _) = bench_boxoffice().start(&args).await;
    wait_for(&receiver, &expected).await;
    let jet = read_stream(&js, &stream, &expected).await;
    eprintln!("backlog of {} events", expected.len());
    eprintln!(
        "webhook drain:   {}",
        per_second(first_arrivals(&receiver).into_iter().map(|(_, r)| r))
    );
    eprintln!(
        "JetStream drain: {}",
        per_second(jet.into_iter().map(|(_, p)| p))
    );
    js.delete_stream(&stream).await.unwrap();
}
