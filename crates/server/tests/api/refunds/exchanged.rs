//! Undoing a sale after one of its tickets was sold on through the exchange: the
//! operator's cancellation of the seller's order leaves the swap buyer's ticket (and its
//! seat) alone and refunds only what the exchange had not, and an event's cancellation
//! refunds each swap buyer their charge once and each seller only the rest, as the
//! provider's own book shows.

use std::collections::HashMap;

use boxoffice_domain::exchange::ExchangeRules;
use boxoffice_domain::{EventId, EventSpec, Millis, Money, OrderId};
use boxoffice_engine::ports::{PaymentGateway, ProviderState};
use boxoffice_payment_fake::FakeGateway;
use serde_json::{Value, json};

use super::{audit_clean, cancellation_finished, order_of, refunds_made, selling, undo};
use crate::common::{TestApp, spec, uuid};
use crate::tickets::{barcode, buy, cancel_order_of, gate, my_tickets, scan};

/// The test app's clock starts here.
const START: Millis = Millis(1_800_000_000_000);
/// Every seat of `spec` costs this; the exchange keeps 10 % plus 1.00 of a resale.
const FACE: i64 = 5_000;
const PAYOUT: i64 = FACE - FACE / 10 - 100;

fn exchangeable(mut s: EventSpec) -> EventSpec {
    s.sale.exchange = Some(ExchangeRules {
        doors_at: START.plus_secs(86_400),
        closes_before_doors_s: 3_600,
        fee_bps: 1_000,
        fee_fixed: Money(100),
    });
    s
}

/// A seller of two seats whose first ticket an admitted buyer took on the exchange:
/// (seller token, seller tickets, buyer token, the swap as answered).
async fn one_sold_on(app: &TestApp, event: EventId) -> (String, Vec<Value>, String, Value) {
    let (seller, tickets) = buy(app, event, 2).await;
    let ticket = tickets[0]["ticket_id"].as_str().unwrap();
    let res = app
        .post(
            &format!("/v1/tickets/{ticket}/listings"),
            &seller,
            &uuid(),
            json!({"price": FACE}),
        )
        .await;
    assert_eq!(res.status().as_u16(), 201);
    let listed: Value = res.json().await.unwrap();
    let (buyer, admission) = app.admitted_buyer(event).await;
    let listing = listed["listing_id"].as_str().unwrap();
    let res = app
        .post(
            &format!("/v1/listings/{listing}/purchase"),
            &admission,
            &uuid(),
            json!({"payment_method": "pm_card_visa"}),
        )
        .await;
    assert_eq!(res.status().as_u16(), 201);
    let swap: Value = res.json().await.unwrap();
    assert_eq!(swap["state"], "done", "{swap}");
    (seller, tickets, buyer, swap)
}

