//! kill -9 in the middle of a load of checkouts, then restart: the recovery sweep
//! finishes or voids every order caught mid-checkout, and the audit is clean — no sold
//! seat without an order, no captured payment without sold seats.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::uuid;
use futures::future::join_all;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

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

/// Starts `boxoffice serve` on port 0 and returns it with its base URL.
async fn start(dir: &Path, config: &Path) -> (Child, String) {
    let (dir, config) = (
        dir.to_str().expect("a UTF-8 path"),
        config.to_str().expect("a UTF-8 path"),
    );
    common::process::start_server(&["--data-dir", dir, "--config", config]).await
}

async fn call(
    c: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: &str,
    body: Value,
) -> (u16, Value) {
    let res = c
        .request(method, url)
        .bearer_auth(token)
        .header("Idempotency-Key", uuid())
        .json(&body)
        .send()
        .await;
    match res {
        Ok(r) => (r.status().as_u16(), r.json().await.unwrap_or(Value::Null)),
        Err(_) => (0, Value::Null),
    }
}

/// A buyer who holds one seat: (buyer token, hold id).
async fn holder(c: &reqwest::Client, base: &str, event: i64) -> (String, String) {
    let (_, b) = call(
        c,
        reqwest::Method::POST,
        format!("{base}/v1/buyers"),
        "",
        json!({}),
    )
    .await;
    let token = b["token"].as_str().unwrap().to_string();
    let (_, j) = call(
        c,
        reqwest::Method::POST,
        format!("{base}/v1/events/{event}/queue"),
        &token,
        json!({}),
    )
    .await;
    let ticket = j["queue_ticket"].as_str().unwrap().to_string();
    let admission = loop {
        let s: Value = c
            .get(format!("{base}/v1/queue/status"))
            .bearer_auth(&ticket)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if let Some(a) = s["admission_token"].as_str() {
            break a.to_string();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    let body = json!({"best_available": {"section": "A", "quantity": 1}});
    let (status, h) = call(
        c,
        reqwest::Method::POST,
        format!("{base}/v1/events/{event}/holds"),
        &admission,
        body,
    )
    .await;
    assert_eq!(status, 201, "{h}");
    (token, h["hold_id"].as_str().unwrap().to_string())
}

async fn audit(dir: &Path, config: &Path) -> (bool, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_boxoffice"))
        .args(["audit", "--json", "--data-dir"])
        .arg(dir)
        .arg("--config")
        .arg(config)
        .output()
        .await
        .unwrap();
    (
        out.status.success(),
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_checkout_recovers_to_a_clean_audit() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path());
    let (mut server, base) = start(dir.path(), &config).await;
    let c = reqwest::Client::new();
    let spec = common::spec(10, 30, 0, 4);
    let (status, e) = call(
        &c,
        reqwest::Method::POST,
        format!("{base}/v1/events"),
        OPERATOR,
        serde_json::to_value(&spec).unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{e}");
    let event = e["event_id"].as_i64().unwrap();
    call(
        &c,
        reqwest::Method::POST,
        format!("{base}/v1/events/{event}/open"),
        OPERATOR,
        json!({}),
    )
    .await;
    let holders = join_all((0..BUYERS).map(|_| holder(&c, &base, event))).await;

    // Every holder checks out at once; the server dies while the provider is answering.
    let checkouts: Vec<_> = holders
        .iter()
        .map(|(token, hold)| {
            let (c, url, token) = (
                c.clone(),
                format!("{base}/v1/holds/{hold}/checkout"),
                token.clone(),
            );
            async move {
                call(
                    &c,
                    reqwest::Method::POST,
                    url,
                    &token,
                    json!({"payment_method": "pm_card_visa"}),
                )
                .await
            }
        })
        .collect();
    let load = tokio::spawn(join_all(checkouts));
    tokio::time::sleep(Duration::from_millis(220)).await;
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    let answered = load.await.unwrap();
    let confirmed_before = answered.iter().filter(|(s, _)| *s == 201).count();
    assert!(
        confirmed_before < BUYERS,
        "the kill landed after every checkout finished; nothing was tested"
    );

    let (_server, base) = start(dir.path(), &config).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let report = loop {
        let (clean, report) = audit(dir.path(), &config).await;
        if report["orders_in_flight"] == json!(0) {
            assert!(clean, "audit after recovery: {report}");
            break report;
        }
        assert!(
            Instant::now() < deadline,
            "recovery did not finish: {report}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    eprintln!(
        "confirmed before the kill: {confirmed_before} of {BUYERS}; after recovery: {report}"
    );
    // Every buyer told 201 before the crash still has their ticket.
    let mut sold = 0;
    for (i, (token, _)) in holders.iter().enumerate() {
        let orders: Value = c
            .get(format!("{base}/v1/me/orders"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let orders = orders["orders"].as_array().unwrap();
        let confirmed = orders.iter().filter(|o| o["status"] == "confirmed").count();
        sold += confirmed;
        if answered[i].0 == 201 {
            assert_eq!(
                confirmed, 1,
                "buyer {i} was told confirmed before the crash"
            );
        }
        assert!(
            orders.iter().all(|o| matches!(
                o["status"].as_str(),
                Some("confirmed" | "voided" | "declined" | "lost")
            )),
            "{orders:?}"
        );
    }
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
