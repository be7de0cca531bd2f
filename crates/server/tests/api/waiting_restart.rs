//! Embedded mode keeps its queue in memory, yet the operator's per-event waiting-room
//! rules and admission override must survive a crash: kill -9 the binary, start it
//! again on the same data directory, and both are still in force.

use crate::common::BOXOFFICE;
use boxoffice_testkit::harness::http::call;
use boxoffice_testkit::harness::path_str;
use std::path::Path;

use reqwest::Method;
use serde_json::{Value, json};

const OPERATOR: &str = "waiting-restart-operator-key-01";

fn write_config(dir: &Path) -> String {
    let file = dir.join("boxoffice.toml");
    let text = format!(
        "operator_key = \"{OPERATOR}\"\npayments = \"fake\"\n[engine]\nadmission_interval_ms = 50\n"
    );
    std::fs::write(&file, text).unwrap();
    path_str(&file).to_string()
}

/// The operator's view of the event's waiting room: (rules, admission control).
async fn settings(c: &reqwest::Client, base: &str, event: i64) -> (Value, Value) {
    let stats: Value = c
        .get(format!("{base}/v1/events/{event}/stats"))
        .bearer_auth(OPERATOR)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let room = &stats["waiting_room"];
    (room["rules"].clone(), room["control"].clone())
}

/// A fresh unverified buyer tries to join; returns (status, error code).
async fn unverified_join(c: &reqwest::Client, base: &str, event: i64) -> (u16, Value) {
    let (_, b) = call(c, Method::POST, format!("{base}/v1/buyers"), "", json!({})).await;
    let token = b["token"].as_str().expect("a buyer token");
    let url = format!("{base}/v1/events/{event}/queue");
    let (status, body) = call(c, Method::POST, url, token, json!({})).await;
    (status, body["error"].clone())
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_room_rules_and_the_admission_override_survive_a_kill_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path());
    let args = ["--data-dir", path_str(dir.path()), "--config", &config];
    let (mut server, base) = BOXOFFICE.start(&args).await;
    let c = boxoffice_testkit::harness::http::client();
    let spec = serde_json::to_value(crate::common::spec(2, 10, 0, 4)).unwrap();
    let (status, e) = call(
        &c,
        Method::POST,
        format!("{base}/v1/events"),
        OPERATOR,
        spec,
    )
    .await;
    assert_eq!(status, 201, "{e}");
    let event = e["event_id"].as_i64().unwrap();
    let open = format!("{base}/v1/events/{event}/open");
    assert_eq!(
        call(&c, Method::POST, open, OPERATOR, json!({})).await.0,
        200
    );
    let rules = json!({"require_verified": true, "sold_out_margin": 3});
    let url = format!("{base}/v1/events/{event}/waiting-room");
    assert_eq!(call(&c, Method::PUT, url, OPERATOR, rules).await.0, 200);
    let url = format!("{base}/v1/events/{event}/admission");
    let control = json!({"rate_per_s": 40});
    assert_eq!(call(&c, Method::PUT, url, OPERATOR, control).await.0, 200);
    let before = settings(&c, &base, event).await;
    assert_eq!(before.0["require_verified"], json!(true));
    assert_eq!(before.1["rate_per_s"], json!(40));
    assert_eq!(
        unverified_join(&c, &base, event).await,
        (403, json!("buyer_not_verified"))
    );

    server.kill().await.expect("kill -9 the server");
    let (_server, base) = BOXOFFICE.start(&args).await;

    assert_eq!(settings(&c, &base, event).await, before);
    assert_eq!(
        unverified_join(&c, &base, event).await,
        (403, json!("buyer_not_verified"))
    );
}
