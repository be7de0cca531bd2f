//! kill -9 in the middle of a load of checkouts, then restart: the recovery sweep
//! finishes or voids every order caught mid-checkout, and the audit is clean — no sold
//! seat without an order, no captured payment without sold seats. The test proves the
//! kill landed mid-checkout (orders in flight in the ledger it left) and checks every
//! buyer told 201 against the ledger and against the provider's own book.

use crate::common::BOXOFFICE;
use boxoffice_testkit::harness::http::admission_token;
use boxoffice_testkit::harness::http::call;
use boxoffice_testkit::harness::path_str;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::books::{assert_confirmed_and_captured, assert_orders_in_flight};
use boxoffice_domain::OrderId;
use futures::future::join_all;
use reqwest::Method;
use serde_json::{Value, json};

const OPERATOR: &str = "crash-test-operator-key-0123";
const BUYERS: usize = 200;

fn write_config(dir: &Path) -> std::path::PathBuf {
    let file = dir.join("boxoffice.toml");
    let text = format!(
        "operator_key = \"{OPERATOR}\"\npayments = \"fake\"\n[engine]\nrecovery_after_s = 1\nadmission_interval_ms = 50\n\
         [workers]\nrecovery_interval_ms = 200\nexpiry_interval_ms = 200\n[fake_payments]\nlatency_ms = 40\n"
    );
    std::fs::write(&file, text).unwrap();
    file
}

/// A buyer who holds one seat: (buyer token, hold id).
async fn holder(c: &reqwest::Client, base: &str, event: i64) -> (String, String) {
    let (s, b) = call(c, Method::POST, format!("{base}/v1/buyers"), "", json!({})).await;
    let token = b["token"]
        .as_str()
        .unwrap_or_else(|| panic!("buyer: {s} {b}"));
    let queue = format!("{base}/v1/events/{event}/queue");
    let (s, j) = call(c, Method::POST, queue, token, json!({})).await;
    let ticket = j["queue_ticket"]
        .as_str()
        .unwrap_or_else(|| panic!("join: {s} {j}"));
    let token = token.to_string();
    let admission = admission_token(c, base, ticket).await;
    let body = json!({"best_available": {"section": "A", "quantity": 1}});
    let holds = format!("{base}/v1/events/{event}/holds");
    let (status, h) = call(c, Method::POST, holds, &admission, body).await;
    assert_eq!(status, 201, "{h}");
    (token, h["hold_id"].as_str().unwrap().to_string())
}

async fn open_event(c: &reqwest::Client, base: &str) -> i64 {
    let spec = serde_json::to_value(crate::common::spec(10, 30, 0, 4)).unwrap();
    let (status, e) = call(c, Method::POST, format!("{base}/v1/events"), OPERATOR, spec).await;
    assert_eq!(status, 201, "{e}");
    let event = e["event_id"].as_i64().unwrap();
    let open = format!("{base}/v1/events/{event}/open");
    let (status, o) = call(c, Method::POST, open, OPERATOR, json!({})).await;
    assert_eq!(status, 200, "{o}");
    event
}

/// Every holder checks out at once; each answer is counted as it arrives.
fn checkouts(
    c: &reqwest::Client,
    base: &str,
    holders: &[(String, String)],
    answered: &Arc<AtomicUsize>,
) -> tokio::task::JoinHandle<Vec<(u16, Value)>> {
    let all = holders.iter().map(|(token, hold)| {
        let (c, token, answered) = (c.clone(), token.clone(), answered.clone());
        let url = format!("{base}/v1/holds/{hold}/checkout");
        async move {
            let body = json!({"payment_method": "pm_card_visa"});
            let out = call(&c, Method::POST, url, &token, body).await;
            answered.fetch_add(1, Ordering::SeqCst);
            out
        }
    });
    tokio::spawn(join_all(all.collect::<Vec<_>>()))
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_server_killed_mid_checkout_recovers_to_a_clean_audit() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path());
    let args = [
        "--data-dir",
        path_str(dir.path()),
        "--config",
        path_str(&config),
    ];
    let (mut server, base) = BOXOFFICE.start(&args).await;
    let c = boxoffice_testkit::harness::http::client();
    let event = open_event(&c, &base).await;
    let holders = join_all((0..BUYERS).map(|_| holder(&c, &base, event))).await;

    // The server dies as soon as the first buyer has an answer: the others are mid-way.
    let answered = Arc::new(AtomicUsize::new(0));
    let load = checkouts(&c, &base, &holders, &answered);
    let what = "the first checkout answer";
    let every = Duration::from_millis(5);
    boxoffice_testkit::eventually(what, Duration::from_secs(60), every, || async {
        match answered.load(Ordering::SeqCst) {
            0 => Err("no answer yet"),
            _ => Ok(()),
        }
    })
    .await;
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    let answers = load.await.unwrap();
    let in_flight = assert_orders_in_flight(dir.path()).await;
    let told_201: Vec<OrderId> = (answers.iter())
        .filter(|(s, _)| *s == 201)
        .map(|(_, b)| b["order_id"].as_str().expect("a 201 names its order"))
        .map(|id| id.parse().expect("an order id"))
        .collect();

    let (_server, base) = BOXOFFICE.start(&args).await;
    let (clean, report) = BOXOFFICE.settled_audit(&args).await;
    eprintln!(
        "at the kill: {} of {BUYERS} told 201, {in_flight} orders in flight; after recovery: {report}",
        told_201.len()
    );
    assert_confirmed_and_captured(dir.path(), &told_201).await;
    assert!(clean, "audit after recovery: {report}");
    let sold = every_order_ended(&c, &base, &holders).await;
    assert_eq!(report["seats_sold"], json!(sold));
    // The rebuilt hot store agrees with the ledger.
    let ev: Value = c
        .get(format!("{base}/v1/events/{event}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ev["counts"]["sold"], json!(sold));
}

/// Every holder's orders ended (confirmed or not); returns how many were confirmed.
async fn every_order_ended(c: &reqwest::Client, base: &str, holders: &[(String, String)]) -> usize {
    let mut sold = 0;
    for (token, _) in holders {
        let (_, orders) = call(
            c,
            Method::GET,
            format!("{base}/v1/me/orders"),
            token,
            Value::Null,
        )
        .await;
        let orders = orders["orders"]
            .as_array()
            .expect("a list of orders")
            .clone();
        sold += orders.iter().filter(|o| o["status"] == "confirmed").count();
        assert!(
            orders.iter().all(|o| matches!(
                o["status"].as_str(),
                Some("confirmed" | "voided" | "declined" | "lost")
            )),
            "{orders:?}"
        );
    }
    sold
}
