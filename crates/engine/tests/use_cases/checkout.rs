//! Checkout: a card approved (the seats are sold), declined (the seats come back), or
//! asking for 3-D Secure (the seats stay pinned until the buyer's answer is known).

use std::sync::Arc;

use boxoffice_domain::{HoldState, OrderId, OrderState};
use boxoffice_engine::ports::{
    Begin, Claimant, HoldView, IdempotencyStore, Incarnation, Inquiry, PaymentGateway,
    ProviderState, ReplayKey, StoredResponse,
};
use boxoffice_engine::{CheckoutOutcome, EngineConfig, EngineError, KeepConfirmed};
use boxoffice_payment_fake::{FakeGatewayConfig, methods};
use boxoffice_store_memory::MemoryIdempotency;

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

/// A checkout whose card asks for 3-D Secure: the order it wrote, waiting for the buyer.
async fn checkout_asking_3ds(
    n: &Node,
    buyer: &boxoffice_engine::Admitted,
    hold: &HoldView,
) -> boxoffice_engine::ports::Order {
    let out = n
        .engine
        .checkout(&buyer.who, hold.hold, methods::THREE_D_SECURE)
        .await;
    assert!(
        matches!(out, Ok(CheckoutOutcome::ActionRequired(..))),
        "{out:?}"
    );
    order_of(&n.engine, hold).await
}

