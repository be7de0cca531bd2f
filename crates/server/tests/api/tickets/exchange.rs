//! The face-value exchange through HTTP: K listed tickets and N ≫ K concurrent buyers
//! make exactly K swaps, each seller refunded once in the provider's book, every old
//! barcode refused and every new one admitted, the audit clean; and every bad request
//! (above face value, a scanned, transferred-away or refunded ticket, one received by
//! transfer, one's own listing, after the cutoff, an event without an exchange) is a
//! coded 4xx that changes nothing.

use std::collections::{BTreeMap, HashSet};

use boxoffice_domain::exchange::ExchangeRules;
use boxoffice_domain::{EventId, EventSpec, Millis, Money, OrderId};
use boxoffice_engine::ports::{PaymentGateway, ProviderState};
use futures::future::join_all;
use serde_json::{Value, json};

use super::transfers::{give, hold_of, transferable};
use super::{barcode, buy, cancel_order_of, gate, my_tickets, scan};
use crate::common::{TestApp, spawn, spec, uuid};
use crate::payments::provider;

/// The test app's clock starts here (`common::spawn_with`).
const START: Millis = Millis(1_800_000_000_000);
/// Doors a day after the start; the exchange closes an hour before.
const DOORS_S: u64 = 86_400;
const CUTOFF_S: u64 = 3_600;
/// Every seat of `spec` costs this.
const FACE: i64 = 5_000;
/// 10 % plus 1.00 kept from each seller.
const PAYOUT: i64 = FACE - FACE / 10 - 100;

