//! Late payments for an event that honours them (`honour_late_payments`): fulfilled when
//! every seat of the order is still free, refunded when any was taken meanwhile. With
//! the setting off a late payment is always given back (see `payments_webhooks.rs`).

use super::*;
use crate::common::{TestApp, spawn, spawn_with, spec};
use boxoffice_domain::{EventId, EventSpec};
use boxoffice_engine::ports::{Inquiry, PaymentGateway, ProviderState};
use boxoffice_payment_fake::methods;
use boxoffice_testkit::harness::redis::{RedisPrefix, redis_url};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The ledger audit and its comparison with the hot store both find nothing.
async fn audit_clean(app: &TestApp) {
    let mut audit = app.engine.audit().await.unwrap();
    app.engine.audit_hot_store(&mut audit).await.unwrap();
    assert!(audit.clean(), "{:?}", audit.violations);
}

fn honouring() -> EventSpec {
    let mut s = spec(1, 10, 0, 4);
    s.sale.honour_late_payments = true;
    s
}

/// A buyer holding these named seats: (buyer token, hold id).
async fn holding(app: &TestApp, event: EventId, seats: &[&str]) -> (String, String) {
    let (token, admission) = app.admitted_buyer(event).await;
    let res = app
        .hold(event, &admission, json!({"seat_ids": seats}))
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let v: Value = res.json().await.unwrap();
    (token, v["hold_id"].as_str().unwrap().to_string())
}

/// Checks out with `method`, then lets the buyer linger past the pin (TTL 600 s, grace
/// 120 s) until the expiry worker has put the seats back.
async fn checkout_then_linger(
    app: &TestApp,
    event: EventId,
    seats: &[&str],
    method: &str,
) -> (String, boxoffice_domain::OrderId) {
    let (token, hold) = holding(app, event, seats).await;
    let (status, body) = checkout(app, &token, &hold, method).await;
    assert_eq!(status, 202, "{body}");
    app.clock.advance_secs(721);
    app.engine.expiry_step().await.unwrap();
    assert_eq!(app.counts(event).await["free"], json!(10));
    (token, order_id(&body))
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_capture_for_an_event_that_honours_it_is_confirmed_when_the_seats_are_free() {
    confirmed_when_free(spawn().await).await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_redis_hot_store_a_honoured_late_capture_sells_the_seats_there_too() {
    let redis = RedisPrefix::new(&redis_url());
    let app = spawn_with(|c| {
        c.hot = redis.url.parse().expect("a redis:// URL");
        c.redis_prefix = redis.prefix.clone();
    })
    .await;
    confirmed_when_free(app).await;
}

async fn confirmed_when_free(app: TestApp) {
    let fake = provider(&app);
    let event = app.create_event(&honouring()).await;
    let (token, id) =
        checkout_then_linger(&app, event, &["A-1-3", "A-1-4"], methods::BANK_REDIRECT).await;
    assert_eq!(
        fake.complete_action(id, true).await.unwrap(),
        ProviderState::Captured
    );

    deliver_all(&app, &fake).await;
    let done = order(&app, &token, id).await;
    assert_eq!(done["status"], "confirmed", "{done}");
    assert_eq!(done["payment"], "charged");
    assert_eq!(done["tickets"].as_array().unwrap().len(), 2);
    assert_eq!(
        fake.inquire(&Inquiry::by_order(id))
            .await
            .unwrap()
            .unwrap()
            .state,
        ProviderState::Captured
    );
    let counts = app.counts(event).await;
    assert_eq!((&counts["sold"], &counts["held"]), (&json!(2), &json!(0)));
    audit_clean(&app).await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_3ds_approval_found_by_the_recovery_sweep_is_captured_when_the_seats_are_free() {
    let app = spawn().await;
    let fake = provider(&app);
    let event = app.create_event(&honouring()).await;
    let (token, id) = checkout_then_linger(&app, event, &["A-1-5"], methods::THREE_D_SECURE).await;
    assert_eq!(
        fake.complete_action(id, true).await.unwrap(),
        ProviderState::Authorized
    );

    // No webhook: the sweep asks the provider and finds the approval.
    app.engine.recovery_step().await.unwrap();
    let done = order(&app, &token, id).await;
    assert_eq!(done["status"], "confirmed", "{done}");
    assert_eq!(
        fake.inquire(&Inquiry::by_order(id))
            .await
            .unwrap()
            .unwrap()
            .state,
        ProviderState::Captured
    );
    assert_eq!(app.counts(event).await["sold"], json!(1));
    audit_clean(&app).await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_capture_is_refunded_when_another_buyer_took_one_of_its_seats() {
    let app = spawn().await;
    let fake = provider(&app);
    let event = app.create_event(&honouring()).await;
    let (token, id) =
        checkout_then_linger(&app, event, &["A-1-3", "A-1-4"], methods::BANK_REDIRECT).await;
    holding(&app, event, &["A-1-4"]).await;
    fake.complete_action(id, true).await.unwrap();

    deliver_all(&app, &fake).await;
    let late = order(&app, &token, id).await;
    assert_eq!(late["status"], "refunded", "{late}");
    assert_eq!(late["payment"], "returned");
    assert!(late["tickets"].as_array().unwrap().is_empty());
    assert_eq!(
        fake.inquire(&Inquiry::by_order(id))
            .await
            .unwrap()
            .unwrap()
            .state,
        ProviderState::Refunded
    );
    // All or none: the free seat stays free, the other buyer keeps theirs.
    let counts = app.counts(event).await;
    assert_eq!(
        (&counts["free"], &counts["held"], &counts["sold"]),
        (&json!(9), &json!(1), &json!(0))
    );
    audit_clean(&app).await;
}