/// A 3-D Secure checkout the buyer then passes or fails at the provider, and the
/// recovery sweep that learns the answer by asking: the node, the hold and its order.
async fn three_d_secure(passes: bool) -> (Durable, Node, HoldView, OrderId) {
    let (d, n, buyer, hold) = holding().await;
    let order = checkout_asking_3ds(&n, &buyer, &hold).await;
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

/// The buyer passes 3-D Secure and the provider's webhook says so while its search
/// does not list the payment yet (Stripe's lags): the order, which has no reference
/// until then, was asked about by search, learnt nothing, and the webhook was counted
/// as handled, so a buyer who paid in time could lose the seats at the end of the
/// grace. The signed webhook's reference is asked instead.
#[boxoffice_testkit::test]
async fn a_3ds_payment_approved_while_the_search_lags_is_sold_by_its_webhook() {
    let (d, n, buyer, hold) = holding().await;
    let order = checkout_asking_3ds(&n, &buyer, &hold).await;
    assert_eq!(order.payment_ref, None);
    d.fake
        .complete_action(order.id, true)
        .await
        .expect("the buyer passes");
    n.payments.lag_search();
    let approval = (d.fake.undelivered_webhooks(100).await)
        .expect("the outbox")
        .pop()
        .expect("the approval's webhook");
    let signature = d.fake.sign(approval.payload.as_bytes(), d.clock.now());
    let handled = n
        .engine
        .handle_webhook(approval.payload.as_bytes(), &signature)
        .await;
    assert!(handled.is_ok(), "{handled:?}");
    assert_eq!(
        order_of(&n.engine, &hold).await.state,
        OrderState::Confirmed
    );
    assert_eq!(money(&d, order.id).await, Some(ProviderState::Captured));
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

/// The answer a route keeps for a confirmed order in these tests: the order's id and
/// status, rendered from the view the captured move left.
fn render_confirmed() -> std::sync::Arc<boxoffice_engine::ports::RenderKept> {
    std::sync::Arc::new(|view: &boxoffice_engine::OrderView| {
        Some(StoredResponse {
            status: 201,
            body: format!("{}:{}", view.order_id, view.status.as_str()).into_bytes(),
        })
    })
}

/// A request's claim of a checkout's Idempotency-Key, as the route takes it.
async fn claimed(replays: &Arc<dyn IdempotencyStore>, me: &Claimant) -> Arc<ReplayKey> {
    let key = Arc::new(ReplayKey::new("buyer:b", uuid::Uuid::new_v4().to_string()));
    let begun = replays.begin(&key, &[1; 32], T0, me).await.unwrap();
    assert_eq!(begun, Begin::Proceed);
    key
}

fn me() -> Claimant {
    Claimant {
        node: Incarnation::random(),
        lease_ms: 60_000,
        dead_after_ms: 30_000,
    }
}

/// Writer jobs of the ledger from `before` on.
fn jobs_since(d: &Durable, before: u64) -> u64 {
    d.ledger.write_stats().1 - before
}

/// A confirmed checkout under an Idempotency-Key kept in the SQLite ledger's file costs
/// the writer four jobs (the claim, the order, the authorization and commit, the
/// capture with the kept answer), where it cost five with the answer kept by a `finish`
/// of its own; a retry is answered the kept answer, rendered from the confirmed order.
#[boxoffice_testkit::test]
async fn a_confirmed_checkout_keeps_its_answer_in_the_captures_write() {
    let (d, n, buyer, hold) = holding().await;
    let replays: Arc<dyn IdempotencyStore> = Arc::new(d.ledger.idempotency());
    let me = me();
    // As before: the claim, the checkout, then `finish`.
    let second = admitted(&n.engine, hold.hold.event).await;
    let other = hold_named(&n.engine, &second, &["A-1-3"]).await.unwrap();
    let before = d.ledger.write_stats().1;
    let key = claimed(&replays, &me).await;
    let out = checkout(&n.engine, &second.who, &other, methods::VISA).await;
    assert!(matches!(out, Ok(CheckoutOutcome::Confirmed(_))), "{out:?}");
    let answer = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    replays
        .finish(&key, me.lease_from(T0), &answer)
        .await
        .unwrap();
    assert_eq!(jobs_since(&d, before), 5, "writer jobs, answer kept apart");
    // Kept with the capture.
    let before = d.ledger.write_stats().1;
    let key = claimed(&replays, &me).await;
    let keep = KeepConfirmed::new(
        replays.clone(),
        key.clone(),
        me.lease_from(T0),
        render_confirmed(),
    );
    let out = (n.engine)
        .checkout_keeping(
            &buyer.who,
            hold.hold,
            methods::VISA,
            vec![],
            &Default::default(),
            Some(&keep),
        )
        .await;
    let Ok(CheckoutOutcome::Confirmed(view)) = out else {
        panic!("{out:?}")
    };
    assert_eq!(
        jobs_since(&d, before),
        4,
        "writer jobs, answer kept by the capture"
    );
    let kept = keep.into_kept().expect("kept by the capture's write");
    assert_eq!(
        kept.body,
        format!("{}:confirmed", view.order_id).into_bytes()
    );
    let order = order_of(&n.engine, &hold).await;
    assert_eq!(order.state, OrderState::Confirmed);
    let later = T0.plus_secs(3_600);
    let retried = replays.begin(&key, &[1; 32], later, &me).await.unwrap();
    assert_eq!(retried, Begin::Replay(kept));
}

/// Only the confirmed path keeps: a declined card keeps nothing (the claim still runs,
/// for the route to keep its refusal), and a replay store kept outside the ledger's
/// database (in memory) leaves a confirmed answer to the caller.
#[boxoffice_testkit::test]
async fn a_checkout_not_confirmed_or_beside_another_store_keeps_nothing() {
    let (d, n, buyer, hold) = holding().await;
    let replays: Arc<dyn IdempotencyStore> = Arc::new(d.ledger.idempotency());
    let me = me();
    let key = claimed(&replays, &me).await;
    let keep = KeepConfirmed::new(
        replays.clone(),
        key.clone(),
        me.lease_from(T0),
        render_confirmed(),
    );
    let out = (n.engine)
        .checkout_keeping(
            &buyer.who,
            hold.hold,
            methods::DECLINED,
            vec![],
            &Default::default(),
            Some(&keep),
        )
        .await;
    assert!(
        matches!(out, Err(EngineError::PaymentDeclined(_))),
        "{out:?}"
    );
    assert_eq!(keep.into_kept(), None);
    let again = replays.begin(&key, &[1; 32], T0, &me).await.unwrap();
    assert_eq!(again, Begin::InFlight);

    let memory: Arc<dyn IdempotencyStore> = Arc::new(MemoryIdempotency::new());
    let key = claimed(&memory, &me).await;
    let keep = KeepConfirmed::new(
        memory.clone(),
        key.clone(),
        me.lease_from(T0),
        render_confirmed(),
    );
    let second = admitted(&n.engine, hold.hold.event).await;
    let other = hold_named(&n.engine, &second, &["A-1-3"]).await.unwrap();
    let out = (n.engine)
        .checkout_keeping(
            &second.who,
            other.hold,
            methods::VISA,
            vec![],
            &Default::default(),
            Some(&keep),
        )
        .await;
    assert!(matches!(out, Ok(CheckoutOutcome::Confirmed(_))), "{out:?}");
    assert_eq!(keep.into_kept(), None);
    assert_eq!(
        order_of(&n.engine, &other).await.state,
        OrderState::Confirmed
    );
    let again = memory.begin(&key, &[1; 32], T0, &me).await.unwrap();
    assert_eq!(again, Begin::InFlight);
}

/// 1 when the provider has a payment for the order, 0 when it has none.
async fn payments_of(d: &Durable, order: OrderId) -> usize {
    let paid = d.fake.inquire(&Inquiry::by_order(order)).await;
    usize::from(paid.expect("the provider answers").is_some())
}

#[boxoffice_testkit::test]
async fn a_second_checkout_of_a_sold_hold_answers_with_its_order_and_charges_nothing_more() {
    let (d, n, buyer, hold) = holding().await;
    let first = n
        .engine
        .checkout(&buyer.who, hold.hold, methods::VISA)
        .await;
    let Ok(CheckoutOutcome::Confirmed(first)) = first else {
        panic!("{first:?}");
    };
    let again = n
        .engine
        .checkout(&buyer.who, hold.hold, methods::VISA)
        .await;
    let Ok(CheckoutOutcome::Confirmed(again)) = again else {
        panic!("{again:?}");
    };
    assert_eq!(
        again.order_id, first.order_id,
        "the first order, not a second"
    );
    assert_eq!(payments_of(&d, first.order_id).await, 1);
    assert_eq!(
        money(&d, first.order_id).await,
        Some(ProviderState::Captured)
    );
}

/// A hot store that lost a pin (a failover that dropped the write, say) shows the hold
/// held again, so its checkout skips the ledger read for the hold's order: the ledger's
/// one order a hold still answers with the first order, and no card is charged again.
#[boxoffice_testkit::test]
async fn a_hold_whose_pin_the_hot_store_lost_is_answered_with_its_first_order() {
    let (d, n, buyer, hold) = holding().await;
    let order = checkout_asking_3ds(&n, &buyer, &hold).await;

    // A node whose hot store knows the same hold as held, without its pin.
    let other = node(&d, EngineConfig::default());
    let event = hold.hold.event;
    other
        .engine
        .rebuild(event)
        .await
        .expect("the event in its hot store");
    let entry = other.engine.event(event).await.expect("the event");
    let now = other.engine.ports().clock.now();
    let seats = SEATS.iter().map(|l| entry.seat_index[*l]).collect();
    let again = boxoffice_engine::ports::HoldRequest {
        hold: hold.hold,
        buyer: buyer.who.buyer,
        choice: boxoffice_engine::ports::SeatChoice::Named(seats),
        expires_at: now.plus_secs(600),
        key: None,
    };
    let held = other.engine.ports().arbiter.hold(&again, now).await;
    assert_eq!(held.expect("held again").state, HoldState::Held);

    let out = other
        .engine
        .checkout(&buyer.who, hold.hold, methods::VISA)
        .await;
    let Ok(CheckoutOutcome::Pending(view)) = out else {
        panic!("the first order's answer, not a new payment: {out:?}");
    };
    assert_eq!(view.order_id, order.id);
    assert_eq!(payments_of(&d, order.id).await, 1);
    let orders = boxoffice_engine::ports::Ledger::orders_of_buyer(&*d.ledger, buyer.who.buyer, 10)
        .await
        .unwrap();
    assert_eq!(orders.len(), 1, "one order for the hold: {orders:?}");
}

/// Every first checkout of a held hold skips the ledger read for its order, so ten
/// at once (double clicks, tabs) may all reach the pin: one wins, the others are told
/// a checkout is under way or given the winner's order (pending while it is paid, or
/// confirmed), and one order is paid once.
#[boxoffice_testkit::test]
async fn ten_checkouts_of_one_held_hold_at_once_make_one_order_paid_once() {
    let (d, n, buyer, hold) = holding().await;
    let tries = (0..10).map(|_| n.engine.checkout(&buyer.who, hold.hold, methods::VISA));
    let outs = futures::future::join_all(tries).await;
    let order = order_of(&n.engine, &hold).await;
    let mut confirmed = 0;
    for out in &outs {
        match out {
            Ok(CheckoutOutcome::Confirmed(view)) => {
                assert_eq!(view.order_id, order.id, "one order: {outs:?}");
                confirmed += 1;
            }
            Ok(CheckoutOutcome::Pending(view)) => {
                assert_eq!(view.order_id, order.id, "one order: {outs:?}");
            }
            Err(EngineError::CheckoutInProgress) => {}
            other => panic!("unexpected answer {other:?} among {outs:?}"),
        }
    }
    assert!(confirmed >= 1, "{outs:?}");
    assert_eq!(order.state, OrderState::Confirmed);
    assert_eq!(money(&d, order.id).await, Some(ProviderState::Captured));
    let orders = boxoffice_engine::ports::Ledger::orders_of_buyer(&*d.ledger, buyer.who.buyer, 10)
        .await
        .unwrap();
    assert_eq!(orders.len(), 1, "one order for the hold: {orders:?}");
}
