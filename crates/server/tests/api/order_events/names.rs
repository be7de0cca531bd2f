//! Attendee names and order events out: with names on tickets, the same checkout and
//! rename reach a webhook endpoint without any name by default, and with them only
//! when the operator sets `relay.attendee_names`.

use std::time::Duration;

use boxoffice_domain::Millis;
use boxoffice_domain::attendees::AttendeeNames;
use boxoffice_domain::transfers::{TransferPolicy, TransferRules};
use boxoffice_testkit::eventually;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::signed_receiver;
use crate::common::{spawn_with, spec, uuid};

/// The test app's clock starts here (`common::spawn_with`).
const START: Millis = Millis(1_800_000_000_000);

/// Two named seats bought, one renamed: every document the endpoint received for
/// the order (created, authorized, committed, captured, renamed).
async fn delivered(send_names: bool) -> Vec<Value> {
    let app = spawn_with(|c| {
        c.workers.relay_interval_ms = 20;
        c.relay.attendee_names = send_names;
    })
    .await;
    let (receiver, _) = signed_receiver(&app).await;
    let mut s = spec(2, 10, 0, 4);
    s.sale.attendee_names = AttendeeNames::AtCheckout;
    s.sale.transfers = Some(TransferRules {
        doors_at: START.plus_secs(86_400),
        closes_before_doors_s: 3_600,
        offer_ttl_s: 600,
        policy: TransferPolicy::Free,
        max_name_changes: 1,
    });
    let event = app.create_event(&s).await;
    let (token, hold_id) = app.holding(event, 2).await;
    let path = format!("/v1/holds/{hold_id}/checkout");
    let body =
        json!({"payment_method": "pm_card_visa", "attendees": ["Ada Lovelace", "Zoë Núñez"]});
    let res = app.post(&path, &token, &uuid(), body).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let order: Value = res.json().await.unwrap();
    let order = order["order_id"].as_str().unwrap().to_string();
    let mine: Value = app
        .get("/v1/me/tickets", &token)
        .await
        .json()
        .await
        .unwrap();
    let ticket = mine["tickets"][0]["ticket_id"]
        .as_str()
        .unwrap()
        .to_string();
    let res = (app.client)
        .put(app.url(&format!("/v1/tickets/{ticket}/attendee")))
        .bearer_auth(&token)
        .header("Idempotency-Key", uuid())
        .json(&json!({"name": "Grace Hopper"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK, "{:?}", res.text().await);
    let docs = eventually(
        "the order's five events at the endpoint",
        Duration::from_secs(30),
        Duration::from_millis(20),
        || async {
            let docs: Vec<Value> = (receiver.accepted().into_iter())
                .filter(|r| r.order == order)
                .map(|r| r.doc)
                .collect();
            if docs.iter().any(|d| d["type"] == "order.renamed") && docs.len() >= 5 {
                Ok(docs)
            } else {
                Err(docs.len())
            }
        },
    )
    .await;
    app.stop().await;
    docs
}

const NAMES: [&str; 3] = ["Ada Lovelace", "Zoë Núñez", "Grace Hopper"];

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 120)]
async fn order_events_leave_attendee_names_out_by_default() {
    let docs = delivered(false).await;
    for doc in &docs {
        let text = doc.to_string();
        assert!(!text.contains("attendee"), "{text}");
        assert!(NAMES.iter().all(|n| !text.contains(n)), "{text}");
    }
    // The rest of the order still goes out.
    let created = docs.iter().find(|d| d["type"] == "order.created").unwrap();
    assert_eq!(created["order"]["seats"].as_array().unwrap().len(), 2);
    let renamed = docs.iter().find(|d| d["type"] == "order.renamed").unwrap();
    assert!(renamed["detail"]["ticket_id"].is_string(), "{renamed}");
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 120)]
async fn order_events_carry_attendee_names_when_the_operator_sends_them() {
    let docs = delivered(true).await;
    let created = docs.iter().find(|d| d["type"] == "order.created").unwrap();
    let mut names: Vec<&str> = (created["order"]["seats"].as_array().unwrap().iter())
        .filter_map(|s| s["attendee"].as_str())
        .collect();
    names.sort();
    assert_eq!(names, ["Ada Lovelace", "Zoë Núñez"], "{created}");
    let renamed = docs.iter().find(|d| d["type"] == "order.renamed").unwrap();
    assert_eq!(renamed["detail"]["attendee"], "Grace Hopper", "{renamed}");
}
