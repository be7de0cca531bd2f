//! Money and seats when two paths settle one order at once: the ledger's conditional
//! moves decide who wins, and the loser must not undo what the winner did.

mod common;

use std::sync::Arc;

use boxoffice_domain::{BuyerId, EventId, HoldId, HoldState, Millis, OrderEvent, OrderState};
use boxoffice_engine::ports::{
    ArbiterError, HoldRequest, HoldView, Retake, SeatChoice, StoreError,
};
use boxoffice_engine::{BuyerSession, CheckoutOutcome, EngineConfig, EngineError};
use boxoffice_payment_fake::{FakeGatewayConfig, methods};
use boxoffice_store_memory::{InMemoryArbiter, InMemoryQueue};
use boxoffice_testkit::hooked::{Hooked, Hooks};
use common::racing::Racing;
use common::*;

/// The sweep finds a payment the provider never heard of and ends the order unpaid. If
/// that move loses to a path that committed the order meanwhile, the hold, whose seats
/// the ledger has just sold, must stay as it is.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_unpaid_move_keeps_the_hold() {
    let d = Durable::new(FakeGatewayConfig::default());
    let racing = Arc::new(Racing::new(d.ledger.clone()));
    let n = node_with_ledger(&d, EngineConfig::default(), racing.clone());
    let event = open_event(&n.engine, 1, 4).await;
    let (who, h) = hold(&n.engine, event, &["A-1-1"]).await;
    // The provider never answers and never records it: 202, the hold kept pending.
    let pending = checkout(&n.engine, &who, &h, methods::TIMEOUT_BEFORE_CHARGE).await;
    assert!(
        matches!(pending, Ok(CheckoutOutcome::Pending(_))),
        "{pending:?}"
    );
    let o = order_of(&n.engine, &h).await;
    racing.commit_before(o.id, OrderEvent::Voided);
    d.clock.advance_secs(31);
    n.engine.recovery_step().await.expect("the sweep runs");
    assert_eq!(order(&n.engine, o.id).await.state, OrderState::Committed);
    assert_eq!(
        hold_state(&n.engine, &h).await,
        Some(HoldState::PaymentPending),
        "the committed order's hold must not be released"
    );
    assert_eq!(free(&n.engine, event, &["A-1-1"]).await, vec![false]);
}

/// The hot store let a buyer hold a seat the ledger had already sold (it was rebuilt
/// from a stale read, or lost a sale): the ledger refuses that buyer's order before any
/// card is authorized, and the hold must not hand the seat back to stock, where every
/// later buyer would meet it too: the seat the ledger sold becomes sold in the hot
/// store, the others go back.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_on_a_seat_the_ledger_sold_gets_seat_sold_before_payment_and_the_seat_is_marked_sold()
 {
    let d = Durable::new(FakeGatewayConfig::default());
    let n = node(&d, EngineConfig::default());
    let event = open_event(&n.engine, 1, 4).await;
    let (first, h1) = hold(&n.engine, event, &["A-1-1"]).await;
    let bought = checkout(&n.engine, &first, &h1, methods::VISA).await;
    assert!(
        matches!(bought, Ok(CheckoutOutcome::Confirmed(_))),
        "{bought:?}"
    );
    // The hot store forgets the sale: every seat free again.
    let layout = n.engine.event(event).await.expect("the event").layout();
    n.arbiter.load(&layout, &[]).await.expect("reloaded");
    let (second, h2) = hold(&n.engine, event, &["A-1-1", "A-1-2"]).await;
    let lost = checkout(&n.engine, &second, &h2, methods::VISA).await;
    assert!(matches!(lost, Err(EngineError::SeatSold)), "{lost:?}");
    // The ledger refused the order before the provider was asked (P5): no order, no
    // authorization to void.
    let written = n.engine.ports().ledger.order_of_hold(h2.hold).await;
    assert_eq!(written.expect("the ledger answers"), None);
    assert_eq!(
        sold_in_hot_store(&n.engine, event, &["A-1-1", "A-1-2"]).await,
        vec![true, false],
        "the seat the ledger sold is sold in the hot store"
    );
    assert_eq!(
        free(&n.engine, event, &["A-1-1", "A-1-2"]).await,
        vec![false, true]
    );
    let again = hold_for(&n.engine, event, &second, &["A-1-1"]).await;
    assert!(
        again.is_err(),
        "nobody can hold the sold seat again: {again:?}"
    );
}

