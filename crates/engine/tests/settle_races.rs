//! Money and seats when two paths settle one order at once: the ledger's conditional
//! moves decide who wins, and the loser must not undo what the winner did.

mod common;

use std::sync::Arc;

use boxoffice_domain::{HoldState, OrderEvent, OrderState};
use boxoffice_engine::{CheckoutOutcome, EngineConfig};
use boxoffice_payment_fake::{FakeGatewayConfig, methods};
use common::racing::Racing;
use common::*;

/// The sweep finds a payment the provider never heard of and ends the order unpaid. If
/// that move loses to a path that committed the order meanwhile, the hold, whose seats
/// the ledger has just sold, must stay as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_unpaid_move_keeps_the_hold() {
    let d = Durable::new(FakeGatewayConfig::default());
    let racing = Arc::new(Racing::new(d.ledger.clone()));
    let n = node_with_ledger(&d, EngineConfig::default(), racing.clone());
    let event = open_event(&n.engine, 1, 4).await;
    let (who, h) = hold(&n.engine, event, &["A-1-1"]).await;
    // The provider never answers and never records it: 202, the hold kept pending.
    let pending = checkout(&n.engine, &who, &h, methods::TIMEOUT_BEFORE_CHARGE).await;
    assert!(matches!(pending, Ok(CheckoutOutcome::Pending(_))), "{pending:?}");
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
