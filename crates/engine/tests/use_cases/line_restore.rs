//! A join whose journal write is still in flight when another node puts the lost line
//! back from the ledger (two engines sharing one queue store and one ledger, the first
//! one's journal write held between its position draw and the ledger). Whichever
//! write reaches the ledger first keeps the position; the other joiner is placed again
//! behind it. Nobody shares a position and nobody loses theirs.

use std::sync::Arc;

use boxoffice_domain::EventId;
use boxoffice_domain::fairness::{Seed, order_pool};
use boxoffice_engine::ports::{Ledger, QueueStore};
use boxoffice_engine::waiting::{AdmissionControl, WaitingError};
use boxoffice_engine::{Engine, EngineConfig, Identity};
use boxoffice_payment_fake::FakeGatewayConfig;
use boxoffice_store_memory::InMemoryQueue;

use super::{buyer, try_join};
use crate::common::racing::Racing;
use crate::common::*;

/// Two nodes on one queue store and one ledger, each ledger call able to be held; an
/// open event with three buyers in line (positions 1 to 3).
struct Line {
    d: Durable,
    queue: Arc<InMemoryQueue>,
    a: Node,
    b: Node,
    gate_a: Arc<Racing>,
    gate_b: Arc<Racing>,
    event: EventId,
}

async fn line_of_three() -> Line {
    let d = Durable::new(FakeGatewayConfig::default());
    let queue = Arc::new(InMemoryQueue::new());
    let gate_a = Arc::new(Racing::new(d.ledger.clone()));
    let gate_b = Arc::new(Racing::new(d.ledger.clone()));
    let on = |gate: &Arc<Racing>| {
        let (ledger, queue) = (gate.clone() as Arc<dyn Ledger>, queue.clone());
        node_sharing(&d, EngineConfig::default(), ledger, queue)
    };
    let (a, b) = (on(&gate_a), on(&gate_b));
    let event = open_event(&a.engine, 1, 4).await;
    for expected in 1..=3 {
        let who = buyer(&b.engine).await;
        assert_eq!(place(&b.engine, event, &who).await.unwrap(), expected);
    }
    Line {
        d,
        queue,
        a,
        b,
        gate_a,
        gate_b,
        event,
    }
}

async fn place(engine: &Engine, event: EventId, who: &Identity) -> Result<u64, WaitingError> {
    let joined = try_join(engine, event, who).await?;
    Ok(joined.position.expect("an open line places at once"))
}

/// One node on a queue store of its own, and an event not yet open whose pool `n`
/// buyers joined (in `pool`, in arrival order).
struct Pooled {
    d: Durable,
    queue: Arc<InMemoryQueue>,
    node: Node,
    event: EventId,
    pool: Vec<boxoffice_domain::BuyerId>,
}

async fn pooled(n: usize) -> Pooled {
    let d = Durable::new(FakeGatewayConfig::default());
    let queue = Arc::new(InMemoryQueue::new());
    let node = node_sharing(&d, EngineConfig::default(), d.ledger.clone(), queue.clone());
    let event = scheduled_event(&node.engine, 1, 4).await;
    let mut pool = Vec::new();
    for _ in 0..n {
        let who = buyer(&node.engine).await;
        pool_join(&node.engine, event, &who).await;
        pool.push(who.buyer);
    }
    Pooled {
        d,
        queue,
        node,
        event,
        pool,
    }
}

/// `who` joins the pool of an event not yet open.
async fn pool_join(engine: &Engine, event: EventId, who: &Identity) {
    let joined = try_join(engine, event, who).await.expect("a pool join");
    assert_eq!(joined.position, None, "the pool waits for the draw");
}

/// Starts `who`'s join through `node` and returns once it has drawn its position and
/// its journal write is held.
async fn held_join(
    node: &Node,
    gate: &Racing,
    event: EventId,
    who: Identity,
) -> (
    tokio::task::JoinHandle<Result<u64, WaitingError>>,
    Arc<tokio::sync::Notify>,
) {
    let (held, release) = gate.hold_next_joins();
    let engine = node.engine.clone();
    let join = tokio::spawn(async move { place(&engine, event, &who).await });
    held.notified().await;
    (join, release)
}

/// Every buyer's journaled position, each position once.
async fn journaled(line: &Line) -> Vec<u64> {
    let places = line.d.ledger.line_places(line.event).await.unwrap();
    let positions: Vec<u64> = places.iter().map(|p| p.position).collect();
    let mut unique = positions.clone();
    unique.dedup();
    assert_eq!(unique, positions, "a position journaled twice: {places:?}");
    positions
}

