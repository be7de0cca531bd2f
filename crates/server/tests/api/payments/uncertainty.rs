//! When the provider does not answer: the order waits in `pending_payment` with the
//! hold pinned, the recovery sweep asks the provider, and the order ends where the
//! money is. And when a capture fails after the commit: `pending_capture`, retried with
//! a doubling wait until it goes through.

use super::*;
use crate::common::{spawn, spawn_with, spec};
use boxoffice_engine::ports::{Clock, Inquiry, PaymentGateway, ProviderState};
use boxoffice_payment_fake::methods;
use serde_json::json;

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_times_out_after_charging_ends_confirmed() {
    let app = spawn().await;
    let fake = provider(&app);
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let (token, hold) = holder(&app, event).await;
    let (status, body) = checkout(&app, &token, &hold, methods::TIMEOUT_AFTER_CHARGE).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["next_action"]["type"], "poll");
    let id = order_id(&body);
    let hold_now = app.get(&format!("/v1/holds/{hold}"), &token).await;
    let hold_now: serde_json::Value = hold_now.json().await.unwrap();
    assert_eq!(hold_now["status"], "payment_pending", "{hold_now}");
    assert_eq!(order(&app, &token, id).await["status"], "pending_payment");

    app.clock.advance_secs(31);
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
    assert!(app.engine.audit().await.unwrap().clean());
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_times_out_before_charging_ends_released_and_uncharged() {
    let app = spawn().await;
    let fake = provider(&app);
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let (token, hold) = holder(&app, event).await;
    let (status, body) = checkout(&app, &token, &hold, methods::TIMEOUT_BEFORE_CHARGE).await;
    assert_eq!(status, 202, "{body}");
    let id = order_id(&body);
    assert_eq!(
        app.counts(event).await["free"],
        json!(9),
        "the seat stays pinned"
    );

    app.clock.advance_secs(31);
    app.engine.recovery_step().await.unwrap();
    let done = order(&app, &token, id).await;
    assert_eq!(
        (done["status"].as_str(), done["payment"].as_str()),
        (Some("voided"), Some("none"))
    );
    assert!(
        fake.inquire(&Inquiry::by_order(id))
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(app.counts(event).await["free"], json!(10));
    assert!(app.engine.audit().await.unwrap().clean());
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_capture_waits_in_pending_capture_and_is_retried_with_a_doubling_wait() {
    let app = spawn_with(|c| c.fake_payments.capture_failures = 3).await;
    let fake = provider(&app);
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let (token, hold) = holder(&app, event).await;
    let (status, body) = checkout(&app, &token, &hold, methods::VISA).await;
    assert_eq!(status, 201, "the seats are the buyer's: {body}");
    let id = order_id(&body);
    let o = order(&app, &token, id).await;
    assert_eq!(
        (o["status"].as_str(), o["payment"].as_str()),
        (Some("pending_capture"), Some("reserved"))
    );
    assert_eq!(o["tickets"].as_array().unwrap().len(), 1);

    // Attempt 2 after 30 s (the minimum), attempt 3 after the order's age (30 s more),
    // attempt 4 after 60 s more; a sweep before the wait is over does nothing.
    let mut attempts_at = Vec::new();
    for _ in 0..200 {
        app.clock.advance_secs(5);
        if app.engine.recovery_step().await.unwrap().done > 0 {
            attempts_at.push(app.clock.now());
        }
        if order(&app, &token, id).await["status"] == "confirmed" {
            break;
        }
    }
    assert_eq!(order(&app, &token, id).await["status"], "confirmed");
    assert_eq!(
        fake.inquire(&Inquiry::by_order(id))
            .await
            .unwrap()
            .unwrap()
            .state,
        ProviderState::Captured
    );
    let gaps: Vec<i64> = attempts_at
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) / 1000)
        .collect();
    assert!(
        gaps.windows(2).all(|g| g[1] >= g[0]),
        "waits never shrink: {gaps:?}"
    );
    assert!(app.engine.audit().await.unwrap().clean());
}
