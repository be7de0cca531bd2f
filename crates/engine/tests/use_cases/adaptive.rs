//! The adaptive admission rate in a cluster: every node ticks each interval and reads
//! its own health, and the rate they share steps once an interval, not once a node.

use std::sync::Arc;

use boxoffice_domain::Millis;
use boxoffice_domain::admission::RateReason;
use boxoffice_engine::EngineConfig;
use boxoffice_engine::waiting::{AdmissionControl, AdmissionMode, CurrentRate, Signal};
use boxoffice_payment_fake::FakeGatewayConfig;
use boxoffice_store_memory::{InMemoryArbiter, InMemoryQueue};

use crate::common::*;

/// Each node's tick not due for a batch chose the adaptive rate again from its own
/// health, so two nodes with slow holds halved the rate twice an interval (40 → 10)
/// where one node halves it once (40 → 20).
#[boxoffice_testkit::test]
async fn nodes_ticking_within_one_interval_step_the_adaptive_rate_once() {
    let d = Durable::new(FakeGatewayConfig::default());
    let queue: Arc<dyn boxoffice_engine::ports::QueueStore> = Arc::new(InMemoryQueue::new());
    let config = EngineConfig::default();
    let interval = config.admission_interval_ms as i64;
    // As cluster nodes share Redis: the line, the settings and the seats.
    let hot = Arc::new(InMemoryArbiter::new());
    let a = node_sharing_hot(
        &d,
        config.clone(),
        d.ledger.clone(),
        queue.clone(),
        hot.clone(),
    );
    let b = node_sharing_hot(&d, config, d.ledger.clone(), queue, hot);
    let event = open_event(&a.engine, 1, 4).await;
    let adaptive = AdmissionControl {
        mode: AdmissionMode::Adaptive,
        rate_per_s: Some(40),
        ..AdmissionControl::default()
    };
    a.engine.set_admission(event, adaptive).await.expect("set");
    let slow = || {
        for node in [&a, &b] {
            for _ in 0..50 {
                node.engine.record_health(Signal::Hold { ms: 2_000.0 });
            }
        }
    };
    let rate = async |node: &Node| node.engine.waiting_stats(event).await.expect("stats").rate;
    let narrowed = |rate_per_s| CurrentRate {
        rate_per_s,
        reason: RateReason::HoldLatencyHigh,
    };
    slow();
    a.engine.admission_step().await.expect("ticked");
    assert_eq!(rate(&a).await, narrowed(20));
    // The other node's tick in the same interval, and this node's again: it stands.
    let later = |ms: i64| d.clock.set(Millis(d.clock.now().0 + ms));
    later(interval / 2);
    b.engine.admission_step().await.expect("ticked");
    a.engine.admission_step().await.expect("ticked");
    assert_eq!(rate(&b).await, narrowed(20), "stepped once this interval");
    // The next interval steps again, whichever node ticks first.
    later(interval / 2);
    slow();
    b.engine.admission_step().await.expect("ticked");
    assert_eq!(rate(&a).await, narrowed(10));
    a.engine.admission_step().await.expect("ticked");
    assert_eq!(rate(&a).await, narrowed(10));
}
