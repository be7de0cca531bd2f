//! How fast an event's cancellation refunds its orders: a sale of N orders written
//! into a data directory, then `boxoffice serve` cancels the event and the time to the
//! job's last refund is measured (not its end, which waits `engine.recovery_after_s`
//! for a second pass that finds every order refunded), with the stand-in provider answering at once and after
//! 200 ms. The job's provider calls go through the recovery sweep's paced door, so
//! the figure is set by `engine.recovery_in_flight` (50) and
//! `engine.recovery_calls_per_s` (200 for the stand-in) as configured: both defaults.
//! A benchmark, not a test: run it on a quiet machine with
//! `cargo test -p boxoffice --test api refunds::bench -- --ignored --nocapture`
//! (`BOXOFFICE_REFUND_BENCH_ORDERS`, default 2,000; `BOXOFFICE_BENCH_BIN` runs another
//! build of the server, e.g. `target/release/boxoffice`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use boxoffice_domain::EventId;
use serde_json::Value;

use boxoffice_testkit::harness::path_str;

use super::crash::{OPERATOR, post, progress, seed};
use crate::common::bench_boxoffice;
use crate::common::on_disk;

#[ignore = "a benchmark: cargo test -p boxoffice --test api refunds::bench -- --ignored --nocapture"]
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 1800)]
async fn refunds_per_second_of_an_event_cancellation() {
    let n: usize = std::env::var("BOXOFFICE_REFUND_BENCH_ORDERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    for latency_ms in [0, 200] {
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path(), latency_ms);
        let (event, _) = seed(dir.path(), n).await;
        let args = [
            "--data-dir",
            path_str(dir.path()),
            "--config",
            path_str(&config),
        ];
        let (_server, base) = bench_boxoffice().start(&args).await;
        let started = Instant::now();
        let (status, job) = post(&format!("{base}/v1/events/{event}/cancel")).await;
        assert_eq!(status, 202, "{job}");
        let done = all_returned(&base, event, n).await;
        let took = started.elapsed();
        assert_eq!(
            done["counts"]["returned"].as_u64(),
            Some(n as u64),
            "{done}"
        );
        eprintln!(
            "latency {latency_ms} ms: {n} orders refunded in {:.1} s = {:.0} refunds/s",
            took.as_secs_f64(),
            n as f64 / took.as_secs_f64()
        );
    }
}

/// The job's progress once its pass has given back all `n` orders.
async fn all_returned(base: &str, event: EventId, n: usize) -> Value {
    let what = format!("the refund job to give back {n} orders");
    let every = Duration::from_millis(200);
    boxoffice_testkit::eventually(what, Duration::from_secs(900), every, || async {
        let p = progress(base, event).await;
        match p["counts"]["returned"].as_u64() >= Some(n as u64) {
            true => Ok(p),
            false => Err(p),
        }
    })
    .await
}

fn config(dir: &Path, latency_ms: u64) -> PathBuf {
    let extra = format!(
        "[workers]\nevent_cancel_interval_ms = 50\n\
         [fake_payments]\nlatency_ms = {latency_ms}\n"
    );
    on_disk::config(dir, OPERATOR, &extra)
}
