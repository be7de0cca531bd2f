//! Exchange purchases paid with a card that needs 3-D Secure, through HTTP: the
//! purchase answers 202 with where to send the buyer and keeps the listing for them;
//! the provider's webhook finishes the swap once they approve (the buyer charged once,
//! the seller refunded once, the ticket theirs at a new version). A decline at the bank,
//! or a buyer who never comes back, undoes it: nothing charged, the seller not
//! refunded, the listing open again and bought as listed by the next buyer.

use boxoffice_domain::{EventId, Money, OrderId};
use boxoffice_engine::ports::{Inquiry, PaymentGateway, ProviderState};
use boxoffice_payment_fake::{CONFIRM_PATH, FakeGateway, methods};
use serde_json::{Value, json};

use super::exchange::exchangeable;
use super::{barcode, buy, gate, my_tickets, scan};
use crate::common::{TestApp, spawn, spec, uuid};
use crate::payments::{deliver_all, provider};

/// Every seat of `spec` costs this; 10 % plus 1.00 is kept from the seller.
const FACE: i64 = 5_000;
const PAYOUT: i64 = FACE - FACE / 10 - 100;

async fn answer(res: reqwest::Response) -> (u16, Value) {
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

async fn purchase(app: &TestApp, admission: &str, listing: &str, card: &str) -> (u16, Value) {
    let path = format!("/v1/listings/{listing}/purchase");
    let body = json!({ "payment_method": card });
    answer(app.post(&path, admission, &uuid(), body).await).await
}

async fn open_listings(app: &TestApp, event: EventId) -> Vec<String> {
    let path = format!("/v1/events/{event}/listings");
    let (status, page) = answer(app.get(&path, "").await).await;
    assert_eq!(status, 200, "{page}");
    (page["listings"].as_array().unwrap().iter())
        .map(|l| l["listing_id"].as_str().unwrap().to_string())
        .collect()
}

/// A seller with one ticket listed at face value: (seller token, their ticket, listing).
async fn listed(app: &TestApp, event: EventId) -> (String, Value, String) {
    let (seller, tickets) = buy(app, event, 1).await;
    let path = format!(
        "/v1/tickets/{}/listings",
        tickets[0]["ticket_id"].as_str().unwrap()
    );
    let (status, body) = answer(
        app.post(&path, &seller, &uuid(), json!({"price": FACE}))
            .await,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let listing = body["listing_id"].as_str().unwrap().to_string();
    (seller, tickets[0].clone(), listing)
}

/// A buyer takes `listing` with the 3-D Secure card: the answer is 202, the swap
/// `reserved`, and the buyer is sent to their bank. Returns (buyer token, the charge's
/// key at the provider, found from the bank page's address as the buyer's browser has it).
async fn at_the_bank(
    app: &TestApp,
    fake: &FakeGateway,
    event: EventId,
    listing: &str,
) -> (String, OrderId) {
    let (buyer, admission) = app.admitted_buyer(event).await;
    let (status, swap) = purchase(app, &admission, listing, methods::THREE_D_SECURE).await;
    assert_eq!(status, 202, "{swap}");
    assert_eq!(swap["state"], "reserved", "{swap}");
    assert_eq!(swap["next_action"]["type"], "redirect_to_url", "{swap}");
    let url = swap["next_action"]["url"].as_str().unwrap();
    let reference = url
        .strip_prefix(CONFIRM_PATH)
        .expect("the stand-in bank's page");
    let record = (fake
        .record_by_reference(reference.to_string())
        .await
        .unwrap())
    .expect("the provider has the payment");
    assert_eq!(record.state, ProviderState::RequiresAction);
    assert_eq!(record.amount, Money(FACE));
    (buyer, record.order)
}

/// While the buyer is at their bank, nothing has moved: the listing is theirs (another
/// buyer is refused), no seller refunded, no ticket given.
async fn nothing_moved_yet(app: &TestApp, event: EventId, listing: &str, buyer: &str) {
    assert!(open_listings(app, event).await.is_empty());
    let (_, other) = app.admitted_buyer(event).await;
    let (status, body) = purchase(app, &other, listing, methods::VISA).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (409, Some("listing_not_open"))
    );
    assert!(provider(app).partial_refunds().await.unwrap().is_empty());
    assert!(my_tickets(app, buyer).await.is_empty());
}

async fn audit_clean(app: &TestApp) {
    let audit = app.engine.audit().await.unwrap();
    assert!(audit.clean(), "{:?}", audit.violations);
    assert_eq!(audit.orders_in_flight, 0);
}

/// The swap was undone: the charge holds nothing, the seller was not refunded and
/// keeps the ticket as it was, and the listing is open again, bought as listed by the
/// next buyer (who is the only one the seller is refunded for).
async fn undone(
    app: &TestApp,
    event: EventId,
    seller: &str,
    ticket: &Value,
    listing: &str,
    buyer: &str,
) {
    let fake = provider(app);
    assert!(
        fake.partial_refunds().await.unwrap().is_empty(),
        "the seller was not refunded"
    );
    assert!(my_tickets(app, buyer).await.is_empty());
    let mine = my_tickets(app, seller).await;
    assert_eq!(mine.len(), 1);
    assert_eq!(
        (&mine[0]["ticket_id"], &mine[0]["version"]),
        (&ticket["ticket_id"], &json!(1))
    );
    assert_eq!(open_listings(app, event).await, vec![listing.to_string()]);
    let (next, admission) = app.admitted_buyer(event).await;
    let (status, swap) = purchase(app, &admission, listing, methods::VISA).await;
    assert_eq!((status, &swap["state"]), (201, &json!("done")), "{swap}");
    assert_eq!(my_tickets(app, &next).await.len(), 1);
    let refunds = fake.partial_refunds().await.unwrap();
    assert_eq!(refunds.len(), 1, "{refunds:?}");
    assert_eq!(refunds[0].amount, Money(PAYOUT));
    audit_clean(app).await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 120)]
