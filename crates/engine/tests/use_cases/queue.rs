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

/// A join under its Idempotency-Key, where the replay store keeps its records in the
/// ledger's file, costs the ledger's writer one job of the join journal's batch: the
/// claim, the record and the kept answer, before opening and after (claimed, journaled
/// and kept in turn, it cost three: `begin`, the batch and `finish`). A retry after
/// opening is answered by the key's lookup, a read: no job at all; before opening the
/// write decides the claim, so the retry's refused claim is a job of the batch.
#[boxoffice_testkit::test]
async fn a_keyed_join_costs_the_ledger_writer_no_job_beyond_the_journals_batch() {
    use std::sync::Arc;

    use boxoffice_engine::ports::{Begin, Claimant, IdempotencyStore, Incarnation, ReplayKey};
    use boxoffice_engine::{JoinKey, Joiner, KeyedJoin};

    let d = Durable::new(FakeGatewayConfig::default());
    let n = node(&d, EngineConfig::default());
    let replays: Arc<dyn IdempotencyStore> = Arc::new(d.ledger.idempotency());
    assert!(replays.journals_joins());
    let claimant = Claimant {
        node: Incarnation::random(),
        lease_ms: 60_000,
        dead_after_ms: 30_000,
    };
    let open = open_event(&n.engine, 1, 4).await;
    let scheduled = scheduled_event(&n.engine, 1, 4).await;
    for (event, retry_jobs) in [(open, 0), (scheduled, 1)] {
        // The event's first join writes its fairness seed (before opening) once.
        join(&n.engine, event, &buyer(&n.engine).await).await;
        let who = buyer(&n.engine).await;
        let keyed = |key: &str| JoinKey {
            replays: replays.clone(),
            key: Arc::new(ReplayKey::new(format!("buyer:{}", who.buyer), key)),
            fingerprint: [3; 32],
            now: T0,
            claimant,
        };
        let joiner = || Joiner {
            who: &who,
            ip: None,
            pow: None,
            proof: None,
            human_token: None,
        };
        let jobs = || d.ledger.write_stats().1;
        let pass = n.engine.check_join(event, joiner()).await.expect("checked");
        let before = jobs();
        let joined = n
            .engine
            .join_keyed(pass, keyed("k-1"))
            .await
            .expect("joined");
        assert_eq!(jobs() - before, 1, "writer jobs for one join of {event}");
        let KeyedJoin::Joined(answer) = joined else {
            panic!("{joined:?}")
        };
        assert_eq!(answer.status, 200);
        let outcome: serde_json::Value = serde_json::from_slice(&answer.body).expect("JSON");
        assert_eq!(outcome["position"].is_u64(), event == open, "{outcome}");
        // Retried: the first answer, and nothing written again.
        let pass = n.engine.check_join(event, joiner()).await.expect("checked");
        let before = jobs();
        let again = n
            .engine
            .join_keyed(pass, keyed("k-1"))
            .await
            .expect("answered");
        assert_eq!(
            jobs() - before,
            retry_jobs,
            "writer jobs for a retry of {event}"
        );
        match again {
            KeyedJoin::Refused(Begin::Replay(kept)) => assert_eq!(kept, answer),
            other => panic!("{other:?}"),
        }
        // The same join claimed, journaled and kept in turn, as a store that does not
        // journal joins takes it: three jobs.
        let who = buyer(&n.engine).await;
        let joiner = Joiner {
            who: &who,
            ip: None,
            pow: None,
            proof: None,
            human_token: None,
        };
        let pass = n.engine.check_join(event, joiner).await.expect("checked");
        let key = ReplayKey::new(format!("buyer:{}", who.buyer), "k-1");
        let before = jobs();
        let begun = replays.begin(&key, &[3; 32], T0, &claimant).await;
        assert_eq!(begun.expect("claimed"), Begin::Proceed);
        n.engine.join_checked(pass).await.expect("joined");
        replays.finish(&key, &answer).await.expect("kept");
        assert_eq!(jobs() - before, 3, "writer jobs for one join in turn");
    }
}

/// A pool entry the ledger journaled and the queue store missed (a keyed join's answer
/// is kept with its entry, so its queue store join failing or its node dying afterwards
/// leaves the buyer in the ledger's pool only) is placed at the opening with the rest.
#[boxoffice_testkit::test]
async fn a_pool_entry_the_queue_store_missed_is_placed_at_the_opening() {
    use boxoffice_domain::BuyerId;
    use boxoffice_engine::ports::{JoinRecord, Ledger};

    let d = Durable::new(FakeGatewayConfig::default());
    let n = node(&d, EngineConfig::default());
    let event = scheduled_event(&n.engine, 1, 4).await;
    join(&n.engine, event, &buyer(&n.engine).await).await;
    let missed = BuyerId::random();
    let entry = JoinRecord {
        event,
        buyer: missed,
        at: T0,
        position: None,
        pool: false,
    };
    let stood = d.ledger.record_joins(&[entry]).await.expect("journaled");
    assert_eq!(stood, vec![true]);
    n.engine.open_sale(event).await.expect("opened");
    n.engine.admit_batch(event).await.expect("the line placed");
    let placed = d.ledger.line_places(event).await.expect("the journal");
    assert_eq!(placed.len(), 2, "{placed:?}");
    assert!(
        placed.iter().any(|p| p.buyer == missed && p.pool),
        "{placed:?}"
    );
}