/// What the provider's book says it gave back of each payment: its partial refunds,
/// plus the whole amount once more when it was refunded in one call (a payment whose
/// parts reach its amount is refunded by them alone).
async fn given_back(book: &FakeGateway) -> HashMap<OrderId, (i64, i64, ProviderState)> {
    let mut parts: HashMap<OrderId, i64> = HashMap::new();
    for r in book.partial_refunds().await.unwrap() {
        *parts.entry(r.order).or_default() += r.amount.0;
    }
    let mut out = HashMap::new();
    for p in book.all_payments().await.unwrap() {
        let part = parts.get(&p.order).copied().unwrap_or(0);
        let whole = p.state == ProviderState::Refunded && part < p.amount.0;
        let back = part + if whole { p.amount.0 } else { 0 };
        out.insert(p.order, (p.amount.0, back, p.state));
    }
    out
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn cancelling_a_sellers_order_revoked_the_swap_buyers_ticket_and_refunded_the_payout_twice() {
    let (app, book, event) = selling(&exchangeable(spec(2, 10, 0, 4))).await;
    let (seller, tickets, buyer, swap) = one_sold_on(&app, event).await;
    let order: OrderId = cancel_order_of(&app, &seller, event).await.parse().unwrap();

    // The swap buyer keeps their ticket; the seller's other ticket is revoked.
    let theirs = my_tickets(&app, &buyer).await;
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    assert_eq!(
        (&theirs[0]["ticket_id"], theirs[0]["status"].as_str()),
        (&swap["ticket_id"], Some("valid"))
    );
    let left = my_tickets(&app, &seller).await;
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["status"], "revoked");
    let (_, key) = gate(&app, event, "Main").await;
    let (status, body) = scan(&app, event, &key, &barcode(&tickets[1])).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (409, Some("ticket_revoked"))
    );
    let (status, body) = scan(&app, event, &key, &barcode(&theirs[0])).await;
    assert_eq!(status, 200, "{body}");
    // Its seat is still sold, to the swap buyer; the seller's other seat is free.
    let sold = app.engine.ports().ledger.sold_seats(event).await.unwrap();
    assert_eq!(sold.len(), 1, "{sold:?}");

    // The seller got back exactly what they paid: the payout, then the rest.
    let back = given_back(&book).await;
    let (amount, refunded, state) = back[&order];
    assert_eq!(amount, 2 * FACE);
    assert_eq!(refunded, 2 * FACE, "the payout and the rest, nothing more");
    assert_eq!(state, ProviderState::Refunded);
    let rest: Vec<_> = (book.partial_refunds().await.unwrap().into_iter())
        .filter(|r| r.order == order)
        .map(|r| r.amount.0)
        .collect();
    assert_eq!(rest, vec![PAYOUT, 2 * FACE - PAYOUT]);
    // The swap buyer's charge stands.
    let charges: Vec<_> = (back.iter())
        .filter(|(id, _)| **id != order)
        .filter(|(_, (amount, _, _))| *amount == FACE)
        .collect();
    assert_eq!(charges.len(), 1, "{back:?}");
    assert_eq!(charges[0].1.2, ProviderState::Captured);
    audit_clean(&app).await;
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn an_event_cancelled_after_a_swap_refunds_its_buyer_once_and_its_seller_only_the_rest() {
    let (app, book, event) = selling(&exchangeable(spec(2, 10, 0, 4))).await;
    let (seller, _, buyer, _) = one_sold_on(&app, event).await;
    let (order, _) = order_of(&app, &seller).await;
    let (status, job) = undo(
        &app,
        &format!("/v1/events/{event}/cancel"),
        &app.operator_key,
    )
    .await;
    assert_eq!(status, 202, "{job}");
    cancellation_finished(&app, event).await;
    // Steps and sweeps after the end change nothing.
    for _ in 0..3 {
        app.engine.event_cancellation_step().await.unwrap();
        app.engine.exchange_sweep(Millis(i64::MAX)).await.unwrap();
    }

    let back = given_back(&book).await;
    let (amount, refunded, state) = back[&order];
    assert_eq!(
        (amount, refunded, state),
        (2 * FACE, 2 * FACE, ProviderState::Refunded)
    );
    let charges: Vec<_> = (back.iter())
        .filter(|(id, _)| **id != order)
        .map(|(id, v)| (*id, *v))
        .collect();
    assert_eq!(charges.len(), 1, "{back:?}");
    let (charge, (amount, refunded, state)) = charges[0];
    assert_eq!(
        (amount, refunded, state),
        (FACE, FACE, ProviderState::Refunded)
    );
    let made = refunds_made(&book).await;
    assert_eq!(made.get(&charge), Some(&1), "the swap buyer refunded once");
    // Their ticket is revoked with the rest; no seat is left sold.
    let theirs = my_tickets(&app, &buyer).await;
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    assert_eq!(theirs[0]["status"], "revoked");
    let ledger = &app.engine.ports().ledger;
    assert!(ledger.sold_seats(event).await.unwrap().is_empty());
    audit_clean(&app).await;
    app.stop().await;
}
