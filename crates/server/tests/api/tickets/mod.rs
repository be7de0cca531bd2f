//! Tickets a door can trust, through HTTP: buyers' tickets and QR codes, gate devices,
//! scans (two gates racing), offline batches, refusals, and the offline `gate`
//! subcommand against a downloaded bundle; names on tickets and the transfer policy.

mod door;
mod exchange;
mod exchange_3ds;
mod exchange_crash;
mod exchange_velocity;
mod gate_cli;
mod names;
mod refusals;
mod transfers;

pub use transfers::{give, transferable};

use boxoffice_domain::EventId;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{TestApp, uuid};

/// A new buyer who bought `seats` seats of section A of `event`: (buyer token, their
/// tickets as listed by GET /v1/me/tickets).
pub async fn buy(app: &TestApp, event: EventId, seats: u32) -> (String, Vec<Value>) {
    let (_, token) = app.buyer().await;
    let tickets = buy_as(app, event, seats, &token).await;
    (token, tickets)
}

/// The buyer of `token` buys `seats` seats of section A of `event`: their tickets of
/// it, as listed by GET /v1/me/tickets.
pub async fn buy_as(app: &TestApp, event: EventId, seats: u32, token: &str) -> Vec<Value> {
    let admission = app.admit(event, token).await;
    let body = json!({"best_available": {"section": "A", "quantity": seats}});
    let res = app.hold(event, &admission, body).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let hold = res.json::<Value>().await.unwrap()["hold_id"]
        .as_str()
        .unwrap()
        .to_string();
    let res = app.checkout(&hold, token, "pm_card_visa").await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let order = res.json::<Value>().await.unwrap()["order_id"].clone();
    let tickets = my_tickets(app, token).await;
    let of_event: Vec<Value> = (tickets.into_iter())
        .filter(|t| t["event_id"] == json!(event.0))
        .collect();
    assert!(of_event.len() >= seats as usize, "{order}: {of_event:?}");
    of_event
}

pub async fn my_tickets(app: &TestApp, token: &str) -> Vec<Value> {
    let res = app.get("/v1/me/tickets", token).await;
    assert_eq!(res.status(), StatusCode::OK);
    let v: Value = res.json().await.unwrap();
    v["tickets"].as_array().unwrap().clone()
}

/// A gate device of `event`: (gate id, credential).
pub async fn gate(app: &TestApp, event: EventId, name: &str) -> (String, String) {
    let path = format!("/v1/events/{event}/gates");
    let res = app
        .post(&path, &app.operator_key, &uuid(), json!({"name": name}))
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let v: Value = res.json().await.unwrap();
    (
        v["gate_id"].as_str().unwrap().to_string(),
        v["credential"]
            .as_str()
            .expect("the credential")
            .to_string(),
    )
}

/// One scan at `event`'s door: (status, body).
pub async fn scan(app: &TestApp, event: EventId, credential: &str, barcode: &str) -> (u16, Value) {
    let path = format!("/v1/events/{event}/scans");
    let res = app
        .post(&path, credential, &uuid(), json!({"barcode": barcode}))
        .await;
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

pub fn barcode(ticket: &Value) -> String {
    ticket["barcode"].as_str().expect("a barcode").to_string()
}

/// The gate bundle of `event` as a gate downloads it.
pub async fn bundle(app: &TestApp, event: EventId, credential: &str) -> Value {
    let res = app
        .get(&format!("/v1/events/{event}/gate-bundle"), credential)
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["cache-control"], "no-store");
    res.json().await.unwrap()
}

/// The operator cancels the order the buyer of `token` placed for `event` (refunded
/// through the provider); a second cancel is refused with a code. Returns its id.
pub async fn cancel_order_of(app: &TestApp, token: &str, event: EventId) -> String {
    let mine: Value = app.get("/v1/me/orders", token).await.json().await.unwrap();
    let order = (mine["orders"].as_array().unwrap().iter())
        .find(|o| o["event_id"] == json!(event.0))
        .expect("an order of the event");
    let id = order["order_id"].as_str().unwrap().to_string();
    let path = format!("/v1/orders/{id}/cancel");
    let res = app.post(&path, &app.operator_key, &uuid(), json!({})).await;
    assert_eq!(res.status(), StatusCode::OK);
    let res = app.post(&path, &app.operator_key, &uuid(), json!({})).await;
    assert_eq!(res.status(), StatusCode::CONFLICT, "a refunded order again");
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["error"], "order_not_cancellable");
    id
}
