//! Payments: webhooks, late and uncertain answers, crashes at the payment's weak points,
//! Stripe over HTTPS and through localstripe, the soak. The helpers they share: the fake
//! provider's book opened beside the running app (the same SQLite file, as a second
//! process would), webhook delivery, and a buyer holding one seat.
#![allow(dead_code)]

mod bench;
mod crash;
mod delivery;
mod late;
mod soak;
mod startup;
mod stripe_https;
mod stripe_server;
mod uncertainty;
mod waits;
mod webhooks;

use std::time::Duration;

use boxoffice_domain::{EventId, OrderId};
use boxoffice_engine::ports::Clock;
use boxoffice_payment_fake::{FakeGateway, FakeGatewayConfig, FakeWebhook};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::TestApp;

/// The fake provider's file inside the data directory (see the server's wiring).
pub const PROVIDER_FILE: &str = "fake-provider.db";

/// The provider as a test sees it: the app's own book, opened a second time.
pub fn provider(app: &TestApp) -> FakeGateway {
    FakeGateway::open(
        app.dir.path().join(PROVIDER_FILE),
        FakeGatewayConfig::default(),
    )
    .expect("the provider's book opens")
}

/// A buyer holding one best-available seat of section A: (buyer token, hold id).
pub async fn holder(app: &TestApp, event: EventId) -> (String, String) {
    let (token, admission) = app.admitted_buyer(event).await;
    let body = json!({"best_available": {"section": "A", "quantity": 1}});
    let res = app.hold(event, &admission, body).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let v: Value = res.json().await.unwrap();
    (token, v["hold_id"].as_str().unwrap().to_string())
}

/// Checks out and returns (status, body).
pub async fn checkout(app: &TestApp, token: &str, hold: &str, method: &str) -> (u16, Value) {
    let res = app.checkout(hold, token, method).await;
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// The order id of a checkout answer (201 carries the order, 202 wraps it).
pub fn order_id(body: &Value) -> OrderId {
    let id = body["order_id"]
        .as_str()
        .or_else(|| body["order"]["order_id"].as_str())
        .unwrap_or_else(|| panic!("no order in {body}"));
    id.parse().unwrap()
}

pub async fn order(app: &TestApp, token: &str, id: OrderId) -> Value {
    let res = app.get(&format!("/v1/orders/{id}"), token).await;
    assert_eq!(res.status(), StatusCode::OK);
    res.json().await.unwrap()
}

/// POSTs one webhook payload signed now (by the app's clock): (status, body).
pub async fn post_webhook(app: &TestApp, fake: &FakeGateway, payload: &str) -> (u16, Value) {
    let signature = fake.sign(payload.as_bytes(), app.clock.now());
    post_signed(app, payload, &signature).await
}

pub async fn post_signed(app: &TestApp, payload: &str, signature: &str) -> (u16, Value) {
    let res = app
        .client
        .post(app.url("/v1/payments/webhook"))
        .header("Stripe-Signature", signature)
        .header("Content-Type", "application/json")
        .body(payload.to_string())
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// Delivers every waiting webhook once, in outbox order, marking each one answered 2xx.
pub async fn deliver_all(app: &TestApp, fake: &FakeGateway) -> Vec<FakeWebhook> {
    let what = "the provider's outbox to drain";
    boxoffice_testkit::within(Duration::from_secs(60), what, async {
        let mut delivered = Vec::new();
        loop {
            let batch = fake.undelivered_webhooks(500).await.unwrap();
            if batch.is_empty() {
                return delivered;
            }
            for w in batch {
                let (status, body) = post_webhook(app, fake, &w.payload).await;
                assert_eq!(status, 200, "{body}");
                fake.mark_delivered(w.seq).await.unwrap();
                delivered.push(w);
            }
        }
    })
    .await
}
