//! Buyers driven through a real server's HTTP API, for tests of separate processes:
//! holders of one seat each, and checkouts under a chosen Idempotency-Key.

use reqwest::Method;
use serde_json::{Value, json};

use super::http::{admission_token, call};

/// An open event made with `operator` (ten seats a row, at least 40 and enough for
/// `n`), and `n` buyers holding one seat each: (buyer token, hold id).
pub async fn holders(
    c: &reqwest::Client,
    base: &str,
    operator: &str,
    n: usize,
) -> Vec<(String, String)> {
    let rows = n.div_ceil(10).max(4) as u32;
    let spec = serde_json::to_value(super::spec(rows, 10, 0, 4)).expect("a spec is JSON");
    let (_, e) = call(c, Method::POST, format!("{base}/v1/events"), operator, spec).await;
    let event = e["event_id"].as_i64().expect("an event");
    let open = format!("{base}/v1/events/{event}/open");
    let (status, _) = call(c, Method::POST, open, operator, json!({})).await;
    assert_eq!(status, 200, "the event opens");
    futures::future::join_all((0..n).map(|_| holder(c, base, event))).await
}

/// A new buyer, admitted to `event`, holding one seat of section A.
async fn holder(c: &reqwest::Client, base: &str, event: i64) -> (String, String) {
    let (_, b) = call(c, Method::POST, format!("{base}/v1/buyers"), "", json!({})).await;
    let token = b["token"].as_str().expect("a buyer token").to_string();
    let queue = format!("{base}/v1/events/{event}/queue");
    let (_, j) = call(c, Method::POST, queue, &token, json!({})).await;
    let ticket = j["queue_ticket"].as_str().expect("a queue ticket");
    let admission = admission_token(c, base, ticket).await;
    let body = json!({"best_available": {"section": "A", "quantity": 1}});
    let holds = format!("{base}/v1/events/{event}/holds");
    let (s, h) = call(c, Method::POST, holds, &admission, body).await;
    assert_eq!(s, 201, "{h}");
    (token, h["hold_id"].as_str().expect("a hold id").to_string())
}

/// A card checkout of `who`'s hold under Idempotency-Key `key`: (status, replayed,
/// body); status 0 when the server died before answering.
pub async fn checkout(
    c: &reqwest::Client,
    base: &str,
    who: &(String, String),
    key: &str,
) -> (u16, bool, Value) {
    let res = c
        .post(format!("{base}/v1/holds/{}/checkout", who.1))
        .bearer_auth(&who.0)
        .header("Idempotency-Key", key)
        .json(&json!({"payment_method": "pm_card_visa"}))
        .send()
        .await;
    match res {
        Ok(r) => {
            let replayed = r.headers().contains_key("idempotent-replayed");
            let status = r.status().as_u16();
            (status, replayed, r.json().await.unwrap_or(Value::Null))
        }
        Err(_) => (0, false, Value::Null),
    }
}
