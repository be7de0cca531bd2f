//! A committed sale whose payment can no longer be captured ends cancelled: no tickets,
//! no charge, its seats back on sale exactly once, and the buyer told in plain words.

mod common;

use boxoffice_domain::OrderState;
use boxoffice_engine::ports::{ProviderState, SeatArbiter};
use boxoffice_engine::{CheckoutOutcome, EngineConfig, OrderView};
use boxoffice_payment_fake::{FakeGatewayConfig, methods};
use common::*;

/// The provider let the authorization lapse while capture was failing: the sale is
/// cancelled, its seats go back to stock in the ledger and in the hot store, and the
/// order view says what happened. A later sale of a seat is not undone by the sweep.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncapturable_order_ends_voided_with_its_seats_back() {
    let d = Durable::new(FakeGatewayConfig::default());
    let n = node(&d, EngineConfig::default());
    let event = open_event(&n.engine, 1, 4).await;
    let (who, h) = hold(&n.engine, event, &["A-1-1", "A-1-2"]).await;
    d.fake.fail_next_capture(1);
    let out = checkout(&n.engine, &who, &h, methods::VISA).await;
    assert!(matches!(out, Ok(CheckoutOutcome::Confirmed(_))), "{out:?}");
    let o = order_of(&n.engine, &h).await;
    assert_eq!(o.state, OrderState::PendingCapture);
    d.fake.expire_authorization(o.id).await.expect("lapsed");
    d.clock.advance_secs(31);
    n.engine.recovery_step().await.expect("the sweep runs");

    let ended = order(&n.engine, o.id).await;
    assert_eq!(ended.state.as_str(), "cancelled");
    assert!(!ended.state.holds_seats() && ended.state.is_final());
    let view = OrderView::from(&ended);
    assert!(
        view.tickets.is_empty() && view.payment == "none",
        "{view:?}"
    );
    assert!(view.message.contains("cancelled"), "{}", view.message);
    let sold = n
        .engine
        .ports()
        .ledger
        .sold_seats(event)
        .await
        .expect("read");
    assert!(sold.is_empty(), "the ledger gave the seats back: {sold:?}");
    assert_eq!(
        free(&n.engine, event, &["A-1-1", "A-1-2"]).await,
        vec![true, true]
    );

    // Someone buys one of the seats; the sweep, running again, leaves that sale alone.
    let (next, h2) = hold(&n.engine, event, &["A-1-1"]).await;
    let bought = checkout(&n.engine, &next, &h2, methods::VISA).await;
    assert!(
        matches!(bought, Ok(CheckoutOutcome::Confirmed(_))),
        "{bought:?}"
    );
    d.clock.advance_secs(7_200);
    recover_until_idle(&n.engine, 10).await;
    assert_eq!(order(&n.engine, o.id).await.state, ended.state);
    let labels = ["A-1-1", "A-1-2"];
    assert_eq!(
        sold_in_hot_store(&n.engine, event, &labels).await,
        vec![true, false]
    );
    let c = n.arbiter.counts(event).await.expect("counts");
    assert_eq!((c.free, c.held, c.sold), (c.capacity - 1, 0, 1));
    let report = n.engine.audit().await.expect("audited");
    assert!(report.clean(), "{:?}", report.violations);
}

/// Capture keeps failing with the authorization still there: after the configured
/// number of retries the sale is cancelled and the authorization released.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capture_that_keeps_failing_is_cancelled_after_its_attempts() {
    let d = Durable::new(FakeGatewayConfig::default());
    let config = EngineConfig {
        capture_max_attempts: 2,
        ..EngineConfig::default()
    };
    let n = node(&d, config);
    let event = open_event(&n.engine, 1, 4).await;
    let (who, h) = hold(&n.engine, event, &["A-1-1"]).await;
    d.fake.fail_next_capture(1_000);
    let out = checkout(&n.engine, &who, &h, methods::VISA).await;
    assert!(matches!(out, Ok(CheckoutOutcome::Confirmed(_))), "{out:?}");
    let o = order_of(&n.engine, &h).await;
    for _ in 0..6 {
        d.clock.advance_secs(3_600);
        n.engine.recovery_step().await.expect("the sweep runs");
    }
    assert_eq!(order(&n.engine, o.id).await.state.as_str(), "cancelled");
    let record = d.fake.record(o.id).await.expect("read").expect("a record");
    assert_eq!(
        record.state,
        ProviderState::Voided,
        "the authorization is released"
    );
    assert_eq!(free(&n.engine, event, &["A-1-1"]).await, vec![true]);
    let report = n.engine.audit().await.expect("audited");
    assert!(report.clean(), "{:?}", report.violations);
}

