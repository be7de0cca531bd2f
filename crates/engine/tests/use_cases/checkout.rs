//! Checkout: a card approved (the seats are sold), declined (the seats come back), or
//! asking for 3-D Secure (the seats stay pinned until the buyer's answer is known).

use boxoffice_domain::{HoldState, OrderId, OrderState};
use boxoffice_engine::ports::{HoldView, Inquiry, PaymentGateway, ProviderState};
use boxoffice_engine::{CheckoutOutcome, EngineConfig, EngineError};
use boxoffice_payment_fake::{FakeGatewayConfig, methods};

use super::{admitted, hold_named};
use crate::common::*;

const SEATS: [&str; 2] = ["A-1-1", "A-1-2"];

/// A node with an open event and an admitted buyer holding [`SEATS`].
async fn holding() -> (Durable, Node, boxoffice_engine::Admitted, HoldView) {
    let d = Durable::new(FakeGatewayConfig::default());
    let n = node(&d, EngineConfig::default());
    let event = open_event(&n.engine, 1, 4).await;
    let buyer = admitted(&n.engine, event).await;
    let hold = hold_named(&n.engine, &buyer, &SEATS).await;
    (d, n, buyer, hold.expect("the seats are free"))
}

/// The provider's own state of the order's payment, if it has one.
async fn money(d: &Durable, order: OrderId) -> Option<ProviderState> {
    let paid = d.fake.inquire(&Inquiry::by_order(order)).await;
    paid.expect("the provider answers").map(|p| p.state)
}

#[boxoffice_testkit::test]
async fn an_approved_card_confirms_the_order_and_sells_the_seats() {
    let (d, n, buyer, hold) = holding().await;
    let out = n
        .engine
        .checkout(&buyer.who, hold.hold, methods::VISA)
        .await;
    assert!(matches!(out, Ok(CheckoutOutcome::Confirmed(_))), "{out:?}");

    let order = order_of(&n.engine, &hold).await;
    assert_eq!(order.state, OrderState::Confirmed);
    assert_eq!(money(&d, order.id).await, Some(ProviderState::Captured));
    assert_eq!(hold_state(&n.engine, &hold).await, Some(HoldState::Sold));
    let event = hold.hold.event;
    assert_eq!(
        sold_in_hot_store(&n.engine, event, &SEATS).await,
        vec![true, true]
    );
}

#[boxoffice_testkit::test]
async fn a_declined_card_ends_the_order_declined_and_gives_the_seats_back() {
    let (d, n, buyer, hold) = holding().await;
    let out = n
        .engine
        .checkout(&buyer.who, hold.hold, methods::DECLINED)
        .await;
    assert!(
        matches!(out, Err(EngineError::PaymentDeclined(_))),
        "{out:?}"
    );

    let order = order_of(&n.engine, &hold).await;
    assert_eq!(order.state, OrderState::Declined);
    assert_ne!(money(&d, order.id).await, Some(ProviderState::Captured));
    let event = hold.hold.event;
    assert_eq!(free(&n.engine, event, &SEATS).await, vec![true, true]);
    assert_eq!(
        sold_in_hot_store(&n.engine, event, &SEATS).await,
        vec![false, false]
    );
}

/// A 3-D Secure checkout the buyer then passes or fails at the provider, and the
/// recovery sweep that learns the answer by asking: the node, the hold and its order.
async fn three_d_secure(passes: bool) -> (Durable, Node, HoldView, OrderId) {
    let (d, n, buyer, hold) = holding().await;
    let out = n
        .engine
        .checkout(&buyer.who, hold.hold, methods::THREE_D_SECURE)
        .await;
    assert!(
        matches!(out, Ok(CheckoutOutcome::ActionRequired(..))),
        "{out:?}"
    );
    let order = order_of(&n.engine, &hold).await;
    assert_eq!(order.state, OrderState::PendingPayment);
    let event = hold.hold.event;
    assert_eq!(free(&n.engine, event, &SEATS).await, vec![false, false]);
    assert_eq!(
        hold_state(&n.engine, &hold).await,
        Some(HoldState::CheckingOut)
    );

    d.fake
        .complete_action(order.id, passes)
        .await
        .expect("the buyer answers");
    let sweep_after = EngineConfig::default().recovery_after_s as i64;
    d.clock.advance_secs(sweep_after + 1);
    recover_until_idle(&n.engine, 10).await;
    (d, n, hold, order.id)
}

#[boxoffice_testkit::test]
async fn three_d_secure_keeps_the_seats_pinned_until_the_buyer_passes_then_sells_them() {
    let (d, n, hold, order) = three_d_secure(true).await;
    assert_eq!(
        order_of(&n.engine, &hold).await.state,
        OrderState::Confirmed
    );
    assert_eq!(money(&d, order).await, Some(ProviderState::Captured));
    let event = hold.hold.event;
    assert_eq!(
        sold_in_hot_store(&n.engine, event, &SEATS).await,
        vec![true, true]
    );
}

#[boxoffice_testkit::test]
async fn a_failed_three_d_secure_ends_the_order_unpaid_with_the_seats_back() {
    let (d, n, hold, order) = three_d_secure(false).await;
    let ended = order_of(&n.engine, &hold).await;
    assert!(
        ended.state.is_final() && !ended.state.holds_seats(),
        "{:?}",
        ended.state
    );
    assert_ne!(money(&d, order).await, Some(ProviderState::Captured));
    let event = hold.hold.event;
    assert_eq!(free(&n.engine, event, &SEATS).await, vec![true, true]);
}

#[boxoffice_testkit::test]
async fn nobody_checks_out_another_buyers_hold() {
    let (_d, n, _owner, hold) = holding().await;
    let stranger = admitted(&n.engine, hold.hold.event).await;
    let out = n
        .engine
        .checkout(&stranger.who, hold.hold, methods::VISA)
        .await;
    assert!(matches!(out, Err(EngineError::NotFound(_))), "{out:?}");
    assert_eq!(hold_state(&n.engine, &hold).await, Some(HoldState::Held));
}
