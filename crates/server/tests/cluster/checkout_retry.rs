//! Two nodes share a PostgreSQL ledger and a Redis hot store. While the node running a
//! checkout lives (its heartbeat is fresh), a retry reaching the other node is told
//! `request_in_progress`; once it was killed with -9 and its heartbeat went stale, the
//! retry takes the claim over, long before the claim's lease would have lapsed.

use crate::common::BOXOFFICE;
use crate::{Backing, argv};
use boxoffice_testkit::harness::buyers::checkout;
use boxoffice_testkit::harness::buyers::holders;
use boxoffice_testkit::harness::http::call;
use std::time::{Duration, Instant};

use crate::common::uuid;
use boxoffice_testkit::eventually;
use futures::future::join_all;
use reqwest::Method;
use serde_json::Value;

const OPERATOR: &str = "retry-cluster-operator-key-01";
const BUYERS: usize = 4;
/// A node silent this long is dead (it beats every 200 ms).
const DEAD_AFTER_MS: u64 = 2_000;

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 240)]
async fn a_checkout_retried_on_another_node_after_its_node_died_is_taken_over() {
    scenario().await;
}

async fn scenario() {
    // A slow provider keeps the checkouts running; no sweep touches them meanwhile.
    let extra = format!(
        "[engine]\nadmission_interval_ms = 50\nrecovery_after_s = 3600\n[fake_payments]\n\
         latency_ms = 20000\n[workers]\nheartbeat_interval_ms = 200\n\
         [idempotency]\nnode_dead_after_ms = {DEAD_AFTER_MS}\n"
    );
    let backing = Backing::new(OPERATOR, &extra);
    let args = backing.args();
    let args = argv(&args);
    let (mut doomed, a) = BOXOFFICE.start(&args).await;
    let (_survivor, b) = BOXOFFICE.start(&args).await;
    let c = boxoffice_testkit::harness::http::client();
    let buyers = holders(&c, &a, OPERATOR, BUYERS).await;
    let keys: Vec<String> = buyers.iter().map(|_| uuid()).collect();
    let load = {
        let (c, a, buyers, keys) = (c.clone(), a.clone(), buyers.clone(), keys.clone());
        tokio::spawn(async move {
            join_all(
                buyers
                    .iter()
                    .zip(&keys)
                    .map(|(w, k)| checkout(&c, &a, w, k)),
            )
            .await
        })
    };
    // Every checkout has its order (so its claim) before the provider answers.
    for (token, _) in &buyers {
        let every = Duration::from_millis(50);
        eventually(
            "a checkout to start (its order to exist)",
            Duration::from_secs(30),
            every,
            || async {
                match orders(&c, &b, token).await.is_empty() {
                    true => Err("no order yet"),
                    false => Ok(()),
                }
            },
        )
        .await;
    }
    for (who, key) in buyers.iter().zip(&keys) {
        let (status, _, body) = checkout(&c, &b, who, key).await;
        assert_eq!(status, 409, "the running node's claim stands: {body}");
        assert_eq!(body["error"], "request_in_progress");
    }

    doomed.start_kill().unwrap();
    doomed.wait().await.unwrap();
    let killed = Instant::now();
    assert!(
        load.await.unwrap().iter().all(|(s, ..)| *s == 0),
        "answered before the kill"
    );
    for (who, key) in buyers.iter().zip(&keys) {
        let (status, body) = retry_until_taken_over(&c, &b, who, key).await;
        assert!(
            matches!(status, 201 | 202 | 402 | 404 | 410),
            "the retry on the surviving node answered {status} {body}"
        );
    }
    let waited = killed.elapsed();
    assert!(
        waited < Duration::from_secs(20),
        "took {waited:?} to take over claims whose lease is a minute"
    );
    eprintln!("claims of the killed node taken over {waited:?} after the kill");
}

async fn orders(c: &reqwest::Client, base: &str, token: &str) -> Vec<Value> {
    let url = format!("{base}/v1/me/orders");
    let (_, v) = call(c, Method::GET, url, token, Value::Null).await;
    v["orders"].as_array().cloned().unwrap_or_default()
}

async fn retry_until_taken_over(
    c: &reqwest::Client,
    base: &str,
    who: &(String, String),
    key: &str,
) -> (u16, Value) {
    let what = "the retry to take over the dead node's claim (not 409 any more)";
    let every = Duration::from_millis(100);
    eventually(what, Duration::from_secs(40), every, || async {
        match checkout(c, base, who, key).await {
            (409, _, body) => Err(body),
            (status, _, body) => Ok((status, body)),
        }
    })
    .await
}