/// A checkout's pin can lapse while the provider thinks (a slow provider, a long 3-D
/// Secure), and another buyer may then hold the seats. The authorization that comes
/// back must not be committed blindly: the seats are someone else's in the hot store,
/// so the order gives the money back and the other buyer can buy.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_checkout_rechecks_its_pin_before_committing() {
    let d = Durable::new(FakeGatewayConfig::default());
    let n = node(&d, EngineConfig::default());
    let event = open_event(&n.engine, 1, 4).await;
    let (slow, h1) = hold(&n.engine, event, &["A-1-1"]).await;
    n.payments.close_gate();
    let engine = n.engine.clone();
    let (who, hold1) = (slow.clone(), h1.clone());
    let paying = tokio::spawn(async move { checkout(&engine, &who, &hold1, methods::VISA).await });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while n.payments.waiting_at_gate() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the checkout never reached the provider"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    // The pin's grace runs out; another buyer takes the seat.
    d.clock.advance_secs(121);
    let (fast, h2) = hold(&n.engine, event, &["A-1-1"]).await;
    n.payments.open_gate(2);
    let late = tokio::time::timeout(std::time::Duration::from_secs(10), paying)
        .await
        .expect("the checkout finishes")
        .expect("the task runs");
    assert!(matches!(late, Err(EngineError::HoldExpired)), "{late:?}");
    assert_eq!(order_of(&n.engine, &h1).await.state, OrderState::Voided);
    let bought = checkout(&n.engine, &fast, &h2, methods::VISA).await;
    assert!(
        matches!(bought, Ok(CheckoutOutcome::Confirmed(_))),
        "{bought:?}"
    );
}

/// Another buyer waiting for the seats of one hold: the moment a release of that hold
/// frees them, they hold them.
struct Competitor {
    watched: std::sync::Mutex<Option<HoldId>>,
    at: Millis,
    took: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl Hooks for Competitor {
    async fn release(
        &self,
        store: &dyn SeatArbiter,
        hold: HoldId,
    ) -> Result<HoldView, ArbiterError> {
        let released = store.release(hold).await?;
        let watched = *self.watched.lock().unwrap();
        if watched == Some(hold) {
            let req = HoldRequest {
                hold: HoldId::random(hold.event),
                buyer: BuyerId::random(),
                choice: SeatChoice::Named(released.seats.clone()),
                expires_at: self.at.plus_secs(3_600),
                key: None,
            };
            let took = store.hold(&req, self.at).await.is_ok();
            self.took.store(took, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(released)
    }
}

/// A node whose engine reaches its hot store through `hooks`.
fn node_hooked<H: Hooks + 'static>(d: &Durable, hooks: H) -> (Node, Arc<Hooked<H>>) {
    let arbiter = Arc::new(InMemoryArbiter::new());
    let hooked = Arc::new(Hooked {
        inner: arbiter.clone(),
        hooks,
    });
    let queue = Arc::new(InMemoryQueue::new());
    let (ledger, config) = (d.ledger.clone(), EngineConfig::default());
    let n = node_reaching_hot_through(d, config, ledger, queue, hooked.clone(), arbiter);
    (n, hooked)
}

/// The hot store comes back with `h` held, its pin lost (a failover's replica).
async fn pin_lost(d: &Durable, n: &Node, event: EventId, who: &BuyerSession, h: &HoldView) {
    let layout = n.engine.event(event).await.expect("the event").layout();
    n.arbiter.load(&layout, &[]).await.expect("reloaded");
    let now = d.clock.now();
    let held = HoldRequest {
        hold: h.hold,
        buyer: who.buyer,
        choice: SeatChoice::Named(h.seats.clone()),
        expires_at: now.plus_secs(600),
        key: None,
    };
    n.arbiter.hold(&held, now).await.expect("held again");
}

/// The hot store loses a checkout's pin (a Redis failover whose replica had the hold
/// but not the pin) while its payment is open, and the buyer checks out again: the
/// retry pinned the hold for a second order the ledger refused (the hold has one), so
/// the first payment, once approved, found the hold pinned for another order and was
/// given back, and the buyer lost the seats they had paid for in time. The hold now
/// goes back to the first order, which then sells. It goes back in one step: given back
/// by a release and a retake, a competitor holding the seats the moment they were free
/// (as here) left the first payment nothing to sell.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_a_lost_pin_keeps_the_first_order_payable() {
    // Authorized at the provider; the answer never came back: the first order is open.
    let d = Durable::new(FakeGatewayConfig::default());
    let competitor = Competitor {
        watched: std::sync::Mutex::new(None),
        at: d.clock.now(),
        took: false.into(),
    };
    let (n, competitor) = node_hooked(&d, competitor);
    let (n, event, who, h, first) = authorized_answer_lost_on(n).await;
    assert_eq!(
        hold_state(&n.engine, &h).await,
        Some(HoldState::PaymentPending)
    );

    // The hot store comes back with the hold held, its pin lost.
    pin_lost(&d, &n, event, &who, &h).await;
    *competitor.hooks.watched.lock().unwrap() = Some(h.hold);

    // The retry is told of the first order, and the hold is pinned for it again.
    let retry = checkout(&n.engine, &who, &h, methods::VISA).await;
    match retry {
        Ok(CheckoutOutcome::Pending(view)) => assert_eq!(view.order_id, first.id),
        other => panic!("the retry answered {other:?}"),
    }
    let pinned = hot_hold(&n.engine, &h).await.expect("the hold");
    assert_eq!(pinned.order, Some(first.id));
    assert!(
        !competitor
            .hooks
            .took
            .load(std::sync::atomic::Ordering::SeqCst),
        "the first order's seats were free for a moment"
    );

    // The sweep finds the first payment approved and sells the seats.
    d.clock.advance_secs(31);
    recover_until_idle(&n.engine, 10).await;
    assert_eq!(
        order(&n.engine, first.id).await.state,
        OrderState::Confirmed
    );
    assert_eq!(hold_state(&n.engine, &h).await, Some(HoldState::Sold));
    let labels = ["A-1-1", "A-1-2"];
    assert_eq!(
        sold_in_hot_store(&n.engine, event, &labels).await,
        vec![true, true]
    );
}

/// The hot store whose answers to retakes are lost after they ran (a reply that timed
/// out after a failover).
struct RetakeAnswerLost;

#[async_trait::async_trait]
impl Hooks for RetakeAnswerLost {
    async fn retake(
        &self,
        store: &dyn SeatArbiter,
        req: &Retake,
        now: Millis,
    ) -> Result<HoldView, ArbiterError> {
        store.retake(req, now).await?;
        Err(ArbiterError::Store(StoreError(
            "the reply timed out".into(),
        )))
    }
}

/// As above, but the give-back's repin ran and its answer was lost. Taken for a failure,
/// the hold was released: the first order's seats free for anyone, its approval then
/// finding no pinned hold. The hold is read back first and kept.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repin_whose_answer_was_lost_keeps_the_hold_for_the_first_order() {
    let d = Durable::new(FakeGatewayConfig::default());
    let (n, _) = node_hooked(&d, RetakeAnswerLost);
    let (n, event, who, h, first) = authorized_answer_lost_on(n).await;
    pin_lost(&d, &n, event, &who, &h).await;
    let retry = checkout(&n.engine, &who, &h, methods::VISA).await;
    assert!(
        matches!(retry, Ok(CheckoutOutcome::Pending(_))),
        "{retry:?}"
    );
    let pinned = hot_hold(&n.engine, &h).await.expect("the hold");
    assert_eq!(
        (pinned.order, pinned.state),
        (Some(first.id), HoldState::CheckingOut),
        "the repinned hold is kept"
    );
    assert_eq!(
        free(&n.engine, event, &["A-1-1", "A-1-2"]).await,
        vec![false, false]
    );
}