/// The process died between the commit and the capture (the order `committed`, its
/// capture never tried), and meanwhile the provider let the authorization lapse: the
/// sweep's capture is refused for good, and the sale ends cancelled with its seats back,
/// where it stayed `committed` (seats sold, nothing charged) and failed again on every
/// pass.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_committed_order_whose_authorization_lapsed_is_cancelled() {
    use boxoffice_domain::OrderEvent;
    use boxoffice_engine::ports::{Commit, CommitOutcome};

    let d = Durable::new(FakeGatewayConfig::default());
    let (n, event, _, _, o) = authorized_answer_lost(&d).await;
    let record = d.fake.record(o.id).await.unwrap().expect("authorized");
    // What a checkout that died after its commit left behind.
    let ledger = &n.engine.ports().ledger;
    let now = d.clock.now();
    (ledger.apply(o.id, OrderEvent::Authorized, Some(&record.reference), now))
        .await
        .expect("authorized");
    let commit = Commit {
        order: o.id,
        max_per_buyer: 4,
        now,
    };
    let committed = ledger.commit(&commit).await.expect("committed");
    assert_eq!(committed, CommitOutcome::Committed);
    assert_eq!(order(&n.engine, o.id).await.state, OrderState::Committed);
    d.fake.expire_authorization(o.id).await.expect("lapsed");

    d.clock.advance_secs(31);
    recover_until_idle(&n.engine, 10).await;
    let ended = order(&n.engine, o.id).await;
    assert_eq!(ended.state, OrderState::Cancelled);
    let sold = ledger.sold_seats(event).await.expect("read");
    assert!(sold.is_empty(), "the ledger gave the seats back: {sold:?}");
    assert_eq!(
        free(&n.engine, event, &["A-1-1", "A-1-2"]).await,
        vec![true, true]
    );
    let payment = d.fake.record(o.id).await.unwrap().expect("kept");
    assert_eq!(payment.state, ProviderState::Voided, "nothing was charged");
}

/// Two nodes over one ledger: node A cancels the event and its refund job finishes
/// (nothing was sold), while node B still has the sale cached as open. A checkout on B
/// of a hold taken there is refused when its order is written, and nobody is charged,
/// where it was sold and charged after the job had looked, and never refunded.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkout_on_a_node_that_missed_the_cancellation_is_refused_before_any_charge() {
    let d = Durable::new(FakeGatewayConfig::default());
    let a = node(&d, EngineConfig::default());
    let b = node(&d, EngineConfig::default());
    let event = open_event(&a.engine, 1, 4).await;
    b.engine.load_open_events().await.expect("B has the event");
    let (who, h) = hold(&b.engine, event, &["A-1-1"]).await;

    a.engine.cancel_event(event).await.expect("cancelled");
    let job = cancellation_finished(&d, &a.engine, event).await;
    assert!(job.finished_at.is_some(), "{job:?}");

    let out = checkout(&b.engine, &who, &h, methods::VISA).await;
    assert!(
        matches!(out, Err(boxoffice_engine::EngineError::EventCancelled)),
        "{out:?}"
    );
    assert_eq!(
        b.engine.ports().ledger.order_of_hold(h.hold).await.unwrap(),
        None
    );
    let sold = b
        .engine
        .ports()
        .ledger
        .sold_seats(event)
        .await
        .expect("read");
    assert!(sold.is_empty(), "{sold:?}");
    let payments = boxoffice_engine::ports::PaymentGateway::all_payments(&*d.fake)
        .await
        .expect("the book");
    assert!(payments.is_empty(), "nobody was charged: {payments:?}");
}

