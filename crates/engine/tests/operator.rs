//! Operator mistakes the engine must absorb without harm to buyers.

mod common;

use std::sync::Arc;

use boxoffice_domain::{HoldState, OrderId, SaleStatus};
use boxoffice_engine::EngineConfig;
use boxoffice_payment_fake::FakeGatewayConfig;
use common::racing::Racing;
use common::*;

/// A second "open" (a double click, a retried script) is a no-op: the same answer, and
/// every live and pinned hold as it was.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_an_open_event_keeps_its_holds() {
    let d = Durable::new(FakeGatewayConfig::default());
    let n = node(&d, EngineConfig::default());
    let event = open_event(&n.engine, 1, 4).await;
    let (who, live) = hold(&n.engine, event, &["A-1-1"]).await;
    let (_, pinned) = hold(&n.engine, event, &["A-1-2"]).await;
    let until = d.clock.now().plus_secs(120);
    n.arbiter
        .pin(pinned.hold, OrderId::random(), until, d.clock.now())
        .await
        .expect("pinned");
    let first = n.engine.event(event).await.expect("the event");
    let again = n
        .engine
        .open_sale(event)
        .await
        .expect("opening again is fine");
    assert_eq!(again.event, first.event, "the same answer");
    assert_eq!(again.event.status, SaleStatus::Open);
    let live_now = n
        .engine
        .get_hold(&who, live.hold)
        .await
        .expect("the hold is there");
    assert_eq!(live_now.state, HoldState::Held);
    assert_eq!(
        hold_state(&n.engine, &pinned).await,
        Some(HoldState::CheckingOut)
    );
    assert_eq!(
        free(&n.engine, event, &["A-1-1", "A-1-2", "A-1-3"]).await,
        vec![false, false, true]
    );
}

/// The public listing's `?status=` is a client's list: naming a status a thousand
/// times asks the ledger for it once, not a thousand times.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_that_names_a_status_many_times_reads_it_once() {
    let d = Durable::new(FakeGatewayConfig::default());
    let racing = Arc::new(Racing::new(d.ledger.clone()));
    let n = node_with_ledger(&d, EngineConfig::default(), racing.clone());
    let open = open_event(&n.engine, 1, 4).await;
    let scheduled = scheduled_event(&n.engine, 1, 4).await;
    let before = racing.status_reads();
    let mut statuses = vec![SaleStatus::Open; 1_000];
    statuses.push(SaleStatus::Scheduled);
    let listed = n.engine.list_events(&statuses, 50).await.expect("listed");
    let ids: Vec<_> = listed.iter().map(|o| o.entry.event.id).collect();
    assert_eq!(ids, vec![scheduled, open], "newest first, each once");
    // Background workers may list open events meanwhile: at most the two asked.
    let reads = racing.status_reads() - before;
    assert!(
        reads <= 2 + 2,
        "{reads} reads of the ledger for two statuses"
    );
}

/// The readiness probe is public and never shed: however many probes arrive at once,
/// the ledger is asked once per second of the engine's clock.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_probes_ask_the_ledger_once_a_second_however_many_arrive() {
    let d = Durable::new(FakeGatewayConfig::default());
    let racing = Arc::new(Racing::new(d.ledger.clone()));
    let n = node_with_ledger(&d, EngineConfig::default(), racing.clone());
    let before = racing.status_reads();
    let probes = (0..200).map(|_| n.engine.ledger_answers());
    for answer in futures::future::join_all(probes).await {
        answer.expect("the ledger answers");
    }
    assert_eq!(racing.status_reads() - before, 1, "one ask for 200 probes");
    let start = d.clock.now();
    d.clock.set(start.plus_millis(999));
    n.engine.ledger_answers().await.expect("ready");
    assert_eq!(racing.status_reads() - before, 1, "still fresh");
    d.clock.set(start.plus_millis(1_000));
    n.engine.ledger_answers().await.expect("ready");
    assert_eq!(
        racing.status_reads() - before,
        2,
        "asked again a second later"
    );
}
