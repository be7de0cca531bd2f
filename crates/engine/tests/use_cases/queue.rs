//! The waiting line: a buyer joins, waits for a batch, and is admitted to one event.

use boxoffice_domain::token::TokenError;
use boxoffice_engine::{EngineConfig, EngineError, WaitStatus};
use boxoffice_payment_fake::FakeGatewayConfig;

use super::{buyer, join};
use crate::common::*;

#[boxoffice_testkit::test]
async fn a_buyer_in_line_gets_an_admission_token_only_once_a_batch_admits_them() {
    let d = Durable::new(FakeGatewayConfig::default());
    let n = node(&d, EngineConfig::default());
    let event = open_event(&n.engine, 1, 4).await;
    let who = buyer(&n.engine).await;
    let ticket = join(&n.engine, event, &who).await;

    let waiting = n.engine.queue_status(&ticket).await.expect("the status");
    assert_eq!(waiting.status, WaitStatus::Waiting, "{waiting:?}");
    assert!(waiting.admission_token.is_none(), "{waiting:?}");

    n.engine.admit_batch(event).await.expect("a batch");
    let admitted = n.engine.queue_status(&ticket).await.expect("the status");
    assert_eq!(admitted.status, WaitStatus::Admitted, "{admitted:?}");
    let token = admitted.admission_token.expect("an admission token");
    let granted = n
        .engine
        .admitted(event, &token)
        .expect("the token verifies");
    assert_eq!(granted.who.buyer, who.buyer);
}

#[boxoffice_testkit::test]
async fn joining_twice_keeps_the_first_place_in_line() {
    let d = Durable::new(FakeGatewayConfig::default());
    let n = node(&d, EngineConfig::default());
    let event = open_event(&n.engine, 1, 4).await;
    let first = buyer(&n.engine).await;
    let second = buyer(&n.engine).await;
    let place = |ticket: String| {
        let engine = n.engine.clone();
        async move { engine.queue_status(&ticket).await.expect("status").position }
    };

    let at_first = place(join(&n.engine, event, &first).await).await;
    let behind = place(join(&n.engine, event, &second).await).await;
    let again = place(join(&n.engine, event, &first).await).await;
    assert!(
        at_first.is_some() && behind > at_first,
        "{at_first:?} {behind:?}"
    );
    assert_eq!(again, at_first, "a second join moved the buyer");
}

#[boxoffice_testkit::test]
async fn an_admission_token_admits_to_its_own_event_only() {
    let d = Durable::new(FakeGatewayConfig::default());
    let n = node(&d, EngineConfig::default());
    let event = open_event(&n.engine, 1, 4).await;
    let other = open_event(&n.engine, 1, 4).await;
    let who = buyer(&n.engine).await;
    let ticket = join(&n.engine, event, &who).await;
    n.engine.admit_batch(event).await.expect("a batch");
    let status = n.engine.queue_status(&ticket).await.expect("the status");
    let token = status.admission_token.expect("admitted");

    let refused = n.engine.admitted(other, &token);
    assert!(
        matches!(refused, Err(EngineError::BadToken(TokenError::WrongEvent))),
        "{refused:?}"
    );
    assert!(n.engine.admitted(event, &token).is_ok());
}