async fn a_3ds_purchase_waits_for_the_bank_and_the_webhook_finishes_the_swap_once() {
    let app = spawn().await;
    let fake = provider(&app);
    let event = app.create_event(&exchangeable(spec(2, 10, 0, 4))).await;
    let (seller, old, listing) = listed(&app, event).await;
    let (buyer, charge) = at_the_bank(&app, &fake, event, &listing).await;
    nothing_moved_yet(&app, event, &listing, &buyer).await;

    assert_eq!(
        fake.complete_action(charge, true).await.unwrap(),
        ProviderState::Authorized
    );
    let delivered = deliver_all(&app, &fake).await;
    assert!(!delivered.is_empty());
    let mine = my_tickets(&app, &buyer).await;
    assert_eq!(mine.len(), 1, "the ticket is the buyer's");
    assert_eq!(
        (&mine[0]["ticket_id"], &mine[0]["version"]),
        (&old["ticket_id"], &json!(2))
    );
    assert!(my_tickets(&app, &seller).await.is_empty());
    // Every webhook again, each signed anew: no money moves a second time.
    let mut of_the_swap = 0;
    for w in &delivered {
        let (status, body) = crate::payments::post_webhook(&app, &fake, &w.payload).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["duplicate"], true, "{body}");
        if body["swap_id"].is_string() {
            assert_eq!(body["swap_state"], "done", "{body}");
            of_the_swap += 1;
        }
    }
    assert!(
        of_the_swap >= 2,
        "the bank's answer and the capture name the swap"
    );
    let paid = fake
        .inquire(&Inquiry::by_order(charge))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (paid.state, paid.amount),
        (ProviderState::Captured, Money(FACE))
    );
    let refunds = fake.partial_refunds().await.unwrap();
    assert_eq!(refunds.len(), 1, "the seller refunded once: {refunds:?}");
    assert_eq!(refunds[0].amount, Money(PAYOUT));
    let (_, key) = gate(&app, event, "Main").await;
    let (status, body) = scan(&app, event, &key, &barcode(&old)).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (409, Some("barcode_revoked"))
    );
    let (status, body) = scan(&app, event, &key, &barcode(&mine[0])).await;
    assert_eq!(status, 200, "{body}");
    assert!(open_listings(&app, event).await.is_empty());
    audit_clean(&app).await;
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 120)]
async fn a_3ds_declined_at_the_bank_undoes_the_swap_and_opens_the_listing_again() {
    let app = spawn().await;
    let fake = provider(&app);
    let event = app.create_event(&exchangeable(spec(2, 10, 0, 4))).await;
    let (seller, ticket, listing) = listed(&app, event).await;
    let (buyer, charge) = at_the_bank(&app, &fake, event, &listing).await;
    nothing_moved_yet(&app, event, &listing, &buyer).await;

    assert_eq!(
        fake.complete_action(charge, false).await.unwrap(),
        ProviderState::Declined
    );
    deliver_all(&app, &fake).await;
    let p = fake
        .inquire(&Inquiry::by_order(charge))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(p.state, ProviderState::Declined);
    undone(&app, event, &seller, &ticket, &listing, &buyer).await;
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 120)]
async fn a_3ds_buyer_who_never_comes_back_is_voided_after_the_grace_and_the_listing_reopens() {
    let app = spawn().await;
    let fake = provider(&app);
    let event = app.create_event(&exchangeable(spec(2, 10, 0, 4))).await;
    let (seller, ticket, listing) = listed(&app, event).await;
    let (buyer, charge) = at_the_bank(&app, &fake, event, &listing).await;
    // Within the grace (the event's payment_grace_s, 120 s) the sweep leaves it alone.
    app.clock.advance_secs(60);
    app.engine.exchange_step().await.unwrap();
    nothing_moved_yet(&app, event, &listing, &buyer).await;
    let p = fake
        .inquire(&Inquiry::by_order(charge))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(p.state, ProviderState::RequiresAction);

    app.clock.advance_secs(61);
    app.engine.exchange_step().await.unwrap();
    let p = fake
        .inquire(&Inquiry::by_order(charge))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        p.state,
        ProviderState::Voided,
        "the payment cancelled first"
    );
    // The bank's approval can come no more; the webhooks change nothing.
    assert!(fake.complete_action(charge, true).await.is_err());
    deliver_all(&app, &fake).await;
    undone(&app, event, &seller, &ticket, &listing, &buyer).await;
    app.stop().await;
}