/// An order whose write was under way when the event was cancelled (its statement
/// began before the cancellation committed, so the ledger's guard did not refuse it)
/// becomes visible only after the job's first pass went through the event's orders.
/// A later pass finds it and refunds it, where the job ended after the first pass and
/// the buyer kept a paid ticket for a cancelled event.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_committed_after_the_cancellations_first_pass_is_refunded_by_a_later_one() {
    let (d, racing, n, event, o) = sold_over_a_racing_ledger().await;
    racing.uncommitted(o.id);

    n.engine.cancel_event(event).await.expect("cancelled");
    // The first pass, all of it: it sees no order.
    steps_until_idle(&n.engine).await;
    let job = n.engine.event_cancellation(event).await.expect("the job");
    assert_eq!((job.pass, job.counts.seen), (1, 0), "{job:?}");
    assert_eq!(job.finished_at, None, "the first pass does not end the job");

    racing.committed();
    let job = cancellation_finished(&d, &n.engine, event).await;
    assert!(job.pass >= 2, "{job:?}");
    assert_eq!(order(&n.engine, o.id).await.state, OrderState::Refunded);
    let payment = d.fake.record(o.id).await.unwrap().expect("kept");
    assert_eq!(
        payment.state,
        ProviderState::Refunded,
        "the money went back"
    );
    let sold = n
        .engine
        .ports()
        .ledger
        .sold_seats(event)
        .await
        .expect("read");
    assert!(sold.is_empty(), "{sold:?}");
    let report = n.engine.audit().await.expect("audited");
    assert!(report.clean(), "{:?}", report.violations);
}

/// A later pass came `recovery_after_s` after the last one, which an operator may set
/// below the ledger's statement timeout: a write under way at the cancellation could
/// then commit after a second pass that found nothing, and the job ended without it.
/// The pass now also waits out the statement timeout (and a second more).
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_pass_waits_out_the_ledgers_statement_timeout() {
    let config = EngineConfig {
        recovery_after_s: 1,
        ledger_statement_timeout_ms: 10_000,
        ..EngineConfig::default()
    };
    let (d, racing, n, event, o) = sold_over_a_racing_ledger_with(config).await;
    racing.uncommitted(o.id);
    n.engine.cancel_event(event).await.expect("cancelled");
    steps_until_idle(&n.engine).await;
    // Past `recovery_after_s`, within the statement timeout: the write may still be
    // running, so no pass starts.
    d.clock.advance_secs(5);
    steps_until_idle(&n.engine).await;
    let job = n.engine.event_cancellation(event).await.expect("the job");
    assert_eq!((job.pass, job.finished_at), (1, None), "{job:?}");
    // The write commits within its timeout; the pass after the timeout finds it.
    racing.committed();
    d.clock.advance_secs(7);
    let job = cancellation_finished(&d, &n.engine, event).await;
    assert!(job.pass >= 2, "{job:?}");
    assert_eq!(order(&n.engine, o.id).await.state, OrderState::Refunded);
    let payment = d.fake.record(o.id).await.unwrap().expect("kept");
    assert_eq!(payment.state, ProviderState::Refunded);
}

/// Cancellation steps until one finds nothing to do (a pass has gone as far as it can
/// for now), at most ten.
async fn steps_until_idle(engine: &boxoffice_engine::Engine) {
    for _ in 0..10 {
        if engine
            .event_cancellation_step()
            .await
            .expect("a step")
            .idle()
        {
            break;
        }
    }
}

/// Runs the event's cancellation job on `engine` until it ends, moving the clock past
/// the wait between passes (`recovery_after_s`, or the ledger's statement timeout and a
/// second) whenever a pass has gone as far as it can.
async fn cancellation_finished(
    d: &Durable,
    engine: &boxoffice_engine::Engine,
    event: boxoffice_domain::EventId,
) -> boxoffice_engine::ports::EventCancellation {
    let c = engine.config();
    let wait = (c.recovery_after_s as i64).max(c.ledger_statement_timeout_ms as i64 / 1000 + 1) + 1;
    for _ in 0..5 {
        steps_until_idle(engine).await;
        let job = engine.event_cancellation(event).await.expect("the job");
        if job.finished_at.is_some() {
            return job;
        }
        d.clock.advance_secs(wait);
    }
    panic!("the cancellation did not end in five passes");
}

