//! Transfers through HTTP: a ticket passed to another buyer admits with its new barcode
//! while the old one is refused; over the recipient's limit, after the cutoff, of an
//! event that allows none, twice, or of someone else's ticket, a transfer is refused
//! with a code and changes nothing.

use boxoffice_domain::transfers::TransferRules;
use boxoffice_domain::{EventSpec, Millis};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{barcode, buy, buy_as, gate, my_tickets, scan};
use crate::common::{TestApp, spawn, spec, uuid};

/// The test app's clock starts here (`common::spawn_with`).
const START: Millis = Millis(1_800_000_000_000);
/// Doors a day after the start; transfers close an hour before.
const DOORS_S: i64 = 86_400;
const CUTOFF_S: u64 = 3_600;

/// The event with transfers allowed until an hour before the doors.
pub fn transferable(mut s: EventSpec) -> EventSpec {
    s.sale.transfers = Some(TransferRules {
        doors_at: START.plus_secs(DOORS_S as u64),
        closes_before_doors_s: CUTOFF_S,
        offer_ttl_s: 600,
        policy: Default::default(),
        max_name_changes: 1,
    });
    s
}

/// (status, error code or the body).
async fn answer(res: reqwest::Response) -> (u16, Value) {
    let status = res.status().as_u16();
    let v: Value = res.json().await.unwrap_or(Value::Null);
    (status, v)
}

async fn offer(app: &TestApp, holder: &str, ticket: &str, to: &str) -> (u16, Value) {
    let path = format!("/v1/tickets/{ticket}/transfers");
    answer(
        app.post(&path, holder, &uuid(), json!({"to_buyer_id": to}))
            .await,
    )
    .await
}

async fn accept(app: &TestApp, recipient: &str, transfer: &str) -> (u16, Value) {
    let path = format!("/v1/transfers/{transfer}/accept");
    answer(app.post(&path, recipient, &uuid(), json!({})).await).await
}

/// The holder of `holder` gives the ticket to `to` (id, token), who accepts: the
/// ticket as its new holder sees it.
pub async fn give(app: &TestApp, holder: &str, ticket: &str, to: &(String, String)) -> Value {
    let (status, offered) = offer(app, holder, ticket, &to.0).await;
    assert_eq!(status, 201, "{offered}");
    let id = offered["transfer_id"].as_str().unwrap();
    let (status, accepted) = accept(app, &to.1, id).await;
    assert_eq!(status, 200, "{accepted}");
    accepted["ticket"].clone()
}

fn code(v: &Value) -> &str {
    v["error"].as_str().unwrap_or_default()
}

