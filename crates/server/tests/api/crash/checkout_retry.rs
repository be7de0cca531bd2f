//! kill -9 while checkouts wait on a slow provider, then restart on the same data
//! directory: a buyer who retries the lost checkout with the same Idempotency-Key gets
//! the checkout's settled answer at once. The claims the dead process held are taken
//! over instead of answering `request_in_progress` until their lease runs out.

use crate::common::BOXOFFICE;
use boxoffice_testkit::harness::buyers::checkout;
use boxoffice_testkit::harness::buyers::holders;
use boxoffice_testkit::harness::path_str;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::books::{assert_confirmed_and_captured, assert_orders_in_flight, ledger_orders};
use crate::common::uuid;
use boxoffice_testkit::eventually;
use futures::future::join_all;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

const OPERATOR: &str = "retry-crash-operator-key-0123";
const BUYERS: usize = 12;

fn config(dir: &Path, name: &str, recovery_after_s: u64, latency_ms: u64) -> PathBuf {
    let file = dir.join(name);
    let text = format!(
        "operator_key = \"{OPERATOR}\"\npayments = \"fake\"\n[engine]\nrecovery_after_s = {recovery_after_s}\n\
         admission_interval_ms = 50\n[workers]\nrecovery_interval_ms = 200\n\
         expiry_interval_ms = 200\n[fake_payments]\nlatency_ms = {latency_ms}\n"
    );
    std::fs::write(&file, text).unwrap();
    file
}

async fn start(dir: &Path, config: &Path) -> (Child, String) {
    let (dir, config) = (path_str(dir), path_str(config));
    BOXOFFICE
        .start(&["--data-dir", dir, "--config", config])
        .await
}

/// Idempotency claims still marked running in the ledger file.
fn running_claims(dir: &Path) -> i64 {
    let db = rusqlite::Connection::open(dir.join("ledger.db")).expect("the ledger file");
    db.query_row(
        "SELECT count(*) FROM idempotency_keys WHERE state = 'in_flight'",
        [],
        |r| r.get(0),
    )
    .expect("the idempotency table")
}

async fn orders_in_flight(dir: &Path, config: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_boxoffice"))
        .args(["audit", "--json", "--data-dir"])
        .arg(dir)
        .arg("--config")
        .arg(config)
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null)["orders_in_flight"].clone()
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 240)]
async fn a_checkout_retried_after_kill_9_gets_its_settled_answer() {
    scenario().await;
}

async fn scenario() {
    let dir = tempfile::tempdir().unwrap();
    // A slow provider, and no sweep before the kill: every checkout is mid-flight.
    let slow = config(dir.path(), "slow.toml", 3_600, 3_000);
    let (mut server, base) = start(dir.path(), &slow).await;
    let c = boxoffice_testkit::harness::http::client();
    let buyers = holders(&c, &base, OPERATOR, BUYERS).await;
    let keys: Vec<String> = buyers.iter().map(|_| uuid()).collect();
    let load = {
        let (c, base, buyers, keys) = (c.clone(), base.clone(), buyers.clone(), keys.clone());
        tokio::spawn(async move {
            join_all(
                buyers
                    .iter()
                    .zip(&keys)
                    .map(|(b, k)| checkout(&c, &base, b, k)),
            )
            .await
        })
    };
    // Its claim is taken before its checks and its order written after them: only with
    // both in the ledger is a checkout surely waiting on the provider.
    let what = "every checkout to be running (its claim and its order in the ledger)";
    let every = Duration::from_millis(20);
    eventually(what, Duration::from_secs(30), every, || async {
        let claims = running_claims(dir.path());
        let orders = ledger_orders(dir.path()).await;
        let in_flight = orders.values().filter(|s| !s.is_final()).count();
        if claims >= BUYERS as i64 && in_flight >= BUYERS {
            Ok(())
        } else {
            Err((claims, in_flight))
        }
    })
    .await;
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    let before = load.await.unwrap();
    assert!(
        before.iter().all(|(s, ..)| *s == 0),
        "the kill landed after a checkout answered: {before:?}"
    );
    assert_eq!(
        running_claims(dir.path()),
        BUYERS as i64,
        "claims left by the dead process"
    );
    assert_orders_in_flight(dir.path()).await;

    // Restart on the same directory; the sweep settles the orders left mid-checkout.
    let normal = config(dir.path(), "normal.toml", 1, 0);
    let restarted = Instant::now();
    let (_server, base) = start(dir.path(), &normal).await;
    let what = "recovery to settle the orders (audit: orders_in_flight = 0)";
    let every = Duration::from_millis(200);
    eventually(what, Duration::from_secs(30), every, || async {
        match orders_in_flight(dir.path(), &normal).await {
            n if n == json!(0) => Ok(()),
            n => Err(n),
        }
    })
    .await;
    let mut told_201 = Vec::new();
    for (who, key) in buyers.iter().zip(&keys) {
        let (status, replayed, body) = checkout(&c, &base, who, key).await;
        if status == 201 {
            told_201.push(
                body["order_id"]
                    .as_str()
                    .expect("a 201 names its order")
                    .parse()
                    .expect("an order id"),
            );
        }
        assert_ne!(
            status, 409,
            "still `request_in_progress` after the restart: {body}"
        );
        assert!(
            matches!(status, 201 | 402 | 404 | 410),
            "not a settled answer: {status} {body}"
        );
        assert!(!replayed, "the dead process never recorded an answer");
        let (again, replayed, same) = checkout(&c, &base, who, key).await;
        assert_eq!(
            (again, replayed, &same),
            (status, true, &body),
            "replays the settled answer"
        );
    }
    assert_confirmed_and_captured(dir.path(), &told_201).await;
    let waited = restarted.elapsed();
    assert!(
        waited < Duration::from_secs(30),
        "settled answers took {waited:?}, close to the old lease minute"
    );
    eprintln!("{BUYERS} retried checkouts settled {waited:?} after the restart");
}
