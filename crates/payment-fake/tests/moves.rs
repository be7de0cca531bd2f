//! Capture, void and refund: the legal moves, their idempotency, the refused ones, and
//! the programmable faults in front of them.

mod common;

use boxoffice_domain::OrderId;
use boxoffice_engine::ports::{Inquiry, PaymentError, PaymentGateway, ProviderState};
use boxoffice_payment_fake::{FakeGateway, Op, methods};
use common::{authorized, gateway, request};

async fn state_of(gw: &FakeGateway, order: OrderId) -> ProviderState {
    gw.inquire(&Inquiry::by_order(order))
        .await
        .unwrap()
        .expect("on record")
        .state
}

fn rejection(result: Result<(), PaymentError>) -> String {
    match result {
        Err(PaymentError::Rejected(why)) => why,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[boxoffice_testkit::test]
async fn an_authorization_can_be_captured_and_capturing_again_is_harmless() {
    let gw = gateway();
    let (order, reference) = authorized(&gw).await;
    gw.capture(order, &reference).await.unwrap();
    gw.capture(order, &reference).await.unwrap();
    assert_eq!(state_of(&gw, order).await, ProviderState::Captured);
}

#[boxoffice_testkit::test]
async fn an_authorization_can_be_voided_and_voiding_again_is_harmless() {
    let gw = gateway();
    let (order, reference) = authorized(&gw).await;
    gw.void(order, &reference).await.unwrap();
    gw.void(order, &reference).await.unwrap();
    assert_eq!(state_of(&gw, order).await, ProviderState::Voided);
}

#[boxoffice_testkit::test]
async fn a_captured_payment_can_be_refunded_once_and_refunding_again_is_harmless() {
    let gw = gateway();
    let (order, reference) = authorized(&gw).await;
    gw.capture(order, &reference).await.unwrap();
    gw.refund(order, &reference).await.unwrap();
    gw.refund(order, &reference).await.unwrap();
    assert_eq!(state_of(&gw, order).await, ProviderState::Refunded);
}

#[boxoffice_testkit::test]
async fn a_voided_payment_cannot_be_captured() {
    let gw = gateway();
    let (order, reference) = authorized(&gw).await;
    gw.void(order, &reference).await.unwrap();
    let why = rejection(gw.capture(order, &reference).await);
    assert!(
        why.contains("cannot capture a payment that is voided"),
        "{why}"
    );
    assert_eq!(state_of(&gw, order).await, ProviderState::Voided);
}

#[boxoffice_testkit::test]
async fn a_captured_payment_cannot_be_voided() {
    let gw = gateway();
    let (order, reference) = authorized(&gw).await;
    gw.capture(order, &reference).await.unwrap();
    let why = rejection(gw.void(order, &reference).await);
    assert!(
        why.contains("cannot void a payment that is captured"),
        "{why}"
    );
}

#[boxoffice_testkit::test]
async fn an_uncaptured_payment_cannot_be_refunded() {
    let gw = gateway();
    let (order, reference) = authorized(&gw).await;
    let why = rejection(gw.refund(order, &reference).await);
    assert!(
        why.contains("refund applies only to captured payments"),
        "{why}"
    );
}

#[boxoffice_testkit::test]
async fn a_declined_payment_cannot_be_captured() {
    let gw = gateway();
    let req = request(methods::DECLINED);
    gw.authorize(&req).await.unwrap();
    let reference = gw
        .inquire(&Inquiry::by_order(req.order))
        .await
        .unwrap()
        .unwrap()
        .reference;
    let why = rejection(gw.capture(req.order, &reference).await);
    assert!(why.contains("declined"), "{why}");
}

#[boxoffice_testkit::test]
async fn moves_on_an_unknown_order_or_a_foreign_reference_are_rejected() {
    let gw = gateway();
    let why = rejection(gw.capture(OrderId::random(), "fake_pi_nothing").await);
    assert!(why.contains("no payment on record"), "{why}");
    let (order, _) = authorized(&gw).await;
    let (_, other_reference) = authorized(&gw).await;
    let why = rejection(gw.capture(order, &other_reference).await);
    assert!(why.contains("does not belong to order"), "{why}");
    assert_eq!(state_of(&gw, order).await, ProviderState::Authorized);
}

#[boxoffice_testkit::test]
async fn the_next_n_captures_fail_as_unavailable_and_then_succeed() {
    let gw = gateway();
    let (order, reference) = authorized(&gw).await;
    gw.fail_next_capture(2);
    for _ in 0..2 {
        let failed = gw.capture(order, &reference).await;
        assert!(
            matches!(failed, Err(PaymentError::Unavailable(_))),
            "{failed:?}"
        );
        assert_eq!(state_of(&gw, order).await, ProviderState::Authorized);
    }
    gw.capture(order, &reference).await.unwrap();
    assert_eq!(state_of(&gw, order).await, ProviderState::Captured);
}

#[boxoffice_testkit::test]
async fn a_capture_whose_answer_is_lost_has_still_happened() {
    let gw = gateway();
    let (order, reference) = authorized(&gw).await;
    gw.time_out_next(Op::Capture, 1);
    assert_eq!(
        gw.capture(order, &reference).await,
        Err(PaymentError::Timeout)
    );
    assert_eq!(state_of(&gw, order).await, ProviderState::Captured);
    gw.capture(order, &reference).await.unwrap();
}

#[boxoffice_testkit::test]
async fn an_outage_of_inquiry_is_reported_as_unavailable() {
    let gw = gateway();
    let (order, _) = authorized(&gw).await;
    gw.fail_next(Op::Inquire, 1);
    assert!(matches!(
        gw.inquire(&Inquiry::by_order(order)).await,
        Err(PaymentError::Unavailable(_))
    ));
    assert!(
        gw.inquire(&Inquiry::by_order(order))
            .await
            .unwrap()
            .is_some()
    );
}

#[boxoffice_testkit::test]
async fn a_partial_refund_is_made_once_per_key_and_never_past_the_payment() {
    use boxoffice_domain::Money;
    let gw = gateway();
    let (order, reference) = authorized(&gw).await;
    let total = gw.record(order).await.unwrap().expect("on record").amount;
    let part = Money(total.0 / 2);
    let early = gw.refund_part(order, &reference, part, "a").await;
    assert!(rejection(early).contains("not captured"), "only a capture");
    gw.capture(order, &reference).await.unwrap();
    gw.refund_part(order, &reference, part, "a").await.unwrap();
    gw.refund_part(order, &reference, part, "a").await.unwrap();
    let reused = gw.refund_part(order, &reference, Money(1), "a").await;
    assert!(rejection(reused).contains("another refund"));
    let over = gw.refund_part(order, &reference, total, "b").await;
    assert!(rejection(over).contains("cannot refund"));
    let refunds = gw.partial_refunds().await.unwrap();
    assert_eq!(
        refunds.len(),
        1,
        "one refund for the key, however often asked"
    );
    assert_eq!((refunds[0].order, refunds[0].amount), (order, part));
    assert_eq!(
        state_of(&gw, order).await,
        ProviderState::Captured,
        "the rest stays"
    );
    let rest = Money(total.0 - part.0);
    gw.refund_part(order, &reference, rest, "c").await.unwrap();
    assert_eq!(
        state_of(&gw, order).await,
        ProviderState::Refunded,
        "refunded in full, part by part"
    );
}
