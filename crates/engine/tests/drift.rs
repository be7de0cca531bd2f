//! The hot store drifting from the ledger, and the worker step that repairs it.

mod common;

use boxoffice_domain::HoldState;
use boxoffice_engine::{AuditReport, CheckoutOutcome, EngineConfig};
use boxoffice_payment_fake::{FakeGatewayConfig, methods};
use common::*;

/// Seats the ledger sold but the hot store offers (free) or lets someone hold are marked
/// sold there by the repair step, which ends the holds on them; a second step finds
/// nothing left to do.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_repair_marks_ledger_sold_seats_sold_in_the_hot_store() {
    let d = Durable::new(FakeGatewayConfig::default());
    let n = node(&d, EngineConfig::default());
    let event = open_event(&n.engine, 1, 4).await;
    for seat in ["A-1-1", "A-1-2"] {
        let (who, h) = hold(&n.engine, event, &[seat]).await;
        let bought = checkout(&n.engine, &who, &h, methods::VISA).await;
        assert!(
            matches!(bought, Ok(CheckoutOutcome::Confirmed(_))),
            "{bought:?}"
        );
    }
    // The hot store loses both sales; a buyer then holds one of the seats.
    let layout = n.engine.event(event).await.expect("the event").layout();
    n.arbiter.load(&layout, &[]).await.expect("reloaded");
    let (_, stale) = hold(&n.engine, event, &["A-1-2", "A-1-3"]).await;
    let mut before = AuditReport::default();
    n.engine
        .audit_hot_store(&mut before)
        .await
        .expect("audited");
    assert_eq!(before.violations.len(), 2, "{:?}", before.violations);

    let step = n.engine.drift_repair_step().await.expect("the step runs");
    assert_eq!(step.done, 2, "two seats repaired");
    let labels = ["A-1-1", "A-1-2", "A-1-3"];
    assert_eq!(
        sold_in_hot_store(&n.engine, event, &labels).await,
        vec![true, true, false]
    );
    assert_eq!(
        hold_state(&n.engine, &stale).await,
        Some(HoldState::Released)
    );
    assert_eq!(
        free(&n.engine, event, &labels).await,
        vec![false, false, true]
    );
    let mut after = AuditReport::default();
    n.engine.audit_hot_store(&mut after).await.expect("audited");
    assert!(after.violations.is_empty(), "{:?}", after.violations);
    assert!(n.engine.drift_repair_step().await.expect("runs").idle());
}
