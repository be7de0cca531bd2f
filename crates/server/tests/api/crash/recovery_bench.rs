//! Recovery after a crash, measured: 1,000 orders left mid-checkout (the provider took
//! each authorization but its answer was lost) when the server is killed with -9, the
//! stand-in provider answering every call after 200 ms. The clock runs from the restart
//! until `boxoffice audit` finds no order in flight. Ignored by default (a measurement,
//! not a test); run with
//! `cargo test --release -p boxoffice --test api crash::recovery_bench -- --ignored --nocapture`.

use crate::common::BOXOFFICE;
use boxoffice_testkit::harness::http::call;
use boxoffice_testkit::harness::path_str;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt};
use reqwest::Method;
use serde_json::{Value, json};

const OPERATOR: &str = "recovery-bench-operator-key-01";
const ORDERS: usize = 1_000;

/// The config of one run: the sweep waiting `recovery_after_s`, the provider slow.
fn config(dir: &Path, name: &str, recovery_after_s: u64) -> PathBuf {
    let file = dir.join(name);
    let text = format!(
        "operator_key = \"{OPERATOR}\"\npayments = \"fake\"\n[engine]\nrecovery_after_s = {recovery_after_s}\n\
         admission_interval_ms = 50\n[workers]\nrecovery_interval_ms = 1000\n\
         [fake_payments]\nlatency_ms = 200\n"
    );
    std::fs::write(&file, text).unwrap();
    file
}

async fn open_event(c: &reqwest::Client, base: &str) -> i64 {
    let spec = serde_json::to_value(crate::common::spec(ORDERS as u32 / 100, 100, 0, 4)).unwrap();
    let (s, e) = call(c, Method::POST, format!("{base}/v1/events"), OPERATOR, spec).await;
    assert_eq!(s, 201, "{e}");
    let event = e["event_id"].as_i64().unwrap();
    let open = format!("{base}/v1/events/{event}/open");
    assert_eq!(
        call(c, Method::POST, open, OPERATOR, json!({})).await.0,
        200
    );
    event
}

/// A buyer holding four seats: (token, holds).
async fn buyer_with_holds(c: &reqwest::Client, base: &str, event: i64) -> Vec<(String, String)> {
    let (_, b) = call(c, Method::POST, format!("{base}/v1/buyers"), "", json!({})).await;
    let token = b["token"].as_str().unwrap().to_string();
    let queue = format!("{base}/v1/events/{event}/queue");
    let (_, j) = call(c, Method::POST, queue, &token, json!({})).await;
    let ticket = j["queue_ticket"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    let admission = loop {
        let status = format!("{base}/v1/queue/status");
        let (_, s) = call(c, Method::GET, status, &ticket, Value::Null).await;
        if let Some(a) = s["admission_token"].as_str() {
            break a.to_string();
        }
        assert!(Instant::now() < deadline, "never admitted: {s}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    let mut holds = Vec::new();
    for _ in 0..4 {
        let body = json!({"best_available": {"section": "A", "quantity": 1}});
        let url = format!("{base}/v1/events/{event}/holds");
        let (s, h) = call(c, Method::POST, url, &admission, body).await;
        assert_eq!(s, 201, "{h}");
        holds.push((token.clone(), h["hold_id"].as_str().unwrap().to_string()));
    }
    holds
}

/// `ORDERS` checkouts whose answer the provider loses after authorizing: 202 each.
async fn leave_mid_checkout(base: &str) {
    let c = boxoffice_testkit::harness::http::client();
    let event = open_event(&c, base).await;
    let holds: Vec<(String, String)> = stream::iter(0..ORDERS / 4)
        .map(|_| buyer_with_holds(&c, base, event))
        .buffer_unordered(32)
        .flat_map(stream::iter)
        .collect()
        .await;
    let pending = stream::iter(holds)
        .map(|(token, hold)| {
            let c = c.clone();
            async move {
                let url = format!("{base}/v1/holds/{hold}/checkout");
                let body = json!({"payment_method": "pm_timeout_after_charge"});
                call(&c, Method::POST, url, &token, body).await.0
            }
        })
        .buffer_unordered(128)
        .filter(|s| std::future::ready(*s == 202))
        .count()
        .await;
    assert_eq!(pending, ORDERS, "every checkout left waiting for the sweep");
}

/// `boxoffice audit --json` until no order is in flight (within `limit`).
async fn settled(dir: &Path, config: &Path, limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let (clean, report) = BOXOFFICE
            .run(&[
                "audit",
                "--json",
                "--data-dir",
                path_str(dir),
                "--config",
                path_str(config),
            ])
            .await;
        if report["orders_in_flight"] == json!(0) {
            assert!(clean, "audit after recovery: {report}");
            return report;
        }
        assert!(
            Instant::now() < deadline,
            "recovery did not finish: {report}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[boxoffice_testkit::test(flavor = "multi_thread", timeout_s = 600)]
#[ignore = "a measurement; run explicitly in release"]
async fn a_thousand_orders_left_mid_checkout_settle_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    // Before the crash the sweep waits an hour, so every order is still in flight.
    let before = config(dir.path(), "before.toml", 3_600);
    let args = [
        "--data-dir",
        path_str(dir.path()),
        "--config",
        path_str(&before),
    ];
    let (mut server, base) = BOXOFFICE.start(&args).await;
    let made = Instant::now();
    leave_mid_checkout(&base).await;
    println!(
        "{ORDERS} orders left mid-checkout in {:.1} s",
        made.elapsed().as_secs_f64()
    );
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_100)).await; // idle past recovery_after_s

    let after = config(dir.path(), "after.toml", 1);
    let restarted = Instant::now();
    let args = [
        "--data-dir",
        path_str(dir.path()),
        "--config",
        path_str(&after),
    ];
    let (_server, _) = BOXOFFICE.start(&args).await;
    let report = settled(dir.path(), &after, Duration::from_secs(120)).await;
    let took = restarted.elapsed().as_secs_f64();
    println!(
        "{ORDERS} orders settled {took:.1} s after the restart ({:.0} orders/s); audit: {report}",
        ORDERS as f64 / took
    );
    assert_eq!(report["orders"], json!(ORDERS));
    assert!(took < 15.0, "{ORDERS} orders took {took:.1} s to settle");
}
