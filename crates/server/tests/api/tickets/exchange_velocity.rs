//! Exchange purchases under the event's payment velocity limits, through HTTP: a buyer
//! past a limit is refused before the provider hears of the purchase and nothing
//! changes; a declined exchange payment counts toward the limits and the lockout as a
//! declined checkout does, once, whether the provider declined at once, by a 3-D Secure
//! webhook delivered many times or as the sweep found it; and a buyer locked out by
//! declines anywhere is refused both the exchange and checkout.

use boxoffice_domain::velocity::VelocityRules;
use boxoffice_domain::{EventId, Millis, OrderId};
use boxoffice_engine::ports::ProviderState;
use boxoffice_payment_fake::{CONFIRM_PATH, FakeGateway, methods};
use serde_json::{Value, json};

use super::buy;
use super::exchange::exchangeable;
use crate::common::{TestApp, spawn, spec, uuid};
use crate::payments::provider;
use crate::velocity::{
    attempts_per_buyer, deliver_each, hold_one, lockout_after, provider_calls, retry_after,
};

/// Every seat of `spec` costs this.
const FACE: i64 = 5_000;

async fn answer(res: reqwest::Response) -> (u16, Value) {
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// An event with the exchange open and these velocity rules.
async fn event_with(app: &TestApp, rules: VelocityRules) -> EventId {
    let mut s = exchangeable(spec(4, 10, 0, 4));
    s.sale.velocity = Some(rules);
    app.create_event(&s).await
}

/// A fresh app with such an event, a seller's ticket listed on it: (app, event, listing).
async fn listed_under(rules: VelocityRules) -> (TestApp, EventId, String) {
    let app = spawn().await;
    let event = event_with(&app, rules).await;
    let listing = listed(&app, event).await;
    (app, event, listing)
}

/// A seller's ticket listed at face value: the listing's id.
async fn listed(app: &TestApp, event: EventId) -> String {
    let (seller, tickets) = buy(app, event, 1).await;
    let ticket = tickets[0]["ticket_id"].as_str().unwrap();
    let path = format!("/v1/tickets/{ticket}/listings");
    let body = json!({"price": FACE});
    let (status, body) = answer(app.post(&path, &seller, &uuid(), body).await).await;
    assert_eq!(status, 201, "{body}");
    body["listing_id"].as_str().unwrap().to_string()
}

async fn purchase(app: &TestApp, admission: &str, listing: &str, card: &str) -> (u16, Value) {
    let path = format!("/v1/listings/{listing}/purchase");
    let body = json!({ "payment_method": card });
    answer(app.post(&path, admission, &uuid(), body).await).await
}

/// Whether the listing is open (to anyone) now.
async fn open(app: &TestApp, event: EventId, listing: &str) -> bool {
    let (status, page) = answer(app.get(&format!("/v1/events/{event}/listings"), "").await).await;
    assert_eq!(status, 200, "{page}");
    (page["listings"].as_array().unwrap().iter()).any(|l| l["listing_id"] == listing)
}

/// A purchase with the 3-D Secure card, answered 202 with the bank's page; the buyer
/// then declines there. Returns the charge's key at the provider.
async fn declined_at_the_bank(
    app: &TestApp,
    fake: &FakeGateway,
    admission: &str,
    listing: &str,
) -> OrderId {
    let (status, swap) = purchase(app, admission, listing, methods::THREE_D_SECURE).await;
    assert_eq!(
        (status, &swap["state"]),
        (202, &json!("reserved")),
        "{swap}"
    );
    let url = swap["next_action"]["url"].as_str().unwrap();
    let reference = url.strip_prefix(CONFIRM_PATH).expect("the bank's page");
    let record = (fake.record_by_reference(reference.to_string()).await)
        .unwrap()
        .expect("the provider has the payment");
    let declined = fake.complete_action(record.order, false).await.unwrap();
    assert_eq!(declined, ProviderState::Declined);
    record.order
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 120)]
async fn an_exchange_purchase_is_refused_past_the_velocity_limit_before_the_provider_hears_of_it() {
    let (app, event, listing) = listed_under(attempts_per_buyer(2)).await;
    let (_, admission) = app.admitted_buyer(event).await;
    for card in 0..2 {
        let method = format!("{}{card}", methods::DECLINED_PREFIX);
        let (status, body) = purchase(&app, &admission, &listing, &method).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (402, Some("payment_declined"))
        );
    }
    // The seller's payment and the two declined cards.
    assert_eq!(provider_calls(&app).await, (3, 2));

    let path = format!("/v1/listings/{listing}/purchase");
    let body = json!({"payment_method": methods::VISA});
    let res = app.post(&path, &admission, &uuid(), body).await;
    assert_eq!(res.status().as_u16(), 429);
    let wait = retry_after(&res);
    assert!((1..=60).contains(&wait), "Retry-After {wait}");
    let (_, body) = answer(res).await;
    assert_eq!(body["error"], "payment_velocity", "{body}");
    // Nothing changed: the provider heard nothing more and the listing is open.
    assert_eq!(provider_calls(&app).await, (3, 2));
    assert!(open(&app, event, &listing).await);

    // Once the window has moved on, the buyer pays.
    app.clock.advance_secs(wait as i64);
    let (status, swap) = purchase(&app, &admission, &listing, methods::VISA).await;
    assert_eq!((status, &swap["state"]), (201, &json!("done")), "{swap}");
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 120)]
async fn a_declined_exchange_payment_after_3ds_counts_toward_velocity_once() {
    let (app, event, listing) = listed_under(lockout_after(2)).await;
    let fake = provider(&app);
    let (_, admission) = app.admitted_buyer(event).await;

    // Declined at the bank; the webhooks arrive three times each at once, and the sweep
    // looks too: one decline.
    declined_at_the_bank(&app, &fake, &admission, &listing).await;
    deliver_each(&app, &fake, 3).await;
    app.engine.exchange_sweep(Millis(i64::MAX)).await.unwrap();
    assert!(open(&app, event, &listing).await, "the swap was undone");

    // Not locked out after one: the buyer tries again, declined at the bank again, and
    // this time the sweep finds the decline before any webhook is delivered.
    declined_at_the_bank(&app, &fake, &admission, &listing).await;
    app.engine.exchange_sweep(Millis(i64::MAX)).await.unwrap();
    deliver_each(&app, &fake, 2).await;
    assert!(open(&app, event, &listing).await, "the swap was undone");

    // Two declines: locked out, before the provider hears of the purchase.
    let before = provider_calls(&app).await;
    let (status, body) = purchase(&app, &admission, &listing, methods::VISA).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("buyer_locked"))
    );
    assert_eq!(provider_calls(&app).await, before);
    assert!(open(&app, event, &listing).await);
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 120)]
async fn declines_at_checkout_and_on_the_exchange_lock_the_buyer_out_of_both() {
    let (app, event, listing) = listed_under(lockout_after(2)).await;
    let (token, admission) = app.admitted_buyer(event).await;
    let hold = hold_one(&app, event, &admission).await;
    let res = app.checkout(&hold, &token, methods::DECLINED).await;
    assert_eq!(res.status().as_u16(), 402);
    let (status, body) = purchase(&app, &admission, &listing, methods::DECLINED).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (402, Some("payment_declined"))
    );

    let before = provider_calls(&app).await;
    let (status, body) = purchase(&app, &admission, &listing, methods::VISA).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("buyer_locked"))
    );
    let hold = hold_one(&app, event, &admission).await;
    let (status, body) = answer(app.checkout(&hold, &token, methods::VISA).await).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("buyer_locked"))
    );
    assert_eq!(provider_calls(&app).await, before);
    assert!(open(&app, event, &listing).await);
    app.stop().await;
}

