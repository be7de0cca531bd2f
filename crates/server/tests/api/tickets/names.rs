//! Names on tickets through HTTP: an event that needs names refuses a checkout without
//! them; the names are signed into the barcodes and shown at the scan and by the
//! offline gate; a ticket named "before the doors" is refused at the door until its
//! holder names it; a name change issues a new barcode (the old one is refused),
//! counts against the event's limit and stops at its cutoff; and the transfer policy
//! refuses direct transfers under `none`, `name_change_only` and `exchange_only`. Every
//! refusal is coded and changes nothing.

use boxoffice_domain::attendees::AttendeeNames;
use boxoffice_domain::transfers::{TransferPolicy, TransferRules};
use boxoffice_domain::{EventId, EventSpec, Millis};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::gate_cli::gate_cli;
use super::{barcode, bundle, buy, gate, my_tickets, scan};
use crate::common::{TestApp, spawn, spec, uuid};

/// The test app's clock starts here (`common::spawn_with`).
const START: Millis = Millis(1_800_000_000_000);
/// Doors a day after the start; changes close an hour before.
const DOORS_S: i64 = 86_400;
const CUTOFF_S: u64 = 3_600;

fn named(names: AttendeeNames, policy: Option<TransferPolicy>) -> EventSpec {
    let mut s = spec(2, 10, 0, 4);
    s.sale.attendee_names = names;
    s.sale.transfers = policy.map(|policy| TransferRules {
        doors_at: START.plus_secs(DOORS_S as u64),
        closes_before_doors_s: CUTOFF_S,
        offer_ttl_s: 600,
        policy,
        max_name_changes: 1,
    });
    s
}

