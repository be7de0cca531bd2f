//! The Stripe adapter against localstripe, started by each test on a free loopback
//! port: approve, decline, 3-D Secure, capture, void, refund, retries that must not
//! charge twice, and signed webhooks (a tampered one refused).

mod common;

use std::time::Duration;

use boxoffice_domain::{Millis, Money, OrderId};
use boxoffice_engine::ports::{
    AuthorizeOutcome, AuthorizeRequest, Inquiry, PaymentGateway, ProviderState, WebhookError,
};

fn request(method: &str) -> AuthorizeRequest {
    AuthorizeRequest {
        order: OrderId::random(),
        amount: Money(5_000),
        currency: "EUR".into(),
        payment_method: method.into(),
    }
}

fn now() -> Millis {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    Millis(d.as_millis() as i64)
}

async fn state(gw: &impl PaymentGateway, order: OrderId) -> Option<ProviderState> {
    gw.inquire(&Inquiry::by_order(order))
        .await
        .unwrap()
        .map(|p| p.state)
}

fn approved(o: AuthorizeOutcome) -> String {
    match o {
        AuthorizeOutcome::Approved { reference } => reference,
        other => panic!("expected an approval, got {other:?}"),
    }
}

#[boxoffice_testkit::test]
async fn an_approved_card_is_authorized_then_captured_then_refunded() {
    let ls = common::start();
    let gw = ls.gateway();
    let req = request("pm_card_visa");
    let reference = approved(gw.authorize(&req).await.unwrap());
    assert!(reference.starts_with("pi_"));
    assert_eq!(state(&gw, req.order).await, Some(ProviderState::Authorized));
    gw.capture(req.order, &reference).await.unwrap();
    assert_eq!(state(&gw, req.order).await, Some(ProviderState::Captured));
    gw.capture(req.order, &reference).await.unwrap(); // a retry is a no-op
    gw.refund(req.order, &reference).await.unwrap();
    assert_eq!(state(&gw, req.order).await, Some(ProviderState::Refunded));
    let by_ref = gw.inquire_reference(&reference).await.unwrap().unwrap();
    assert_eq!((by_ref.order, by_ref.amount), (req.order, Money(5_000)));
}

#[boxoffice_testkit::test]
async fn a_card_that_fails_to_charge_is_declined_and_recorded_as_declined() {
    let ls = common::start();
    let gw = ls.gateway();
    let req = request("pm_card_chargeCustomerFail");
    let out = gw.authorize(&req).await.unwrap();
    assert!(matches!(out, AuthorizeOutcome::Declined { .. }), "{out:?}");
    assert_eq!(state(&gw, req.order).await, Some(ProviderState::Declined));
}

#[boxoffice_testkit::test]
async fn an_authorization_voided_after_a_lost_commit_is_voided_once() {
    let ls = common::start();
    let gw = ls.gateway();
    let req = request("pm_card_visa");
    let reference = approved(gw.authorize(&req).await.unwrap());
    gw.void(req.order, &reference).await.unwrap();
    gw.void(req.order, &reference).await.unwrap();
    assert_eq!(state(&gw, req.order).await, Some(ProviderState::Voided));
}

#[boxoffice_testkit::test]
async fn authorizing_the_same_order_again_finds_the_first_payment_instead_of_charging_twice() {
    let ls = common::start();
    let gw = ls.gateway();
    let req = request("pm_card_visa");
    let first = approved(gw.authorize(&req).await.unwrap());
    let second = approved(gw.authorize(&req).await.unwrap());
    assert_eq!(first, second);
    let mine: Vec<_> = gw.all_payments().await.unwrap();
    assert_eq!(mine.iter().filter(|p| p.order == req.order).count(), 1);
}

#[boxoffice_testkit::test]
async fn a_3ds_card_waits_for_the_buyer_and_its_capture_webhook_verifies() {
    let ls = common::start();
    let (url, mut hooks) = common::webhook_receiver().await;
    ls.register_webhook(&url).await;
    let gw = ls.gateway();
    let pm = ls.card("4000002760003184").await;
    let req = request(&pm);
    let reference = match gw.authorize(&req).await.unwrap() {
        AuthorizeOutcome::ActionRequired {
            reference,
            next_action,
        } => {
            assert!(!next_action.kind.is_empty());
            reference
        }
        other => panic!("expected 3-D Secure, got {other:?}"),
    };
    assert_eq!(
        state(&gw, req.order).await,
        Some(ProviderState::RequiresAction)
    );
    ls.authenticate(&reference, true).await;
    assert_eq!(state(&gw, req.order).await, Some(ProviderState::Authorized));
    gw.capture(req.order, &reference).await.unwrap();

    // localstripe sends payment_intent.succeeded about a second later.
    let (sig, body) = tokio::time::timeout(Duration::from_secs(10), hooks.recv())
        .await
        .expect("a webhook arrives")
        .unwrap();
    let event = gw.verify_webhook(&body, &sig, now()).unwrap();
    assert_eq!(event.kind, "payment_intent.succeeded");
    assert_eq!(
        (event.order, event.reference.as_str()),
        (Some(req.order), reference.as_str())
    );
    let mut tampered = body.to_vec();
    tampered.extend_from_slice(b" ");
    assert_eq!(
        gw.verify_webhook(&tampered, &sig, now()),
        Err(WebhookError::BadSignature)
    );
    let later = Millis(now().0 + 301_000);
    assert_eq!(
        gw.verify_webhook(&body, &sig, later),
        Err(WebhookError::Stale)
    );
}

#[boxoffice_testkit::test]
async fn a_3ds_card_the_buyer_fails_to_authenticate_ends_declined_and_can_be_cancelled() {
    let ls = common::start();
    let gw = ls.gateway();
    let pm = ls.card("4000002760003184").await;
    let req = request(&pm);
    let reference = match gw.authorize(&req).await.unwrap() {
        AuthorizeOutcome::ActionRequired { reference, .. } => reference,
        other => panic!("expected 3-D Secure, got {other:?}"),
    };
    ls.authenticate(&reference, false).await;
    assert_eq!(state(&gw, req.order).await, Some(ProviderState::Declined));
    gw.void(req.order, &reference).await.unwrap();
    assert_eq!(state(&gw, req.order).await, Some(ProviderState::Voided));
}
