//! State a hostile client could grow or stretch: an admission token renewed forever by
//! polling, holds fired in a tight loop, and a join whose Idempotency-Key was reused for
//! another request.

use crate::common::*;
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn join(app: &TestApp, event: boxoffice_domain::EventId, token: &str, key: &str) -> Value {
    let res = app
        .post(&format!("/v1/events/{event}/queue"), token, key, json!({}))
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    res.json().await.unwrap()
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn polling_does_not_renew_an_admission_token() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let (_, token) = app.buyer().await;
    let ticket = join(&app, event, &token, &uuid()).await["queue_ticket"]
        .as_str()
        .unwrap()
        .to_string();
    app.engine.admit_batch(event).await.unwrap();
    let first: Value = app
        .get("/v1/queue/status", &ticket)
        .await
        .json()
        .await
        .unwrap();
    let expires = first["admission_expires_at"].as_i64().expect("admitted");
    let ttl_s = app.engine.config().admission_token_ttl_s as i64;

    // Ten minutes of polling later, the token still ends when the admission does.
    app.clock.advance_secs(600);
    let again: Value = app
        .get("/v1/queue/status", &ticket)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        again["admission_expires_at"].as_i64(),
        Some(expires),
        "{again}"
    );
    assert_eq!(again["admission_token"], first["admission_token"]);

    // Once it has expired, polling mints no new one: the admission is over.
    app.clock.advance_secs(ttl_s - 600 + 1);
    let res = app.get("/v1/queue/status", &ticket).await;
    assert_eq!(res.status(), StatusCode::GONE);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"], "admission_expired", "{body}");
    assert!(body.get("admission_token").is_none());
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buyer_flooding_holds_gets_429_with_retry_after_and_holds_again_later() {
    let app = spawn().await;
    let event = app.create_event(&spec(10, 10, 0, 4)).await;
    let (_, admission) = app.admitted_buyer(event).await;
    let limit = app.engine.config().waiting.hold_per_buyer;
    let mut codes = Vec::new();
    // Seats that are taken already: each attempt is refused, and each still counts.
    let (_, other) = app.admitted_buyer(event).await;
    let taken = app
        .hold(event, &other, json!({"seat_ids": ["A-1-1"]}))
        .await;
    assert_eq!(taken.status(), StatusCode::CREATED);
    for _ in 0..limit.burst + 5 {
        let res = app
            .hold(event, &admission, json!({"seat_ids": ["A-1-1"]}))
            .await;
        codes.push(res.status());
    }
    let limited = codes
        .iter()
        .filter(|c| **c == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!(
        limited, 5,
        "a burst of {}, then 429: {codes:?}",
        limit.burst
    );
    let key = uuid();
    let body = json!({"seat_ids": ["A-2-1"]});
    let path = format!("/v1/events/{event}/holds");
    let res = app.post(&path, &admission, &key, body.clone()).await;
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(res.headers().contains_key("retry-after"));
    assert_eq!(res.json::<Value>().await.unwrap()["error"], "rate_limited");
    // The refusal was not kept as the key's answer: after the wait the same request holds.
    app.clock.advance_secs(60);
    let res = app.post(&path, &admission, &key, body).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_join_key_with_another_body_changes_nothing() {
    let app = spawn().await;
    let one = app.create_event(&spec(1, 10, 0, 4)).await;
    let two = app.create_event(&spec(1, 10, 0, 4)).await;
    let (_, token) = app.buyer().await;
    let key = uuid();
    join(&app, one, &token, &key).await;
    // The same key for another request (another event's line) is refused ...
    let res = app
        .post(&format!("/v1/events/{two}/queue"), &token, &key, json!({}))
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"], "idempotency_key_reused");
    // ... and did not put the buyer in that line.
    let line = app.engine.queue_state(two).await.unwrap();
    assert_eq!(
        line.queue_length, 0,
        "the refused join took a place: {line:?}"
    );
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_join_retried_with_its_key_after_retry_after_joins() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let (_, token) = app.buyer().await;
    let burst = app.engine.config().waiting.join_per_buyer.burst;
    for _ in 0..burst {
        join(&app, event, &token, &uuid()).await;
    }
    let (key, path) = (uuid(), format!("/v1/events/{event}/queue"));
    let res = app.post(&path, &token, &key, json!({})).await;
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    app.clock.advance_secs(60);
    let res = app.post(&path, &token, &key, json!({})).await;
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "the refusal was kept as the key's answer"
    );
    assert!(!res.headers().contains_key("idempotent-replayed"));
    app.stop().await;
}