async fn answer(res: reqwest::Response) -> (u16, Value) {
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

fn code(v: &Value) -> &str {
    v["error"].as_str().unwrap_or_default()
}

/// A hold of `seats` seats of section A for the buyer of `token`.
async fn hold(app: &TestApp, event: EventId, token: &str, seats: u32) -> String {
    let admission = app.admit(event, token).await;
    let body = json!({"best_available": {"section": "A", "quantity": seats}});
    let res = app.hold(event, &admission, body).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let v: Value = res.json().await.unwrap();
    v["hold_id"].as_str().unwrap().to_string()
}

async fn checkout(app: &TestApp, hold: &str, token: &str, names: &[&str]) -> (u16, Value) {
    let path = format!("/v1/holds/{hold}/checkout");
    let body = json!({"payment_method": "pm_card_visa", "attendees": names});
    answer(app.post(&path, token, &uuid(), body).await).await
}

async fn rename(app: &TestApp, token: &str, ticket: &str, name: &str) -> (u16, Value) {
    let res = (app.client)
        .put(app.url(&format!("/v1/tickets/{ticket}/attendee")))
        .bearer_auth(token)
        .header("Idempotency-Key", uuid())
        .json(&json!({"name": name}))
        .send()
        .await
        .unwrap();
    answer(res).await
}

async fn ticket(app: &TestApp, token: &str, id: &str) -> Value {
    let res = app.get(&format!("/v1/tickets/{id}"), token).await;
    assert_eq!(res.status(), StatusCode::OK);
    res.json().await.unwrap()
}

fn id(t: &Value) -> String {
    t["ticket_id"].as_str().unwrap().to_string()
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_required_at_checkout_are_signed_into_the_barcode_and_shown_at_the_scan() {
    let app = spawn().await;
    let event = app
        .create_event(&named(AttendeeNames::AtCheckout, None))
        .await;
    let (_, token) = app.buyer().await;
    let held = hold(&app, event, &token, 2).await;
    let (status, none) = checkout(&app, &held, &token, &[]).await;
    assert_eq!((status, code(&none)), (422, "attendee_names_required"));
    let (status, one) = checkout(&app, &held, &token, &["Ada Lovelace"]).await;
    assert_eq!((status, code(&one)), (422, "attendee_names_invalid"));
    let (status, bad) = checkout(&app, &held, &token, &["Ada", "R2-D2"]).await;
    assert_eq!((status, code(&bad)), (422, "attendee_names_invalid"));
    assert!(my_tickets(&app, &token).await.is_empty(), "nothing sold");

    let (status, order) = checkout(&app, &held, &token, &[" Ada  Lovelace ", "Zoë Núñez"]).await;
    assert_eq!(status, 201, "{order}");
    let tickets = my_tickets(&app, &token).await;
    let mut names: Vec<&str> = tickets
        .iter()
        .map(|t| t["attendee"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["Ada Lovelace", "Zoë Núñez"], "trimmed, as given");
    let (_, key) = gate(&app, event, "Main").await;
    for t in &tickets {
        let (status, admitted) = scan(&app, event, &key, &barcode(t)).await;
        assert_eq!(status, 200, "{admitted}");
        assert_eq!(
            admitted["attendee"], t["attendee"],
            "the gate shows the name"
        );
    }

    // An event that takes no names refuses them rather than printing them.
    let plain = app.create_event(&spec(2, 10, 0, 4)).await;
    let held = hold(&app, plain, &token, 1).await;
    let (status, refused) = checkout(&app, &held, &token, &["Ada"]).await;
    assert_eq!((status, code(&refused)), (409, "attendee_names_not_taken"));
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_the_doors_an_unnamed_ticket_is_refused_until_named_and_a_change_reissues_it() {
    let app = spawn().await;
    let spec = named(
        AttendeeNames::BeforeDoors,
        Some(TransferPolicy::NameChangeOnly),
    );
    let event = app.create_event(&spec).await;
    let (token, tickets) = buy(&app, event, 1).await;
    let first = tickets[0].clone();
    assert!(first.get("attendee").is_none(), "{first}");
    let (_, key) = gate(&app, event, "Main").await;
    let (status, refused) = scan(&app, event, &key, &barcode(&first)).await;
    assert_eq!((status, code(&refused)), (409, "barcode_name_missing"));
    let b = bundle(&app, event, &key).await;
    assert_eq!(b["names_required"], json!(true));

    // Someone else's ticket, or something that is not a name: refused, nothing changes.
    let (_, stranger) = app.buyer().await;
    let (status, none) = rename(&app, &stranger, &id(&first), "Mallory").await;
    assert_eq!((status, code(&none)), (404, "ticket_not_found"));
    let (status, bad) = rename(&app, &token, &id(&first), "<b>Ada</b>").await;
    assert_eq!((status, code(&bad)), (422, "attendee_names_invalid"));
    assert_eq!(ticket(&app, &token, &id(&first)).await["version"], json!(1));

    // Naming is free; the one change the event allows issues another version.
    let (status, v2) = rename(&app, &token, &id(&first), "  Ada \t Lovelace").await;
    assert_eq!(status, 200, "{v2}");
    assert_eq!(
        (&v2["version"], &v2["attendee"]),
        (&json!(2), &json!("Ada Lovelace"))
    );
    let (status, v3) = rename(&app, &token, &id(&first), "Grace Hopper").await;
    assert_eq!(status, 200, "{v3}");
    assert_eq!(
        (&v3["version"], &v3["attendee"]),
        (&json!(3), &json!("Grace Hopper"))
    );
    let (status, over) = rename(&app, &token, &id(&first), "Mallory").await;
    assert_eq!((status, code(&over)), (409, "name_change_limit_reached"));
    let now = ticket(&app, &token, &id(&first)).await;
    assert_eq!(
        (&now["version"], &now["barcode"]),
        (&json!(3), &v3["barcode"])
    );

    // The order's history has a line for each rename (and so its events out).
    let orders: Value = app.get("/v1/me/orders", &token).await.json().await.unwrap();
    let order = orders["orders"][0]["order_id"].as_str().unwrap();
    let history: Value = app
        .get(&format!("/v1/orders/{order}/history"), &app.operator_key)
        .await
        .json()
        .await
        .unwrap();
    let renamed = (history["lines"].as_array().unwrap().iter())
        .filter(|l| l["event"] == "renamed")
        .count();
    assert_eq!(renamed, 2, "{history}");

    // The offline gate shows the name and refuses the replaced barcodes.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bundle.json");
    std::fs::write(&file, bundle(&app, event, &key).await.to_string()).unwrap();
    let (exit, line) = gate_cli(&file, Some(&barcode(&v3)), "");
    assert_eq!(exit, 0, "{line}");
    assert!(line.ends_with("ATTENDEE Grace Hopper"), "{line}");
    let (exit, line) = gate_cli(&file, Some(&barcode(&v2)), "");
    assert_eq!(exit, 1, "{line}");

    // At the door, the barcode before the change is refused and the new one admits.
    let (status, old) = scan(&app, event, &key, &barcode(&v2)).await;
    assert_eq!((status, code(&old)), (409, "barcode_revoked"));
    let (status, admitted) = scan(&app, event, &key, &barcode(&v3)).await;
    assert_eq!(status, 200, "{admitted}");
    assert_eq!(admitted["attendee"], json!("Grace Hopper"));
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_change_past_the_cutoff_is_refused_and_changes_nothing() {
    let app = spawn().await;
    let spec = named(
        AttendeeNames::BeforeDoors,
        Some(TransferPolicy::NameChangeOnly),
    );
    let event = app.create_event(&spec).await;
    let (_, token) = app.buyer().await;
    let held = hold(&app, event, &token, 1).await;
    let (status, _) = checkout(&app, &held, &token, &["Ada Lovelace"]).await;
    assert_eq!(status, 201);
    let (late_token, unnamed) = buy(&app, event, 1).await;
    let mine = my_tickets(&app, &token).await;
    let t = mine[0].clone();
    assert_eq!(t["attendee"], json!("Ada Lovelace"));
    // Tickets stay with their buyers under `name_change_only`.
    let other = app.buyer().await;
    let path = format!("/v1/tickets/{}/transfers", id(&t));
    let (status, no) = answer(
        app.post(&path, &token, &uuid(), json!({"to_buyer_id": other.0}))
            .await,
    )
    .await;
    assert_eq!((status, code(&no)), (403, "transfers_not_allowed"));

    app.clock.advance_secs(DOORS_S - CUTOFF_S as i64);
    let (status, closed) = rename(&app, &token, &id(&t), "Grace Hopper").await;
    assert_eq!((status, code(&closed)), (403, "name_changes_closed"));
    let after = ticket(&app, &token, &id(&t)).await;
    assert_eq!(
        (&after["version"], &after["attendee"], &after["barcode"]),
        (&t["version"], &t["attendee"], &t["barcode"]),
        "nothing changed"
    );
    // Naming a ticket that has no name is not a change: the door needs it.
    let late = unnamed[0].clone();
    let (status, v2) = rename(&app, &late_token, &id(&late), "Grace Hopper").await;
    assert_eq!(status, 200, "{v2}");
    assert_eq!(
        (&v2["version"], &v2["attendee"]),
        (&json!(2), &json!("Grace Hopper"))
    );
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_are_refused_under_none_and_exchange_only_and_names_stay() {
    let app = spawn().await;
    let to = app.buyer().await;
    for (policy, refusal) in [
        (TransferPolicy::None, "transfers_not_allowed"),
        (TransferPolicy::ExchangeOnly, "transfers_exchange_only"),
    ] {
        let event = app
            .create_event(&named(AttendeeNames::AtCheckout, Some(policy)))
            .await;
        let (_, token) = app.buyer().await;
        let held = hold(&app, event, &token, 1).await;
        let (status, _) = checkout(&app, &held, &token, &["Ada Lovelace"]).await;
        assert_eq!(status, 201);
        let t = my_tickets(&app, &token).await[0].clone();
        let path = format!("/v1/tickets/{}/transfers", id(&t));
        let (status, no) = answer(
            app.post(&path, &token, &uuid(), json!({"to_buyer_id": to.0}))
                .await,
        )
        .await;
        assert_eq!((status, code(&no)), (403, refusal), "{policy:?}");
        if policy == TransferPolicy::ExchangeOnly {
            let message = no["message"].as_str().unwrap_or_default();
            assert!(message.contains("exchange"), "{message}");
        }
        let (status, no) = rename(&app, &token, &id(&t), "Grace Hopper").await;
        assert_eq!((status, code(&no)), (403, "name_changes_not_allowed"));
        let after = ticket(&app, &token, &id(&t)).await;
        assert_eq!(
            (&after["version"], &after["attendee"]),
            (&json!(1), &t["attendee"])
        );
        assert!(my_tickets(&app, &to.1).await.is_empty(), "{policy:?}");
    }
    app.stop().await;
}
