//! Checkout throughput, end to end over HTTP, with the fake provider answering at once
//! and after 200 ms. Ignored by default (a measurement, not a test); run with
//! `cargo test --release -p boxoffice --test api payments::bench -- --ignored --nocapture`.
//! No lock or ledger transaction is held across the provider call, so at 200 ms the
//! throughput must grow with the number of checkouts in flight.

use std::time::Instant;

use crate::common::{TestApp, spawn_with, spec};
use futures::stream::{self, StreamExt};
use serde_json::{Value, json};

/// `n` holds of one seat each, four per buyer.
async fn holds(app: &TestApp, event: boxoffice_domain::EventId, n: usize) -> Vec<(String, String)> {
    stream::iter(0..n.div_ceil(4))
        .map(|_| async move {
            let (token, admission) = app.admitted_buyer(event).await;
            let mut mine = Vec::new();
            for _ in 0..4 {
                let body = json!({"best_available": {"section": "A", "quantity": 1}});
                let v: Value = app
                    .hold(event, &admission, body)
                    .await
                    .json()
                    .await
                    .unwrap();
                mine.push((token.clone(), v["hold_id"].as_str().unwrap().to_string()));
            }
            mine
        })
        .buffer_unordered(32)
        .flat_map(stream::iter)
        .take(n)
        .collect()
        .await
}

async fn run(latency_ms: u64, concurrency: usize, n: usize) -> f64 {
    let app = spawn_with(|c| c.fake_payments.latency_ms = latency_ms).await;
    let rows = (n as u32).div_ceil(100);
    let event = app.create_event(&spec(rows, 100, 0, 4)).await;
    let work = holds(&app, event, n).await;
    let app = &app;
    let started = Instant::now();
    let ok =
        stream::iter(work)
            .map(|(token, hold)| async move {
                app.checkout(&hold, &token, "pm_card_visa").await.status()
            })
            .buffer_unordered(concurrency)
            .filter(|s| std::future::ready(s.as_u16() == 201))
            .count()
            .await;
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(ok, n, "every checkout confirmed");
    n as f64 / secs
}

#[boxoffice_testkit::test(flavor = "multi_thread")]
#[ignore = "a measurement; run explicitly in release"]
async fn checkout_throughput_at_0_and_200_ms_provider_latency() {
    for (latency, concurrency, n) in [
        (0, 1, 1_000),
        (0, 16, 4_000),
        (0, 64, 4_000),
        (200, 1, 20),
        (200, 16, 320),
        (200, 64, 1_280),
        (200, 256, 2_560),
    ] {
        let rate = run(latency, concurrency, n).await;
        println!(
            "latency {latency:>3} ms  concurrency {concurrency:>3}  checkouts {n:>5}  {rate:>8.1} checkouts/s"
        );
    }
}
