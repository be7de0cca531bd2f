//! Tickets a door can trust, through HTTP: buyers' tickets and QR codes, gate devices,
//! scans (two gates racing), offline batches, refusals, and the offline `gate`
//! subcommand against a downloaded bundle.

mod door;
mod gate_cli;
mod refusals;

use boxoffice_domain::EventId;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{TestApp, uuid};

/// A new buyer who bought `seats` seats of section A of `event`: (buyer token, their
/// tickets as listed by GET /v1/me/tickets).
pub async fn buy(app: &TestApp, event: EventId, seats: u32) -> (String, Vec<Value>) {
    let (token, admission) = app.admitted_buyer(event).await;
    let body = json!({"best_available": {"section": "A", "quantity": seats}});
    let res = app.hold(event, &admission, body).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let hold = res.json::<Value>().await.unwrap()["hold_id"]
        .as_str()
        .unwrap()
        .to_string();
    let res = app.checkout(&hold, &token, "pm_card_visa").await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let tickets = my_tickets(app, &token).await;
    assert_eq!(tickets.len(), seats as usize);
    (token, tickets)
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

/// Moves an order behind the API, as a refund or a cancellation would: the ledger is
/// the embedded node's SQLite file.
pub fn set_order_state_of_ticket(app: &TestApp, ticket_id: &str, state: &str) {
    let db = rusqlite::Connection::open(app.dir.path().join("ledger.db")).unwrap();
    db.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
    let changed = db
        .execute(
            "UPDATE orders SET state = ?2 WHERE id = (SELECT order_id FROM tickets WHERE id = ?1)",
            rusqlite::params![ticket_id, state],
        )
        .unwrap();
    assert_eq!(changed, 1);
}
