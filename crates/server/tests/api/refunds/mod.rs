//! Undoing sales: an order cancelled by the operator or returned by its buyer, and a
//! whole event cancelled with its refund job killed (kill -9) and restarted. The
//! helpers they share: a confirmed purchase through the API, and the provider's own
//! count of refunds it made for an order (its webhook outbox has one
//! `charge.refunded` row per refund that moved money).

mod bench;
mod crash;
mod exchanged;
mod single;
mod tickets;

use std::collections::HashMap;

use boxoffice_domain::{EventId, EventSpec, OrderId};
use boxoffice_payment_fake::FakeGateway;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{TestApp, spawn, uuid};
use crate::payments::{checkout, holder, order_id, provider};

/// A fresh app with an open event of `spec`, and the stand-in provider's own book
/// beside it.
async fn selling(spec: &EventSpec) -> (TestApp, FakeGateway, EventId) {
    let app = spawn().await;
    let book = provider(&app);
    let event = app.create_event(spec).await;
    (app, book, event)
}

/// The first order the buyer of `token` lists (here their only one): (id, total).
async fn order_of(app: &TestApp, token: &str) -> (OrderId, i64) {
    let mine: Value = app.get("/v1/me/orders", token).await.json().await.unwrap();
    let o = &mine["orders"][0];
    (
        o["order_id"].as_str().unwrap().parse().unwrap(),
        o["total"].as_i64().unwrap(),
    )
}

/// A buyer who bought one seat of `event` with a card: (buyer token, order id, seat).
async fn bought(app: &TestApp, event: EventId) -> (String, OrderId, String) {
    let (token, hold) = holder(app, event).await;
    let (status, body) = checkout(app, &token, &hold, "pm_card_visa").await;
    assert_eq!(
        (status, body["status"].as_str()),
        (201, Some("confirmed")),
        "{body}"
    );
    let seat = body["seat_ids"][0].as_str().unwrap().to_string();
    (token, order_id(&body), seat)
}

/// POSTs to an order's `cancel` (operator) or `refund` (buyer) under a fresh key.
async fn undo(app: &TestApp, path: &str, token: &str) -> (u16, Value) {
    undo_with_key(app, path, token, &uuid()).await
}

async fn undo_with_key(app: &TestApp, path: &str, token: &str, key: &str) -> (u16, Value) {
    let res = app.post(path, token, key, json!(null)).await;
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// How many refunds the provider made, per order, from its webhook outbox.
async fn refunds_made(book: &FakeGateway) -> HashMap<OrderId, usize> {
    let mut made = HashMap::new();
    let mut after = 0;
    loop {
        let page = book.undelivered_webhooks_after(after, 5_000).await.unwrap();
        let Some(last) = page.last() else {
            return made;
        };
        after = last.seq;
        for w in &page {
            let v: Value = serde_json::from_str(&w.payload).unwrap();
            if v["type"] == "charge.refunded" {
                let id = v["data"]["object"]["metadata"]["order_id"]
                    .as_str()
                    .unwrap();
                *made.entry(id.parse().unwrap()).or_default() += 1;
            }
        }
    }
}

/// The ledger audit and its comparison with the hot store both find nothing.
async fn audit_clean(app: &TestApp) {
    let mut audit = app.engine.audit().await.unwrap();
    app.engine.audit_hot_store(&mut audit).await.unwrap();
    assert!(audit.clean(), "{:?}", audit.violations);
    assert_eq!(audit.orders_in_flight, 0);
}

/// Runs the event's cancellation job until it ends, the test's clock moved past
/// `engine.recovery_after_s` whenever a pass has gone as far as it can (the job ends
/// only after a second pass, that long after the first); fails after 60 s.
async fn cancellation_finished(app: &TestApp, event: EventId) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if app.engine.event_cancellation_step().await.unwrap().idle() {
            let job = app.engine.event_cancellation(event).await.unwrap();
            if job.finished_at.is_some() {
                return;
            }
            let wait = app.engine.config().recovery_after_s as i64;
            app.clock.advance_secs(wait + 1);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the cancellation ends within 60 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

fn is_ok(status: u16) -> bool {
    StatusCode::from_u16(status).is_ok_and(|s| s.is_success())
}