/// A queue store putting a lost line back writes its places before its admission
/// batches. A buyer whose admission had expired, polling in between (the node's public
/// document, still cached, says admitted), is told to retry, where they were given a
/// fresh admission counted from the line's last batch.
#[boxoffice_testkit::test]
async fn an_expired_admission_is_not_renewed_while_the_line_is_being_restored() {
    use std::sync::Arc;

    use boxoffice_domain::admission::Limit;
    use boxoffice_engine::ports::{QueueStore, RestoredLine};
    use boxoffice_engine::waiting::WaitingError;
    use boxoffice_store_memory::InMemoryQueue;

    let d = Durable::new(FakeGatewayConfig::default());
    let queue = Arc::new(InMemoryQueue::new());
    let mut config = EngineConfig::default();
    config.waiting.status_per_buyer = Limit { per_s: 0, burst: 0 };
    let n = node_sharing(&d, config, d.ledger.clone(), queue.clone());
    let event = open_event(&n.engine, 1, 4).await;
    let who = buyer(&n.engine).await;
    let ticket = join(&n.engine, event, &who).await;
    n.engine.admit_batch(event).await.expect("a batch");
    let first = n.engine.queue_status(&ticket).await.expect("admitted");
    assert!(first.admission_token.is_some());

    // Past the admission's lifetime, a later batch admits the next buyer.
    d.clock.advance_secs(901);
    let next = buyer(&n.engine).await;
    join(&n.engine, event, &next).await;
    n.engine.admit_batch(event).await.expect("a later batch");
    let expired = n.engine.queue_status(&ticket).await;
    assert!(
        matches!(
            expired,
            Err(WaitingError::Engine(EngineError::AdmissionExpired))
        ),
        "{expired:?}"
    );

    // The store loses the line; its restore has put the places back, not yet the batches.
    queue.drop_event(event).await.unwrap();
    let half = RestoredLine {
        positions: vec![(who.buyer, 1), (next.buyer, 2)],
        pool: Vec::new(),
        batches: Vec::new(),
    };
    queue.restore_line(event, &half).await.unwrap();
    let polled = n.engine.queue_status(&ticket).await;
    assert!(
        matches!(
            polled,
            Err(WaitingError::Engine(EngineError::Unavailable(_)))
        ),
        "{polled:?}"
    );
}

/// Five nodes tick the admission loop over one line, each every interval at its own
/// phase (as a cluster's nodes do over Redis): together they admit at the event's rate,
/// not faster. A batch used to be a whole interval's, and the first tick due after a
/// batch (0.8 of the interval on) took one, so nodes spread over the interval admitted
/// 1.25 times the rate.
#[boxoffice_testkit::test]
async fn nodes_ticking_at_their_own_phases_admit_at_the_rate_not_faster() {
    use std::sync::Arc;

    use boxoffice_domain::Millis;
    use boxoffice_engine::ports::QueueStore;
    use boxoffice_store_memory::{InMemoryArbiter, InMemoryQueue};

    const INTERVAL_MS: i64 = 100;
    const NODES: i64 = 5;
    const INTERVALS: i64 = 20;
    let d = Durable::new(FakeGatewayConfig::default());
    let (queue, arbiter) = (
        Arc::new(InMemoryQueue::new()),
        Arc::new(InMemoryArbiter::new()),
    );
    let config = EngineConfig {
        admission_interval_ms: INTERVAL_MS as u64,
        ..EngineConfig::default()
    };
    let nodes: Vec<_> = (0..NODES)
        .map(|_| {
            let q: Arc<dyn QueueStore> = queue.clone();
            node_sharing_hot(&d, config.clone(), d.ledger.clone(), q, arbiter.clone())
        })
        .collect();
    let engine = &nodes[0].engine;
    let event = open_event(engine, 1, 4).await;
    let rate = engine
        .event(event)
        .await
        .unwrap()
        .event
        .sale
        .admission_rate_per_s;
    let per_interval = i64::from(rate) * INTERVAL_MS / 1000;
    // More buyers in line than the nodes could let in at 1.25 times the rate.
    for _ in 0..(INTERVALS + 1) * per_interval * 3 / 2 {
        let who = buyer(engine).await;
        join(engine, event, &who).await;
    }
    let start = d.clock.now();
    for tick in 0..INTERVALS * NODES {
        // Node k ticks at k/NODES of each interval.
        let at = start.0 + tick * INTERVAL_MS / NODES;
        d.clock.set(Millis(at));
        nodes[(tick % NODES) as usize]
            .engine
            .admission_step()
            .await
            .expect("the admission step");
    }
    let admitted = queue.state(event).await.unwrap().serving_up_to as i64;
    // Over the run's time at the rate, plus the first batch (it admits an interval's).
    let run_ms = (INTERVALS * NODES - 1) * INTERVAL_MS / NODES;
    let at_rate = i64::from(rate) * run_ms / 1000 + per_interval;
    assert!(
        admitted <= at_rate + per_interval / 10,
        "{admitted} admitted in {run_ms} ms at {rate} a second (at most {at_rate})"
    );
    assert!(
        admitted >= at_rate - per_interval,
        "{admitted} admitted in {run_ms} ms at {rate} a second (about {at_rate})"
    );
}