/// A purchase the provider refuses outright (`PaymentError::Rejected`, a hard decline:
/// an error for an answer, no payment on its book) is a decline as it is at checkout:
/// answered `payment_declined`, the listing open again at once, and counted toward the
/// lockout together with the checkout's.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 120)]
async fn an_exchange_purchase_the_provider_rejects_counts_as_a_decline_as_at_checkout() {
    let app = spawn().await;
    let event = event_with(&app, lockout_after(2)).await;
    let listing = listed(&app, event).await;
    let (token, admission) = app.admitted_buyer(event).await;
    let body = json!({"best_available": {"section": "A", "quantity": 1}});
    let (status, held) = answer(app.hold(event, &admission, body).await).await;
    assert_eq!(status, 201, "{held}");
    let hold = held["hold_id"].as_str().unwrap();
    let (status, body) = answer(app.checkout(hold, &token, methods::REFUSED).await).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (402, Some("payment_declined")),
        "{body}"
    );
    let (status, body) = purchase(&app, &admission, &listing, methods::REFUSED).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (402, Some("payment_declined")),
        "{body}"
    );
    assert!(
        open(&app, event, &listing).await,
        "the swap was undone at once"
    );

    // Two declines, one of each: locked out of the exchange before the provider hears.
    let before = provider_calls(&app).await;
    let (status, body) = purchase(&app, &admission, &listing, methods::VISA).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("buyer_locked")),
        "{body}"
    );
    assert_eq!(provider_calls(&app).await, before);
    assert!(open(&app, event, &listing).await);
    app.stop().await;
}