/// The event with the exchange open until an hour before the doors.
pub fn exchangeable(mut s: EventSpec) -> EventSpec {
    s.sale.exchange = Some(ExchangeRules {
        doors_at: START.plus_secs(DOORS_S),
        closes_before_doors_s: CUTOFF_S,
        fee_bps: 1_000,
        fee_fixed: Money(100),
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

async fn list(app: &TestApp, holder: &str, ticket: &str, price: i64) -> (u16, Value) {
    let path = format!("/v1/tickets/{ticket}/listings");
    answer(
        app.post(&path, holder, &uuid(), json!({"price": price}))
            .await,
    )
    .await
}

async fn purchase(app: &TestApp, admission: &str, listing: &str) -> (u16, Value) {
    let path = format!("/v1/listings/{listing}/purchase");
    let body = json!({"payment_method": "pm_card_visa"});
    answer(app.post(&path, admission, &uuid(), body).await).await
}

/// Every open listing of the event, page by page.
async fn open_listings(app: &TestApp, event: EventId) -> Vec<Value> {
    let mut all = Vec::new();
    let mut after = String::new();
    loop {
        let path = format!("/v1/events/{event}/listings?limit=7&after={after}");
        let (status, page) = answer(app.get(&path, "").await).await;
        assert_eq!(status, 200, "{page}");
        all.extend(page["listings"].as_array().unwrap().iter().cloned());
        match page["next_after"].as_str() {
            Some(next) => after = next.to_string(),
            None => return all,
        }
    }
}

/// The audit and the provider's book agree, and nothing is left in flight.
async fn audit_clean(app: &TestApp) {
    let audit = app.engine.audit().await.unwrap();
    assert!(audit.clean(), "{:?}", audit.violations);
    assert_eq!(audit.orders_in_flight, 0);
}

const LISTED: usize = 100;
const BUYERS: usize = 1_000;

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn k_listed_tickets_and_n_buyers_make_exactly_k_swaps_each_seller_refunded_once() {
    let app = spawn().await;
    // Twice the seats listed: a sold-out event admits nobody to its exchange's buyers.
    let event = app.create_event(&exchangeable(spec(10, 20, 0, 4))).await;
    // K sellers of one ticket each list it at face value.
    let mut sellers = Vec::new();
    for _ in 0..LISTED {
        let (token, tickets) = buy(&app, event, 1).await;
        let id = tickets[0]["ticket_id"].as_str().unwrap().to_string();
        let (status, listed) = list(&app, &token, &id, FACE).await;
        assert_eq!(status, 201, "{listed}");
        sellers.push((token, tickets[0].clone(), listed));
    }
    let listings = open_listings(&app, event).await;
    assert_eq!(listings.len(), LISTED, "every listing, across pages");
    assert!(
        listings.iter().all(|l| l["seat_index"].is_u64()),
        "the map can mark them"
    );
    // N ≫ K admitted buyers, each after one listing, all at once.
    let admitted = join_all((0..BUYERS).map(|_| app.admitted_buyer(event))).await;
    let racing = admitted.iter().enumerate().map(|(n, (_, admission))| {
        let listing = listings[n % LISTED]["listing_id"]
            .as_str()
            .unwrap()
            .to_string();
        let app = &app;
        async move { (n, purchase(app, admission, &listing).await) }
    });
    let mut winners = BTreeMap::new();
    for (n, (status, body)) in join_all(racing).await {
        match status {
            201 => {
                assert_eq!(body["state"], "done", "{body}");
                winners.insert(body["listing_id"].as_str().unwrap().to_string(), (n, body));
            }
            409 => assert_eq!(code(&body), "listing_not_open", "{body}"),
            _ => panic!("unexpected answer {status}: {body}"),
        }
    }
    assert_eq!(winners.len(), LISTED, "exactly one buyer per listing");
    assert!(open_listings(&app, event).await.is_empty());

    // Each seller refunded the payout once, in the provider's own book.
    let book = provider(&app);
    let refunds = book.partial_refunds().await.unwrap();
    assert_eq!(refunds.len(), LISTED, "{refunds:?}");
    assert!(refunds.iter().all(|r| r.amount == Money(PAYOUT)));
    let refunded: HashSet<OrderId> = refunds.iter().map(|r| r.order).collect();
    assert_eq!(refunded.len(), LISTED, "one refund per seller");
    let captured = (book.all_payments().await.unwrap().into_iter())
        .filter(|p| p.state == ProviderState::Captured)
        .count();
    assert_eq!(
        captured,
        2 * LISTED,
        "the sellers' orders and the buyers' charges"
    );

    // The door refuses each old barcode and admits each new one.
    let (_, key) = gate(&app, event, "Main").await;
    for (_, old, _) in &sellers {
        let (status, body) = scan(&app, event, &key, &barcode(old)).await;
        assert_eq!((status, code(&body)), (409, "barcode_revoked"));
    }
    for (n, swap) in winners.values() {
        let mine = my_tickets(&app, &admitted[*n].0).await;
        assert_eq!(mine.len(), 1);
        assert_eq!(mine[0]["ticket_id"], swap["ticket_id"]);
        assert_eq!(mine[0]["version"], 2);
        let (status, body) = scan(&app, event, &key, &barcode(&mine[0])).await;
        assert_eq!(status, 200, "{body}");
    }
    for (token, _, _) in &sellers {
        assert!(my_tickets(&app, token).await.is_empty());
    }
    audit_clean(&app).await;
    app.stop().await;
}

/// The admitted buyer of `token` buys `seats` seats of section A: their tickets.
async fn bought_with(
    app: &TestApp,
    event: EventId,
    admission: &str,
    token: &str,
    seats: u32,
) -> Vec<Value> {
    let body = json!({"best_available": {"section": "A", "quantity": seats}});
    let (status, hold) = answer(app.hold(event, admission, body).await).await;
    assert_eq!(status, 201, "{hold}");
    let hold = hold["hold_id"].as_str().unwrap();
    let (status, order) = answer(app.checkout(hold, token, "pm_card_visa").await).await;
    assert_eq!(status, 201, "{order}");
    my_tickets(app, token).await
}

/// What the state a refusal must leave alone looks like: the listings open and what
/// each buyer holds.
async fn state(app: &TestApp, event: EventId, tokens: &[&str]) -> (Vec<Value>, Vec<Vec<Value>>) {
    let mut held = Vec::new();
    for t in tokens {
        let mine = my_tickets(app, t).await;
        held.push(
            mine.iter()
                .map(|t| json!([t["ticket_id"], t["version"]]))
                .collect(),
        );
    }
    (open_listings(app, event).await, held)
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn bad_exchange_requests_answer_a_code_and_change_nothing() {
    let app = spawn().await;
    let event = app
        .create_event(&transferable(exchangeable(spec(2, 10, 0, 4))))
        .await;
    // Alice keeps her admission token: she tries to buy her own listing with it.
    let (_, alice) = app.buyer().await;
    let own = app.admit(event, &alice).await;
    let tickets = bought_with(&app, event, &own, &alice, 4).await;
    let id = |n: usize| tickets[n]["ticket_id"].as_str().unwrap().to_string();
    let (status, listed) = list(&app, &alice, &id(0), FACE).await;
    assert_eq!(status, 201, "{listed}");
    let listing = listed["listing_id"].as_str().unwrap().to_string();
    let bob = app.buyer().await;
    let before = state(&app, event, &[&alice, &bob.1]).await;

    // Above face value; negative; twice; someone else's ticket.
    let (status, body) = list(&app, &alice, &id(1), FACE + 1).await;
    assert_eq!((status, code(&body)), (422, "listing_above_face_value"));
    let (status, body) = list(&app, &alice, &id(1), -1).await;
    assert_eq!((status, code(&body)), (422, "invalid_body"));
    let (status, body) = list(&app, &alice, &id(0), FACE).await;
    assert_eq!((status, code(&body)), (409, "ticket_already_listed"));
    let (status, body) = list(&app, &bob.1, &id(1), FACE).await;
    assert_eq!((status, code(&body)), (404, "ticket_not_found"));
    // A scanned ticket.
    let (_, key) = gate(&app, event, "Main").await;
    let (status, _) = scan(&app, event, &key, &barcode(&tickets[2])).await;
    assert_eq!(status, 200);
    let (status, body) = list(&app, &alice, &id(2), FACE).await;
    assert_eq!((status, code(&body)), (409, "ticket_not_listable"));
    // Buying one's own listing.
    let (status, body) = purchase(&app, &own, &listing).await;
    assert_eq!((status, code(&body)), (422, "own_listing"));
    let (status, body) = purchase(&app, &own, &uuid()).await;
    assert_eq!((status, code(&body)), (404, "listing_not_found"));
    assert_eq!(state(&app, event, &[&alice, &bob.1]).await, before);

    // A ticket transferred away cannot be listed by its old holder.
    let carol = app.buyer().await;
    give(&app, &alice, &id(3), &carol).await;
    let (status, body) = list(&app, &alice, &id(3), FACE).await;
    assert_eq!((status, code(&body)), (404, "ticket_not_found"));
    // Nor by its new one: a sale would pay its seller through Alice's payment.
    let (status, body) = list(&app, &carol.1, &id(3), FACE).await;
    assert_eq!(
        (status, code(&body)),
        (409, "ticket_not_listable"),
        "{body}"
    );

    // A refunded order's tickets cannot be listed; its open listing is gone.
    let (dave, his) = buy(&app, event, 1).await;
    cancel_order_of(&app, &dave, event).await;
    let his = his[0]["ticket_id"].as_str().unwrap();
    let (status, body) = list(&app, &dave, his, FACE).await;
    assert_eq!((status, code(&body)), (409, "ticket_not_listable"));
    let open = open_listings(&app, event).await;
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0]["listing_id"], json!(listing));

    // An event without an exchange.
    let fixed = app.create_event(&spec(2, 10, 0, 2)).await;
    let (erin, hers) = buy(&app, fixed, 1).await;
    let hers = hers[0]["ticket_id"].as_str().unwrap();
    let (status, body) = list(&app, &erin, hers, FACE).await;
    assert_eq!((status, code(&body)), (403, "exchange_not_available"));

    // The seller withdraws; the listing cannot be bought or withdrawn again.
    let path = format!("/v1/listings/{listing}");
    let withdraw = |token: String| {
        let req = app.client.delete(app.url(&path)).bearer_auth(token);
        req.header("Idempotency-Key", uuid()).send()
    };
    let (status, body) = answer(withdraw(bob.1.clone()).await.unwrap()).await;
    assert_eq!((status, code(&body)), (404, "listing_not_found"));
    let (status, body) = answer(withdraw(alice.clone()).await.unwrap()).await;
    assert_eq!((status, &body["state"]), (200, &json!("withdrawn")));
    let (status, body) = answer(withdraw(alice.clone()).await.unwrap()).await;
    assert_eq!((status, code(&body)), (409, "listing_not_open"));
    let (frank, franks) = app.admitted_buyer(event).await;
    let (status, body) = purchase(&app, &franks, &listing).await;
    assert_eq!((status, code(&body)), (409, "listing_not_open"));
    assert!(my_tickets(&app, &frank).await.is_empty());
    // After the cutoff, neither listing nor buying (the clock only moves forward: the
    // waiting room's rate limits count on it).
    app.clock.set(START.plus_secs(DOORS_S - CUTOFF_S));
    let (status, body) = list(&app, &carol.1, &id(3), FACE).await;
    assert_eq!((status, code(&body)), (403, "exchange_closed"));
    let late = app.admit(event, &bob.1).await;
    let (status, body) = purchase(&app, &late, &listing).await;
    assert_eq!((status, code(&body)), (403, "exchange_closed"));
    assert!(my_tickets(&app, &bob.1).await.is_empty());
    audit_clean(&app).await;
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn offering_a_listed_ticket_for_transfer_left_its_listing_stale() {
    let app = spawn().await;
    let event = app
        .create_event(&transferable(exchangeable(spec(2, 10, 0, 4))))
        .await;
    let (alice, tickets) = buy(&app, event, 1).await;
    let id = tickets[0]["ticket_id"].as_str().unwrap().to_string();
    let (status, listed) = list(&app, &alice, &id, FACE).await;
    assert_eq!(status, 201, "{listed}");
    let bob = app.buyer().await;
    let before = state(&app, event, &[&alice, &bob.1]).await;
    let path = format!("/v1/tickets/{id}/transfers");
    let (status, body) = answer(
        app.post(&path, &alice, &uuid(), json!({"to_buyer_id": bob.0}))
            .await,
    )
    .await;
    assert_eq!((status, code(&body)), (409, "ticket_listed"), "{body}");
    assert_eq!(state(&app, event, &[&alice, &bob.1]).await, before);
    // Still listed, and still bought as listed.
    let (_, admission) = app.admitted_buyer(event).await;
    let listing = listed["listing_id"].as_str().unwrap();
    let (status, swap) = purchase(&app, &admission, listing).await;
    assert_eq!((status, &swap["state"]), (201, &json!("done")), "{swap}");
    audit_clean(&app).await;
    app.stop().await;
}

/// A ticket resold through the exchange counts against its buyer in the hot store, as
/// in the ledger: the seller may hold again up to the limit, and the buyer is refused a
/// hold that would pass it at once, not first at checkout.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_resold_ticket_counts_against_its_buyer_and_no_longer_its_seller() {
    let app = spawn().await;
    let event = app.create_event(&exchangeable(spec(2, 10, 0, 2))).await;
    let (alice, tickets) = buy(&app, event, 2).await;
    let id = tickets[0]["ticket_id"].as_str().unwrap();
    let (status, listed) = list(&app, &alice, id, FACE).await;
    assert_eq!(status, 201, "{listed}");
    let (bob, admission) = app.admitted_buyer(event).await;
    let (status, swap) = purchase(&app, &admission, listed["listing_id"].as_str().unwrap()).await;
    assert_eq!((status, &swap["state"]), (201, &json!("done")), "{swap}");
    // Bob owns one of two, Alice the other.
    let over = (422, "limit_exceeded".to_string());
    assert_eq!(hold_of(&app, event, &bob, 2).await, over);
    assert_eq!(hold_of(&app, event, &bob, 1).await.0, 201);
    assert_eq!(hold_of(&app, event, &alice, 2).await, over);
    assert_eq!(hold_of(&app, event, &alice, 1).await.0, 201);
    app.stop().await;
}
