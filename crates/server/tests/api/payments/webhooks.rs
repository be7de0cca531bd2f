//! Asynchronous payments and their webhooks: 3-D Secure completed by the webhook, the
//! same webhook five times, a duplicate recognised by its event id, out-of-order and
//! forged webhooks, and late payments for a hold that already ended (refunded, or
//! voided when only authorized).

use super::*;
use crate::common::{spawn, spec};
use boxoffice_engine::ports::{Clock, Inquiry, PaymentGateway, ProviderState};
use boxoffice_payment_fake::methods;
use futures::future::join_all;
use serde_json::json;

/// A buyer's one-seat checkout waiting for them to finish 3-D Secure at their bank: the
/// app, its provider, the event, the buyer's token and the order.
async fn pending_3ds() -> (TestApp, FakeGateway, EventId, String, OrderId) {
    let app = spawn().await;
    let fake = provider(&app);
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let (token, hold) = holder(&app, event).await;
    let (_, body) = checkout(&app, &token, &hold, methods::THREE_D_SECURE).await;
    let id = order_id(&body);
    (app, fake, event, token, id)
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_3ds_checkout_answers_202_with_a_redirect_and_the_webhook_confirms_it() {
    let app = spawn().await;
    let fake = provider(&app);
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let (token, hold) = holder(&app, event).await;
    let (status, body) = checkout(&app, &token, &hold, methods::THREE_D_SECURE).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["status"], "payment_pending");
    assert_eq!(body["next_action"]["type"], "redirect_to_url");
    let id = order_id(&body);
    let waiting = order(&app, &token, id).await;
    assert_eq!(
        (waiting["status"].as_str(), waiting["payment"].as_str()),
        (Some("pending_payment"), Some("none"))
    );
    assert!(waiting["message"].as_str().unwrap().contains("waiting"));

    fake.complete_action(id, true).await.unwrap();
    deliver_all(&app, &fake).await;
    let done = order(&app, &token, id).await;
    assert_eq!(done["status"], "confirmed", "{done}");
    assert_eq!(done["payment"], "charged");
    assert_eq!(done["tickets"].as_array().unwrap().len(), 1);
    let paid = fake.inquire(&Inquiry::by_order(id)).await.unwrap().unwrap();
    assert_eq!(paid.state, ProviderState::Captured);
    assert_eq!(app.counts(event).await["sold"], json!(1));
    assert!(app.engine.audit().await.unwrap().clean());
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_webhook_five_times_at_once_makes_one_order_and_one_charge() {
    let (app, fake, event, token, id) = pending_3ds().await;
    fake.complete_action(id, true).await.unwrap();
    let approval = fake.undelivered_webhooks(100).await.unwrap().pop().unwrap();
    assert!(approval.payload.contains("amount_capturable_updated"));

    let answers = join_all((0..5).map(|_| post_webhook(&app, &fake, &approval.payload))).await;
    assert!(answers.iter().all(|(s, _)| *s == 200), "{answers:?}");
    let done = order(&app, &token, id).await;
    assert_eq!(done["status"], "confirmed");
    let orders = app.get("/v1/me/orders", &token).await;
    let orders: serde_json::Value = orders.json().await.unwrap();
    assert_eq!(orders["orders"].as_array().unwrap().len(), 1);
    assert_eq!(app.counts(event).await["sold"], json!(1));
    let all = fake.all_payments().await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].state, ProviderState::Captured);
    assert!(app.engine.audit().await.unwrap().clean());
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_delivered_again_is_answered_from_the_ledger_as_a_duplicate() {
    let (app, fake, event, _, id) = pending_3ds().await;
    fake.complete_action(id, true).await.unwrap();
    let approval = fake.undelivered_webhooks(100).await.unwrap().pop().unwrap();

    let (s, first) = post_webhook(&app, &fake, &approval.payload).await;
    assert_eq!(s, 200, "{first}");
    assert_eq!(
        (&first["status"], &first["duplicate"]),
        (&json!("confirmed"), &json!(false))
    );
    let (s, again) = post_webhook(&app, &fake, &approval.payload).await;
    assert_eq!(s, 200, "{again}");
    assert_eq!(
        (&again["status"], &again["duplicate"]),
        (&json!("confirmed"), &json!(true))
    );
    // A different event about the same order is handled in full.
    let capture = fake.undelivered_webhooks(100).await.unwrap().pop().unwrap();
    assert!(
        capture.payload.contains("payment_intent.succeeded"),
        "{}",
        capture.payload
    );
    let (_, other) = post_webhook(&app, &fake, &capture.payload).await;
    assert_eq!(other["duplicate"], json!(false));
    assert_eq!(app.counts(event).await["sold"], json!(1));
    assert!(app.engine.audit().await.unwrap().clean());
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_delivered_newest_first_end_where_the_provider_is() {
    let (app, fake, _, token, id) = pending_3ds().await;
    fake.complete_action(id, true).await.unwrap();
    // requires_action, then the approval; delivered backwards.
    let mut all = fake.undelivered_webhooks(100).await.unwrap();
    assert_eq!(all.len(), 2);
    all.reverse();
    for w in &all {
        assert_eq!(post_webhook(&app, &fake, &w.payload).await.0, 200);
        fake.mark_delivered(w.seq).await.unwrap();
    }
    // The capture's own webhook, then the stale "requires_action" once more.
    deliver_all(&app, &fake).await;
    assert_eq!(post_webhook(&app, &fake, &all[1].payload).await.0, 200);
    assert_eq!(order(&app, &token, id).await["status"], "confirmed");
    assert!(app.engine.audit().await.unwrap().clean());
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_unsigned_and_replayed_webhooks_are_refused_and_change_nothing() {
    let (app, fake, event, token, id) = pending_3ds().await;
    fake.complete_action(id, true).await.unwrap();
    let w = fake.undelivered_webhooks(100).await.unwrap().pop().unwrap();

    let good = fake.sign(w.payload.as_bytes(), app.clock.now());
    let forged = w.payload.replace("payment_intent", "payment_intenT");
    let (s, b) = post_signed(&app, &forged, &good).await;
    assert_eq!((s, b["error"].as_str()), (400, Some("invalid_signature")));
    let res = app
        .client
        .post(app.url("/v1/payments/webhook"))
        .body(w.payload.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 400);
    let b: serde_json::Value = res.json().await.unwrap();
    assert_eq!(b["error"], "missing_signature");
    let old = fake.sign(w.payload.as_bytes(), app.clock.now().plus_millis(-301_000));
    let (s, b) = post_signed(&app, &w.payload, &old).await;
    assert_eq!((s, b["error"].as_str()), (400, Some("stale_webhook")));

    assert_eq!(order(&app, &token, id).await["status"], "pending_payment");
    assert_eq!(app.counts(event).await["sold"], json!(0));
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payment_captured_after_the_hold_expired_is_refunded_and_the_seat_stays_free() {
    let app = spawn().await;
    let fake = provider(&app);
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let (token, hold) = holder(&app, event).await;
    let (status, body) = checkout(&app, &token, &hold, methods::BANK_REDIRECT).await;
    assert_eq!(status, 202);
    let id = order_id(&body);
    // The buyer lingers at the bank past the hold's pin (TTL 600 s, grace 120 s).
    app.clock.advance_secs(601);
    app.engine.expiry_step().await.unwrap();
    assert_eq!(app.counts(event).await["free"], json!(10));
    assert_eq!(
        fake.complete_action(id, true).await.unwrap(),
        ProviderState::Captured
    );

    deliver_all(&app, &fake).await;
    let late = order(&app, &token, id).await;
    assert_eq!(late["status"], "refunded", "{late}");
    assert_eq!(late["payment"], "returned");
    assert!(late["tickets"].as_array().unwrap().is_empty());
    let p = fake.inquire(&Inquiry::by_order(id)).await.unwrap().unwrap();
    assert_eq!(p.state, ProviderState::Refunded);
    assert_eq!(app.counts(event).await["sold"], json!(0));
    let audit = app.engine.audit().await.unwrap();
    assert!(audit.clean(), "{:?}", audit.violations);
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_3ds_approval_after_the_grace_period_is_voided_not_charged() {
    let (app, fake, _, token, id) = pending_3ds().await;
    app.clock.advance_secs(601);
    app.engine.expiry_step().await.unwrap();
    fake.complete_action(id, true).await.unwrap();
    deliver_all(&app, &fake).await;
    let late = order(&app, &token, id).await;
    assert_eq!(
        (late["status"].as_str(), late["payment"].as_str()),
        (Some("voided"), Some("none"))
    );
    let p = fake.inquire(&Inquiry::by_order(id)).await.unwrap().unwrap();
    assert_eq!(p.state, ProviderState::Voided);
    assert!(app.engine.audit().await.unwrap().clean());
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buyer_who_never_finishes_3ds_is_released_when_the_grace_runs_out() {
    let (app, fake, event, token, id) = pending_3ds().await;
    // Within the pin the sweep leaves the buyer alone.
    app.clock.advance_secs(60);
    app.engine.recovery_step().await.unwrap();
    assert_eq!(order(&app, &token, id).await["status"], "pending_payment");
    app.clock.advance_secs(600);
    app.engine.recovery_step().await.unwrap();
    assert_eq!(order(&app, &token, id).await["status"], "voided");
    let p = fake.inquire(&Inquiry::by_order(id)).await.unwrap().unwrap();
    assert_eq!(p.state, ProviderState::Voided);
    // Finishing at the bank now is refused by the provider: nothing can be charged.
    assert!(fake.complete_action(id, true).await.is_err());
    assert_eq!(app.counts(event).await["free"], json!(10));
    assert!(app.engine.audit().await.unwrap().clean());
}
