//! The fake provider delivering its own webhooks (`fake_payments.webhook_url`): a 3-D
//! Secure checkout completes through the server's /v1/payments/webhook with no test
//! code reading the outbox.

use std::time::Duration;

use super::*;
use crate::common::{spawn_with, spec};
use boxoffice_engine::ports::{Inquiry, PaymentGateway, ProviderState};
use boxoffice_payment_fake::methods;
use boxoffice_testkit::eventually;
use serde_json::json;

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_3ds_checkout_completes_when_the_fake_delivers_its_own_webhooks() {
    let app = spawn_with(|c| {
        c.fake_payments.webhook_url = Some("/v1/payments/webhook".into());
        c.fake_payments.webhook_poll_ms = 20;
    })
    .await;
    let fake = provider(&app);
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let (token, hold) = holder(&app, event).await;
    let (status, body) = checkout(&app, &token, &hold, methods::THREE_D_SECURE).await;
    assert_eq!(status, 202, "{body}");
    let id = order_id(&body);

    // The buyer approves at the bank; from here on only the fake and the server act.
    fake.complete_action(id, true).await.unwrap();
    let what = "the order confirmed by the provider's own webhook";
    let every = Duration::from_millis(20);
    let done = eventually(what, Duration::from_secs(30), every, || async {
        let o = order(&app, &token, id).await;
        match o["status"] == "confirmed" {
            true => Ok(o),
            false => Err(o),
        }
    })
    .await;
    assert_eq!(done["payment"], "charged");
    assert_eq!(
        fake.inquire(&Inquiry::by_order(id))
            .await
            .unwrap()
            .unwrap()
            .state,
        ProviderState::Captured
    );
    assert_eq!(app.counts(event).await["sold"], json!(1));
    // The capture's own webhook goes out too: the outbox drains.
    let what = "the provider's outbox to drain";
    eventually(what, Duration::from_secs(30), every, || async {
        let left = fake.undelivered_webhooks(10).await.unwrap();
        match left.is_empty() {
            true => Ok(()),
            false => Err(left.len()),
        }
    })
    .await;
    let audit = app.engine.audit().await.unwrap();
    assert!(audit.clean(), "{:?}", audit.violations);
}