/// A payment that arrives after its order ended unpaid is voided when its webhook comes;
/// when that void failed, the webhook was counted as handled and the order, being
/// final, is never swept again: the buyer's funds stayed held with no ticket until the
/// authorization lapsed. The failure now answers the webhook with an error, so the
/// provider delivers it again, and the void is made then.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_void_of_a_late_authorization_is_made_when_the_webhook_comes_again() {
    use boxoffice_engine::ports::{AuthorizeRequest, PaymentGateway, ProviderState};
    use boxoffice_payment_fake::Op;

    let d = Durable::new(FakeGatewayConfig::default());
    let n = node(&d, EngineConfig::default());
    let event = open_event(&n.engine, 1, 4).await;
    let (who, h) = hold(&n.engine, event, &["A-1-1"]).await;
    // The provider never heard of the payment: the sweep ends the order unpaid.
    let out = checkout(&n.engine, &who, &h, methods::TIMEOUT_BEFORE_CHARGE).await;
    assert!(matches!(out, Ok(CheckoutOutcome::Pending(_))), "{out:?}");
    let o = order_of(&n.engine, &h).await;
    d.clock.advance_secs(31);
    recover_until_idle(&n.engine, 10).await;
    let ended = order(&n.engine, o.id).await.state;
    assert!(ended.is_final() && !ended.holds_seats(), "{ended:?}");

    // The authorization the provider was still working on arrives late.
    let late = AuthorizeRequest {
        order: o.id,
        amount: o.total,
        currency: o.currency.clone(),
        payment_method: methods::VISA.into(),
    };
    d.fake.authorize(&late).await.expect("authorized late");
    let webhook = (d.fake.undelivered_webhooks(100).await)
        .expect("the outbox")
        .pop()
        .expect("the authorization's webhook");
    let signature = d.fake.sign(webhook.payload.as_bytes(), d.clock.now());

    d.fake.fail_next(Op::Void, 1);
    let first = n
        .engine
        .handle_webhook(webhook.payload.as_bytes(), &signature)
        .await;
    assert!(
        first.is_err(),
        "a failed void must fail the webhook: {first:?}"
    );
    let record = d.fake.record(o.id).await.unwrap().expect("the payment");
    assert_eq!(record.to_port().state, ProviderState::Authorized);

    let again = n
        .engine
        .handle_webhook(webhook.payload.as_bytes(), &signature)
        .await;
    assert!(again.is_ok(), "{again:?}");
    let record = d.fake.record(o.id).await.unwrap().expect("the payment");
    assert_eq!(record.to_port().state, ProviderState::Voided);
    assert_eq!(order(&n.engine, o.id).await.state, ended);
}