#[boxoffice_testkit::test]
async fn a_join_journaled_after_its_line_was_restored_does_not_share_its_position() {
    let line = line_of_three().await;
    let (x, y) = (buyer(&line.a.engine).await, buyer(&line.b.engine).await);
    let (first, release) = held_join(&line.a, &line.gate_a, line.event, x.clone()).await;
    assert_eq!(line.queue.state(line.event).await.unwrap().queue_length, 4);

    // The queue store loses the line; the other node puts it back from the ledger,
    // which has not heard of position 4 yet, and places the next joiner.
    line.queue.drop_event(line.event).await.unwrap();
    let later = place(&line.b.engine, line.event, &y).await.unwrap();
    assert_eq!(
        later, 4,
        "the restored line goes on after the journaled places"
    );

    release.notify_one();
    let first = first.await.unwrap().expect("the held join ends");
    assert_ne!(first, later, "two buyers told one position");
    assert_eq!(first, 5, "placed again behind the later joiner");
    assert_eq!(journaled(&line).await, vec![1, 2, 3, 4, 5]);

    // Nobody lost theirs: joining again, through either node, finds the same place.
    assert_eq!(place(&line.b.engine, line.event, &x).await.unwrap(), 5);
    assert_eq!(place(&line.a.engine, line.event, &y).await.unwrap(), 4);
}

#[boxoffice_testkit::test]
async fn a_later_joiner_handed_a_journaled_position_is_placed_again_behind_it() {
    let line = line_of_three().await;
    let (x, y) = (buyer(&line.a.engine).await, buyer(&line.b.engine).await);
    let (first, release_first) = held_join(&line.a, &line.gate_a, line.event, x.clone()).await;
    line.queue.drop_event(line.event).await.unwrap();
    // The later joiner draws position 4 from the restored line; both writes in flight.
    let (later, release_later) = held_join(&line.b, &line.gate_b, line.event, y.clone()).await;
    assert_eq!(line.queue.state(line.event).await.unwrap().queue_length, 4);

    release_first.notify_one();
    let first = first.await.unwrap().expect("the first join ends");
    assert_eq!(first, 4, "the first journaled keeps the position");
    release_later.notify_one();
    let later = later.await.unwrap().expect("the later join ends");
    assert_eq!(later, 5, "placed again behind the first");
    assert_eq!(journaled(&line).await, vec![1, 2, 3, 4, 5]);

    assert_eq!(place(&line.a.engine, line.event, &y).await.unwrap(), 5);
    assert_eq!(place(&line.b.engine, line.event, &x).await.unwrap(), 4);
}

/// A batch that reached a position whose join was still being journaled (and so was
/// never confirmed) does not admit the buyer the restored line hands that position to
/// later: their admission counts from a batch after their join. It used to count from
/// the batch before it, so a buyer who joined after a long enough outage was told, once
/// a batch reached them, that their admission had expired.
#[boxoffice_testkit::test]
async fn a_position_handed_out_again_after_a_restore_waits_for_a_batch_after_its_join() {
    use boxoffice_engine::{EngineError, WaitStatus};

    let line = line_of_three().await;
    let (x, y) = (buyer(&line.a.engine).await, buyer(&line.b.engine).await);
    let (first, release) = held_join(&line.a, &line.gate_a, line.event, x.clone()).await;
    // A batch lets in up to position 4, the join still in flight.
    line.a
        .engine
        .admit_batch(line.event)
        .await
        .expect("a batch");
    assert_eq!(line.queue.state(line.event).await.unwrap().serving_up_to, 4);

    // The queue store loses the line; past an admission's lifetime, a new buyer joins
    // the restored line and is handed position 4.
    line.queue.drop_event(line.event).await.unwrap();
    line.d.clock.advance_secs(1_000);
    let joined = try_join(&line.b.engine, line.event, &y)
        .await
        .expect("the join");
    assert_eq!(joined.position, Some(4));
    let waiting = line.b.engine.queue_status(&joined.queue_ticket).await;
    assert!(
        matches!(&waiting, Ok(s) if s.status == WaitStatus::Waiting),
        "{waiting:?}"
    );
    assert!(!matches!(
        waiting,
        Err(WaitingError::Engine(EngineError::AdmissionExpired))
    ));

    // The next batch admits them (as the node that ran it tells), for an admission's
    // whole lifetime from now.
    line.a
        .engine
        .admit_batch(line.event)
        .await
        .expect("a batch");
    let admitted = (line.a.engine.queue_status(&joined.queue_ticket).await).expect("admitted");
    assert_eq!(admitted.status, WaitStatus::Admitted);
    let now = line.d.clock.now();
    let left = admitted.admission_expires_at.expect("an expiry").0 - now.0;
    assert!(left > 800_000, "{left} ms left of the admission");

    release.notify_one();
    assert_eq!(first.await.unwrap().expect("the held join ends"), 5);
}

