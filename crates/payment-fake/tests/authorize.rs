//! Authorization: the scripted test cards, the soak rates, and "never authorizes twice".

mod common;

use boxoffice_domain::Money;
use boxoffice_engine::ports::{
    AuthorizeOutcome, Inquiry, PaymentError, PaymentGateway, ProviderState,
};
use boxoffice_payment_fake::{FakeGateway, FakeGatewayConfig, methods};
use common::{gateway, request};

#[boxoffice_testkit::test]
async fn a_visa_card_is_approved_with_a_fake_reference_and_recorded_as_authorized() {
    let gw = gateway();
    let req = request(methods::VISA);
    let Ok(AuthorizeOutcome::Approved { reference }) = gw.authorize(&req).await else {
        panic!("visa must approve");
    };
    assert!(reference.starts_with("fake_pi_"), "{reference}");
    let found = gw
        .inquire(&Inquiry::by_order(req.order))
        .await
        .unwrap()
        .expect("recorded");
    assert_eq!(
        (found.reference, found.amount, found.state),
        (reference, Money(12_500), ProviderState::Authorized)
    );
}

#[boxoffice_testkit::test]
async fn an_unknown_payment_method_is_approved() {
    let gw = gateway();
    let outcome = gw
        .authorize(&request("pm_whatever_the_demo_sends"))
        .await
        .unwrap();
    assert!(
        matches!(outcome, AuthorizeOutcome::Approved { .. }),
        "{outcome:?}"
    );
}

#[boxoffice_testkit::test]
async fn a_declined_card_is_declined_as_card_declined_and_recorded() {
    let gw = gateway();
    let req = request(methods::DECLINED);
    let outcome = gw.authorize(&req).await.unwrap();
    assert_eq!(
        outcome,
        AuthorizeOutcome::Declined {
            reason: "card_declined".into()
        }
    );
    let found = gw
        .inquire(&Inquiry::by_order(req.order))
        .await
        .unwrap()
        .expect("a decline is on record too");
    assert_eq!(found.state, ProviderState::Declined);
}

#[boxoffice_testkit::test]
async fn a_card_without_funds_is_declined_for_insufficient_funds() {
    let gw = gateway();
    let outcome = gw
        .authorize(&request(methods::INSUFFICIENT_FUNDS))
        .await
        .unwrap();
    assert_eq!(
        outcome,
        AuthorizeOutcome::Declined {
            reason: "insufficient_funds".into()
        }
    );
}

#[boxoffice_testkit::test]
async fn a_timeout_after_charge_leaves_an_authorization_that_inquiry_finds() {
    let gw = gateway();
    let req = request(methods::TIMEOUT_AFTER_CHARGE);
    assert_eq!(gw.authorize(&req).await, Err(PaymentError::Timeout));
    let found = gw
        .inquire(&Inquiry::by_order(req.order))
        .await
        .unwrap()
        .expect("the charge happened");
    assert_eq!(found.state, ProviderState::Authorized);
    // A retry under the same key gets the stored answer instead of a second timeout.
    let retry = gw.authorize(&req).await.unwrap();
    assert_eq!(
        retry,
        AuthorizeOutcome::Approved {
            reference: found.reference
        }
    );
}

#[boxoffice_testkit::test]
async fn a_timeout_before_charge_leaves_nothing_on_record() {
    let gw = gateway();
    let req = request(methods::TIMEOUT_BEFORE_CHARGE);
    assert_eq!(gw.authorize(&req).await, Err(PaymentError::Timeout));
    assert_eq!(gw.inquire(&Inquiry::by_order(req.order)).await, Ok(None));
    assert!(gw.all_payments().await.unwrap().is_empty());
}

#[boxoffice_testkit::test]
async fn authorizing_the_same_order_twice_keeps_one_record_with_the_first_reference() {
    let gw = gateway();
    let req = request(methods::VISA);
    let first = gw.authorize(&req).await.unwrap();
    let second = gw.authorize(&req).await.unwrap();
    assert_eq!(first, second);
    assert_eq!(gw.all_payments().await.unwrap().len(), 1);
}

#[boxoffice_testkit::test]
async fn a_retry_with_another_card_still_gets_the_first_outcome() {
    let gw = gateway();
    let mut req = request(methods::DECLINED);
    let first = gw.authorize(&req).await.unwrap();
    req.payment_method = methods::VISA.into();
    assert_eq!(gw.authorize(&req).await.unwrap(), first);
}

#[boxoffice_testkit::test]
async fn a_refused_card_is_answered_with_a_rejection_and_nothing_is_recorded() {
    let gw = gateway();
    let req = request(methods::REFUSED);
    let Err(PaymentError::Rejected(why)) = gw.authorize(&req).await else {
        panic!("the refused card must be rejected outright");
    };
    assert!(why.contains(methods::REFUSED), "{why}");
    let found = gw.inquire(&Inquiry::by_order(req.order)).await.unwrap();
    assert_eq!(found, None, "a refused request leaves no payment");
}

#[boxoffice_testkit::test]
async fn reusing_an_order_for_a_different_amount_is_rejected() {
    let gw = gateway();
    let mut req = request(methods::VISA);
    gw.authorize(&req).await.unwrap();
    req.amount = Money(99_999);
    let Err(PaymentError::Rejected(why)) = gw.authorize(&req).await else {
        panic!("a changed amount under the same key must be refused");
    };
    assert!(why.contains("first authorized for 12500 EUR"), "{why}");
}

#[boxoffice_testkit::test]
async fn a_decline_rate_of_one_declines_every_ordinary_card() {
    let config = FakeGatewayConfig {
        decline_rate: 1.0,
        ..Default::default()
    };
    let gw = FakeGateway::in_memory(config).unwrap();
    for _ in 0..5 {
        let outcome = gw.authorize(&request(methods::VISA)).await.unwrap();
        assert_eq!(
            outcome,
            AuthorizeOutcome::Declined {
                reason: "card_declined".into()
            }
        );
    }
}

#[boxoffice_testkit::test]
async fn a_timeout_rate_of_one_times_out_every_first_authorization() {
    let config = FakeGatewayConfig {
        timeout_rate: 1.0,
        seed: 3,
        ..Default::default()
    };
    let gw = FakeGateway::in_memory(config).unwrap();
    for _ in 0..20 {
        assert_eq!(
            gw.authorize(&request(methods::VISA)).await,
            Err(PaymentError::Timeout)
        );
    }
    // Some of those timeouts happened after the charge, some before.
    let recorded = gw.all_payments().await.unwrap().len();
    assert!((1..20).contains(&recorded), "{recorded}");
}

#[boxoffice_testkit::test]
async fn out_of_range_rates_refuse_to_start() {
    let config = FakeGatewayConfig {
        decline_rate: -0.1,
        ..Default::default()
    };
    assert!(FakeGateway::in_memory(config).is_err());
}