/// The hot store lost the event and a rebuild read the ledger's sold seats; a refund
/// landed before the rebuild loaded them (and found no event to give its seat back
/// to). The seat is free once the rebuild is done, where it stayed sold in the hot
/// store, free in the ledger, for good.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sale_undone_during_a_rebuild_has_its_seat_back_after_it() {
    use boxoffice_engine::Canceller;

    let (_d, racing, n, event, o) = sold_over_a_racing_ledger().await;
    n.arbiter
        .unload(event)
        .await
        .expect("the hot store lost it");

    let (held, release) = racing.hold_next_sold_seats();
    let engine = n.engine.clone();
    let rebuild = tokio::spawn(async move { engine.rebuild(event).await });
    held.notified().await;
    let refunded = n.engine.cancel_order(o.id, Canceller::Operator).await;
    assert_eq!(refunded.expect("refunded").status.as_str(), "refunded");
    release.notify_one();
    rebuild.await.unwrap().expect("rebuilt");

    assert_eq!(free(&n.engine, event, &["A-1-1"]).await, vec![true]);
    let c = n.arbiter.counts(event).await.expect("counts");
    assert_eq!((c.sold, c.held), (0, 0));
    let report = n.engine.audit().await.expect("audited");
    assert!(report.clean(), "{:?}", report.violations);
}

/// The hot store had lost a sale (drift), and the repair read the ledger's sold seats;
/// a refund then freed the seat in the ledger (its return to the hot store found it not
/// sold there, and left it), and the repair marked it sold from its read. The seat
/// stayed sold in the hot store, free in the ledger, for good: the repair only reports
/// that direction. The repair now reads the ledger again after marking.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sale_undone_during_a_drift_repair_has_its_seat_back_after_it() {
    use boxoffice_engine::Canceller;

    let (_d, racing, n, event, o) = sold_over_a_racing_ledger().await;
    let layout = n.engine.event(event).await.expect("the event").layout();
    n.arbiter.load(&layout, &[]).await.expect("the sale lost");

    let (held, release) = racing.hold_next_sold_seats();
    let engine = n.engine.clone();
    let repair = tokio::spawn(async move { engine.drift_repair_step().await });
    held.notified().await;
    let refunded = n.engine.cancel_order(o.id, Canceller::Operator).await;
    assert_eq!(refunded.expect("refunded").status.as_str(), "refunded");
    release.notify_one();
    repair.await.unwrap().expect("repaired");

    assert_eq!(free(&n.engine, event, &["A-1-1"]).await, vec![true]);
    let c = n.arbiter.counts(event).await.expect("counts");
    assert_eq!((c.sold, c.held), (0, 0));
    let report = n.engine.audit().await.expect("audited");
    assert!(report.clean(), "{:?}", report.violations);
}

/// A node over a ledger the test can race (`Racing`), with seat A-1-1 of a new event
/// sold: its durable parts, the ledger, the node, the event and the order.
async fn sold_over_a_racing_ledger() -> Racy {
    sold_over_a_racing_ledger_with(EngineConfig::default()).await
}

/// What `sold_over_a_racing_ledger` answers.
type Racy = (
    Durable,
    std::sync::Arc<common::racing::Racing>,
    Node,
    boxoffice_domain::EventId,
    boxoffice_engine::ports::Order,
);

/// As `sold_over_a_racing_ledger`, the node's engine set by `config`.
async fn sold_over_a_racing_ledger_with(config: EngineConfig) -> Racy {
    let d = Durable::new(FakeGatewayConfig::default());
    let racing = std::sync::Arc::new(common::racing::Racing::new(d.ledger.clone()));
    let n = node_with_ledger(&d, config, racing.clone());
    let event = open_event(&n.engine, 1, 4).await;
    let (who, h) = hold(&n.engine, event, &["A-1-1"]).await;
    let out = checkout(&n.engine, &who, &h, methods::VISA).await;
    assert!(matches!(out, Ok(CheckoutOutcome::Confirmed(_))), "{out:?}");
    let o = order_of(&n.engine, &h).await;
    (d, racing, n, event, o)
}