/// An opening that stopped after sealing the pool (a later arrival already placed and
/// journaled behind it) and before its draw reached the ledger: whoever opens the line
/// next journals the same draw and puts the line back, every pool member in their
/// drawn place and the later arrival in theirs.
#[boxoffice_testkit::test]
async fn an_opening_stopped_before_its_draw_was_journaled_keeps_the_pool() {
    let Pooled {
        d,
        queue,
        node,
        event,
        pool,
    } = pooled(3).await;
    let engine = &node.engine;
    // The opening that stops: the pool sealed, nothing drawn, the sale open.
    assert_eq!(queue.seal_pool(event).await.expect("sealed").len(), 3);
    engine.open_sale(event).await.expect("opened");
    let later = buyer(engine).await;
    assert_eq!(
        place(engine, event, &later).await.unwrap(),
        4,
        "behind the pool"
    );

    engine.admit_batch(event).await.expect("the next opener");

    let view = engine.fairness(event, 0, 10).await.expect("the proof");
    let seed = Seed::from_hex(view.seed.as_deref().expect("the seed, once placed")).unwrap();
    let drawn = order_pool(&seed, &pool);
    for (i, b) in drawn.iter().enumerate() {
        let place = queue.place(event, *b).await.expect("read");
        assert_eq!(place.and_then(|p| p.position), Some(i as u64 + 1), "{b}");
    }
    let kept = queue.place(event, later.buyer).await.expect("read");
    assert_eq!(kept.and_then(|p| p.position), Some(4));
    let journaled: Vec<(u64, bool)> = (d.ledger.line_places(event).await.expect("journal"))
        .iter()
        .map(|p| (p.position, p.pool))
        .collect();
    assert_eq!(journaled, vec![(1, true), (2, true), (3, true), (4, false)]);
}

/// The operator's admission override outlives a queue store that lost the line: it is
/// kept in the ledger where the line is journaled, read back from there by the first
/// read of the event's settings, and stays when the line comes back (a node on an
/// empty queue store restores the line at its first join).
#[boxoffice_testkit::test]
async fn the_operators_admission_override_comes_back_with_a_lost_line() {
    let d = Durable::new(FakeGatewayConfig::default());
    let ledger: Arc<dyn Ledger> = d.ledger.clone();
    let on = |queue: Arc<InMemoryQueue>| {
        node_sharing(&d, EngineConfig::default(), ledger.clone(), queue)
    };
    let before = on(Arc::new(InMemoryQueue::new()));
    let event = open_event(&before.engine, 1, 4).await;
    let first = buyer(&before.engine).await;
    assert_eq!(place(&before.engine, event, &first).await.unwrap(), 1);
    let control = AdmissionControl {
        rate_per_s: Some(7),
        ..AdmissionControl::default()
    };
    (before.engine.set_admission(event, control))
        .await
        .expect("the override is set");

    // The queue store loses everything: a node on an empty one reads the override
    // back from the ledger's copy at once, before the line is restored.
    let after = on(Arc::new(InMemoryQueue::new()));
    let lost = after.engine.waiting_stats(event).await.expect("stats");
    assert_eq!(lost.control, control, "read back before the line");
    let next = buyer(&after.engine).await;
    assert_eq!(place(&after.engine, event, &next).await.unwrap(), 2);
    let back = after.engine.waiting_stats(event).await.expect("stats");
    assert_eq!(
        back.control, control,
        "the override came back with the line"
    );
}

/// The queue store lost part of the pre-opening pool (a failover's replica behind the
/// primary; here, the whole store lost, then one more join), and a buyer joined after:
/// the draw at opening places every buyer the ledger kept, where it drew only the
/// store's pool (the lost buyers never got a place, and their status said waiting).
#[boxoffice_testkit::test]
async fn the_draw_places_pool_joins_the_queue_store_lost() {
    let Pooled {
        queue,
        node,
        event,
        mut pool,
        ..
    } = pooled(2).await;
    let engine = &node.engine;
    queue.drop_event(event).await.unwrap();
    let after = buyer(engine).await;
    pool_join(engine, event, &after).await;
    pool.push(after.buyer);

    engine.open_sale(event).await.expect("opened");
    engine.admit_batch(event).await.expect("the line opened");
    let view = engine.fairness(event, 0, 10).await.expect("the proof");
    assert_eq!(view.pool_size, 3, "every pool join is in the draw");
    let seed = Seed::from_hex(view.seed.as_deref().expect("the seed")).unwrap();
    for (i, b) in order_pool(&seed, &pool).iter().enumerate() {
        let place = queue.place(event, *b).await.expect("read");
        assert_eq!(place.and_then(|p| p.position), Some(i as u64 + 1), "{b}");
    }
}