/// Who holds what, as both buyers see it: the state a refusal must leave alone.
async fn holdings(app: &TestApp, tokens: &[&str]) -> Vec<Vec<(Value, Value)>> {
    let mut out = Vec::new();
    for t in tokens {
        let mine = my_tickets(app, t).await;
        out.push(
            mine.iter()
                .map(|t| (t["ticket_id"].clone(), t["version"].clone()))
                .collect(),
        );
    }
    out
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transferred_ticket_admits_with_its_new_barcode_and_the_old_one_is_refused() {
    let app = spawn().await;
    let event = app.create_event(&transferable(spec(2, 10, 0, 4))).await;
    let (alice, tickets) = buy(&app, event, 2).await;
    let bob = app.buyer().await;
    let id = tickets[0]["ticket_id"].as_str().unwrap();
    let (status, offered) = offer(&app, &alice, id, &bob.0).await;
    assert_eq!((status, &offered["state"]), (201, &json!("offered")));
    let transfer = offered["transfer_id"].as_str().unwrap().to_string();
    // One open offer per ticket; the recipient sees it, the sender too.
    let (status, again) = offer(&app, &alice, id, &app.buyer().await.0).await;
    assert_eq!((status, code(&again)), (409, "transfer_pending"));
    let mine: Value = app
        .get("/v1/me/transfers", &bob.1)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(mine["incoming"][0]["transfer_id"], json!(transfer));
    let theirs: Value = app
        .get("/v1/me/transfers", &alice)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(theirs["outgoing"][0]["to_buyer_id"], json!(bob.0));

    let (status, accepted) = accept(&app, &bob.1, &transfer).await;
    assert_eq!(status, 200, "{accepted}");
    assert_eq!(accepted["transfer"]["state"], "accepted");
    let new = accepted["ticket"].clone();
    assert_eq!(
        (&new["ticket_id"], &new["version"]),
        (&json!(id), &json!(2))
    );
    assert_ne!(barcode(&new), barcode(&tickets[0]), "a new barcode");
    let (status, twice) = accept(&app, &bob.1, &transfer).await;
    assert_eq!((status, code(&twice)), (409, "transfer_not_open"));

    // The recipient lists it, the sender no longer; the sender cannot offer it again.
    let bobs = my_tickets(&app, &bob.1).await;
    assert_eq!(bobs.len(), 1);
    assert_eq!(bobs[0]["ticket_id"], json!(id));
    let alices = my_tickets(&app, &alice).await;
    assert_eq!(alices.len(), 1);
    let res = app.get(&format!("/v1/tickets/{id}"), &alice).await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let (status, gone) = offer(&app, &alice, id, &bob.0).await;
    assert_eq!((status, code(&gone)), (404, "ticket_not_found"));

    // At the door the old barcode is superseded and the new one admits.
    let (_, key) = gate(&app, event, "Main").await;
    let (status, body) = scan(&app, event, &key, &barcode(&tickets[0])).await;
    assert_eq!((status, code(&body)), (409, "barcode_revoked"));
    let (status, body) = scan(&app, event, &key, &barcode(&new)).await;
    assert_eq!(status, 200, "{body}");

    // The order's history says so (and so its events out).
    let orders: Value = app.get("/v1/me/orders", &alice).await.json().await.unwrap();
    let order = orders["orders"][0]["order_id"].as_str().unwrap();
    let history: Value = app
        .get(&format!("/v1/orders/{order}/history"), &app.operator_key)
        .await
        .json()
        .await
        .unwrap();
    let events: Vec<&str> = (history["lines"].as_array().unwrap().iter())
        .map(|l| l["event"].as_str().unwrap())
        .collect();
    assert_eq!(events.last(), Some(&"transferred"), "{history}");
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_transfers_answer_a_code_and_change_nothing() {
    let app = spawn().await;
    let event = app.create_event(&transferable(spec(2, 10, 0, 2))).await;
    let (alice_id, alice) = app.buyer().await;
    let tickets = buy_as(&app, event, 2, &alice).await;
    let carol = app.buyer().await;
    buy_as(&app, event, 2, &carol.1).await;
    let before = holdings(&app, &[&alice, &carol.1]).await;
    let id = tickets[0]["ticket_id"].as_str().unwrap();

    // Over the recipient's limit: she holds 2 of 2 already.
    let (status, offered) = offer(&app, &alice, id, &carol.0).await;
    assert_eq!(status, 201);
    let transfer = offered["transfer_id"].as_str().unwrap().to_string();
    let (status, over) = accept(&app, &carol.1, &transfer).await;
    assert_eq!((status, code(&over)), (422, "limit_exceeded"));
    assert_eq!(holdings(&app, &[&alice, &carol.1]).await, before);
    // The holder withdraws the offer; it is over for both.
    let path = format!("/v1/transfers/{transfer}");
    let cancel = |token: String| {
        let req = app.client.delete(app.url(&path)).bearer_auth(token);
        req.header("Idempotency-Key", uuid()).send()
    };
    let (status, other) = answer(cancel(carol.1.clone()).await.unwrap()).await;
    assert_eq!((status, code(&other)), (404, "transfer_not_found"));
    let (status, ended) = answer(cancel(alice.clone()).await.unwrap()).await;
    assert_eq!((status, &ended["state"]), (200, &json!("cancelled")));
    let (status, late) = accept(&app, &carol.1, &transfer).await;
    assert_eq!((status, code(&late)), (409, "transfer_not_open"));

    // Bad recipients and someone else's ticket.
    let (status, me) = offer(&app, &alice, id, &alice_id).await;
    assert_eq!((status, code(&me)), (422, "transfer_to_self"));
    let (status, body) = offer(&app, &alice, id, "not-a-buyer").await;
    assert_eq!((status, code(&body)), (422, "invalid_body"));
    let (status, theirs) = offer(&app, &carol.1, id, &carol.0).await;
    assert_eq!((status, code(&theirs)), (404, "ticket_not_found"));
    let unknown = format!("/v1/transfers/{}/accept", uuid());
    let (status, none) = answer(app.post(&unknown, &carol.1, &uuid(), json!({})).await).await;
    assert_eq!((status, code(&none)), (404, "transfer_not_found"));

    // An event that allows no transfers.
    let fixed = app.create_event(&spec(2, 10, 0, 2)).await;
    let (dave, his) = buy(&app, fixed, 1).await;
    let his_id = his[0]["ticket_id"].as_str().unwrap();
    let (status, no) = offer(&app, &dave, his_id, &carol.0).await;
    assert_eq!((status, code(&no)), (403, "transfers_not_allowed"));

    // Past the cutoff, an open offer can no longer be accepted nor a new one made.
    let erin = app.buyer().await;
    let (status, open) = offer(&app, &alice, id, &erin.0).await;
    assert_eq!(status, 201);
    app.clock.advance_secs(DOORS_S - CUTOFF_S as i64);
    let open = open["transfer_id"].as_str().unwrap();
    let (status, closed) = accept(&app, &erin.1, open).await;
    assert_eq!((status, code(&closed)), (403, "transfer_window_closed"));
    let other = tickets[1]["ticket_id"].as_str().unwrap();
    let (status, closed) = offer(&app, &alice, other, &erin.0).await;
    assert_eq!((status, code(&closed)), (403, "transfer_window_closed"));
    assert_eq!(holdings(&app, &[&alice, &carol.1]).await, before);
    assert!(my_tickets(&app, &erin.1).await.is_empty());
    app.stop().await;
}

/// A hold of `quantity` seats of section A by the buyer of `token`, admitted for it:
/// (status, error code).
pub async fn hold_of(
    app: &TestApp,
    event: boxoffice_domain::EventId,
    token: &str,
    quantity: u32,
) -> (u16, String) {
    let admission = app.admit(event, token).await;
    let body = json!({"best_available": {"section": "A", "quantity": quantity}});
    let (status, v) = answer(app.hold(event, &admission, body).await).await;
    (status, code(&v).to_string())
}

/// The hot store counts a given ticket as the ledger does, against its new holder: the
/// sender may hold again up to the limit, and the recipient is refused a hold that
/// would pass it at once, not first at checkout.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticket_given_away_frees_the_senders_limit_and_counts_against_the_recipient() {
    let app = spawn().await;
    let event = app.create_event(&transferable(spec(2, 10, 0, 2))).await;
    let (alice, tickets) = buy(&app, event, 2).await;
    assert_eq!(
        hold_of(&app, event, &alice, 1).await,
        (422, "limit_exceeded".into())
    );
    let bob = app.buyer().await;
    give(
        &app,
        &alice,
        tickets[0]["ticket_id"].as_str().unwrap(),
        &bob,
    )
    .await;
    // Alice owns one of two now, Bob the other.
    assert_eq!(
        hold_of(&app, event, &bob.1, 2).await,
        (422, "limit_exceeded".into())
    );
    assert_eq!(hold_of(&app, event, &alice, 1).await.0, 201);
    assert_eq!(hold_of(&app, event, &bob.1, 1).await.0, 201);
    // Both at the limit again, holds counted.
    assert_eq!(
        hold_of(&app, event, &alice, 1).await,
        (422, "limit_exceeded".into())
    );
    assert_eq!(
        hold_of(&app, event, &bob.1, 1).await,
        (422, "limit_exceeded".into())
    );
    app.stop().await;
}

/// A given ticket cancelled by the operator comes back off its holder's count, not off
/// the count of the buyer who paid for it and gave it away.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_ticket_cancelled_comes_off_its_holders_count() {
    let app = spawn().await;
    let event = app.create_event(&transferable(spec(2, 10, 0, 2))).await;
    let (alice, tickets) = buy(&app, event, 2).await;
    let bob = app.buyer().await;
    let id = tickets[0]["ticket_id"].as_str().unwrap();
    give(&app, &alice, id, &bob).await;
    let path = format!("/v1/tickets/{id}/cancel");
    let (status, cancelled) =
        answer(app.post(&path, &app.operator_key, &uuid(), json!({})).await).await;
    assert_eq!(status, 200, "{cancelled}");
    // Bob owns nothing now, Alice one of two.
    assert_eq!(
        hold_of(&app, event, &alice, 2).await,
        (422, "limit_exceeded".into())
    );
    assert_eq!(hold_of(&app, event, &bob.1, 2).await.0, 201);
    app.stop().await;
}
