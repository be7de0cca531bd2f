//! The recovery sweep: it reaches every unfinished order however many wait ahead of it,
//! spaces its attempts at one order with a backoff kept in the ledger, paces its calls
//! to the provider, and settles a backlog concurrently within that bound.

mod common;

use std::time::{Duration, Instant};

use boxoffice_domain::OrderState;
use boxoffice_engine::{CheckoutOutcome, EngineConfig};
use boxoffice_payment_fake::{FakeGatewayConfig, methods};
use common::*;

/// `n` buyers each holding one seat of `event` (seats in label order from `from`) and
/// checking out with `method`; returns the holds.
async fn checkouts(
    n: &Node,
    event: boxoffice_domain::EventId,
    from: usize,
    count: usize,
    method: &str,
) -> Vec<boxoffice_engine::ports::HoldView> {
    let labels = labels(from + count);
    let mut holds = Vec::new();
    for label in &labels[from..] {
        let (who, h) = hold(&n.engine, event, &[label.as_str()]).await;
        let out = checkout(&n.engine, &who, &h, method).await;
        assert!(
            matches!(
                out,
                Ok(CheckoutOutcome::Pending(_) | CheckoutOutcome::ActionRequired(..))
            ),
            "{out:?}"
        );
        holds.push(h);
    }
    holds
}

/// More orders wait (buyers still at their bank's 3-D Secure page, pinned) than the
/// sweep reads in one page; an order behind them that can be settled at once must not
/// starve behind them.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_reaches_orders_beyond_the_first_page() {
    let d = Durable::new(FakeGatewayConfig::default());
    let n = node(&d, EngineConfig::default());
    let event = open_event(&n.engine, 21, 4).await;
    checkouts(&n, event, 0, 205, methods::THREE_D_SECURE).await;
    d.clock.advance_secs(1);
    let last = checkouts(&n, event, 205, 1, methods::TIMEOUT_BEFORE_CHARGE).await;
    let target = order_of(&n.engine, &last[0]).await;
    // Everyone is idle long enough to be swept; the 3-D Secure pins still hold.
    d.clock.advance_secs(31);
    n.engine.recovery_step().await.expect("the sweep runs");
    let after = order(&n.engine, target.id).await;
    assert_eq!(
        after.state,
        OrderState::Voided,
        "the order behind the first page"
    );
    assert_eq!(free(&n.engine, event, &["A-21-6"]).await, vec![true]);
}

/// An attempt that did not finish an order spaces the next one, and the wait is kept in
/// the ledger: a restarted node does not ask the provider again before it is due.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recovery_attempt_waits_its_backoff_across_a_restart() {
    let d = Durable::new(FakeGatewayConfig::default());
    let first = node(&d, EngineConfig::default());
    let event = open_event(&first.engine, 1, 4).await;
    checkouts(&first, event, 0, 1, methods::THREE_D_SECURE).await;
    d.clock.advance_secs(31);
    first.engine.recovery_step().await.expect("the sweep runs");
    assert_eq!(first.payments.calls(), 2, "authorize, then one inquiry");
    drop(first);
    let restarted = node(&d, EngineConfig::default());
    restarted.engine.load_open_events().await.expect("rebuilt");
    d.clock.advance_secs(10);
    restarted
        .engine
        .recovery_step()
        .await
        .expect("the sweep runs");
    assert_eq!(
        restarted.payments.calls(),
        0,
        "not due yet: the provider is left alone"
    );
    d.clock.advance_secs(25);
    restarted
        .engine
        .recovery_step()
        .await
        .expect("the sweep runs");
    assert!(restarted.payments.calls() > 0, "due again after its wait");
}

/// The sweep starts at most `recovery_calls_per_s` provider calls a second, however
/// many orders are due.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_calls_to_the_provider_keep_the_configured_rate() {
    let d = Durable::new(FakeGatewayConfig::default());
    let config = EngineConfig {
        recovery_calls_per_s: Some(20),
        ..EngineConfig::default()
    };
    let n = node(&d, config);
    let event = open_event(&n.engine, 3, 4).await;
    // Each is settled by one inquiry (the provider never heard of it).
    let holds = checkouts(&n, event, 0, 21, methods::TIMEOUT_BEFORE_CHARGE).await;
    d.clock.advance_secs(31);
    let started = Instant::now();
    n.engine.recovery_step().await.expect("the sweep runs");
    let took = started.elapsed();
    for h in &holds {
        assert_eq!(order_of(&n.engine, h).await.state, OrderState::Voided);
    }
    // 21 calls at 20 a second: the last starts a second after the first.
    assert!(took >= Duration::from_millis(1_000), "took {took:?}");
}

/// Orders left mid-checkout by a crash are settled concurrently after the restart: more
/// than one provider call in flight, never more than the configured bound.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_settles_orders_concurrently_within_the_provider_bound() {
    let d = Durable::new(FakeGatewayConfig {
        latency_ms: 50,
        ..FakeGatewayConfig::default()
    });
    let config = EngineConfig {
        recovery_in_flight: 4,
        recovery_calls_per_s: Some(0),
        ..EngineConfig::default()
    };
    let before = node(&d, config.clone());
    let event = open_event(&before.engine, 3, 4).await;
    // The provider authorized each but its answer was lost: all wait for the sweep.
    let holds = checkouts(&before, event, 0, 24, methods::TIMEOUT_AFTER_CHARGE).await;
    drop(before);
    let after = node(&d, config);
    after.engine.load_open_events().await.expect("rebuilt");
    d.clock.advance_secs(31);
    recover_until_idle(&after.engine, 10).await;
    for h in &holds {
        assert_eq!(order_of(&after.engine, h).await.state, OrderState::Voided);
    }
    let most = after.payments.most_in_flight();
    assert!(most > 1, "settled one at a time ({most} in flight at most)");
    assert!(most <= 4, "{most} calls in flight, over the bound of 4");
}
