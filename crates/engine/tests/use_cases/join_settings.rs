//! The rules a join is checked against come from each node's copy of the event's
//! waiting-room settings, not from a queue-store read per join. A change made on
//! another node reaches this node's checks within `public_doc_ttl_ms` (and not before:
//! the copy is what spares the read); a change made through a node, and an opening,
//! apply to that node's next join at once.

use std::sync::Arc;

use boxoffice_domain::Millis;
use boxoffice_engine::waiting::{Refusal, WaitingError, WaitingRules};
use boxoffice_engine::{EngineConfig, JoinOutcome};
use boxoffice_payment_fake::FakeGatewayConfig;
use boxoffice_store_memory::InMemoryQueue;

use super::{buyer, try_join};
use crate::common::*;

/// The copy's lifetime in these tests.
const TTL_MS: u64 = 500;

fn config() -> EngineConfig {
    let mut config = EngineConfig::default();
    config.waiting.public_doc_ttl_ms = TTL_MS;
    config
}

/// Two nodes sharing one queue store (as cluster nodes share Redis) and the ledger.
fn two_nodes(d: &Durable) -> (Node, Node) {
    let queue: Arc<dyn boxoffice_engine::ports::QueueStore> = Arc::new(InMemoryQueue::new());
    let a = node_sharing(d, config(), d.ledger.clone(), queue.clone());
    let b = node_sharing(d, config(), d.ledger.clone(), queue);
    (a, b)
}

fn pow_required(out: &Result<JoinOutcome, WaitingError>) -> bool {
    matches!(out, Err(WaitingError::Refused(Refusal::PowRequired)))
}

fn advance_ms(d: &Durable, ms: u64) {
    let now = d.clock.now();
    d.clock.set(Millis(now.0 + ms as i64));
}

#[boxoffice_testkit::test]
async fn a_rule_set_on_another_node_reaches_this_nodes_joins_within_the_ttl() {
    let d = Durable::new(FakeGatewayConfig::default());
    let (a, b) = two_nodes(&d);
    let event = open_event(&a.engine, 1, 4).await;
    // Node B joins a buyer, and so has a copy of the event's settings (none set).
    let first = buyer(&b.engine).await;
    try_join(&b.engine, event, &first)
        .await
        .expect("no rule yet");
    let pow = WaitingRules {
        pow_difficulty: 4,
        ..WaitingRules::default()
    };
    a.engine.set_waiting_rules(event, pow).await.expect("set");
    // The node that set the rule checks it at once.
    let on_a = try_join(&a.engine, event, &buyer(&a.engine).await).await;
    assert!(pow_required(&on_a), "{on_a:?}");
    // Node B checks against its copy until the copy is `TTL_MS` old: no store read.
    advance_ms(&d, TTL_MS - 1);
    let on_b = try_join(&b.engine, event, &buyer(&b.engine).await).await;
    assert!(on_b.is_ok(), "within the bound, the copy: {on_b:?}");
    advance_ms(&d, 1);
    let on_b = try_join(&b.engine, event, &buyer(&b.engine).await).await;
    assert!(pow_required(&on_b), "past the bound, the rule: {on_b:?}");
}

#[boxoffice_testkit::test]
async fn opening_the_sale_makes_the_node_read_the_settings_again() {
    let d = Durable::new(FakeGatewayConfig::default());
    let (a, b) = two_nodes(&d);
    let event = scheduled_event(&a.engine, 1, 4).await;
    try_join(&a.engine, event, &buyer(&a.engine).await)
        .await
        .expect("into the pool, no rule yet");
    let pow = WaitingRules {
        pow_difficulty: 4,
        ..WaitingRules::default()
    };
    b.engine.set_waiting_rules(event, pow).await.expect("set");
    a.engine.open_sale(event).await.expect("opened");
    // No time has passed: only the opening can have dropped node A's copy.
    let after = try_join(&a.engine, event, &buyer(&a.engine).await).await;
    assert!(pow_required(&after), "{after:?}");
}

/// A queue store that loses an event's settings before its sale opens (a Redis
/// flushed, or failed over to a replica without them) got them back only with the
/// line, at the opening: until then every join was checked against the default rules,
/// with the operator's proof of work off. They are put back from the ledger's copy.
#[boxoffice_testkit::test]
async fn rules_the_queue_store_lost_before_the_opening_still_apply() {
    let d = Durable::new(FakeGatewayConfig::default());
    let (a, b) = two_nodes(&d);
    let event = scheduled_event(&a.engine, 1, 4).await;
    let pow = WaitingRules {
        pow_difficulty: 4,
        ..WaitingRules::default()
    };
    a.engine.set_waiting_rules(event, pow).await.expect("set");
    let before = try_join(&b.engine, event, &buyer(&b.engine).await).await;
    assert!(pow_required(&before), "{before:?}");
    // The store loses the event; node B's copy of its settings runs out.
    b.engine
        .ports()
        .queue
        .drop_event(event)
        .await
        .expect("dropped");
    advance_ms(&d, TTL_MS);
    let after = try_join(&b.engine, event, &buyer(&b.engine).await).await;
    assert!(pow_required(&after), "{after:?}");
    let stats = a.engine.waiting_stats(event).await.expect("stats");
    assert_eq!(stats.rules.pow_difficulty, 4);
}
