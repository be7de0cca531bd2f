//! A queue join's claim, record and kept answer in the join journal's one write
//! (`IdempotencyStore::record_joins_claimed`), for stores that keep their records in
//! the ledger's database (`journals_joins`). Each case gets the ledger and its replay
//! store; the ledger shows which records stand.
//!
//! ```ignore
//! boxoffice_testkit::claimed_joins_conformance!(async { KeptPorts { ledger, replays } });
//! ```

use std::sync::Arc;

use boxoffice_domain::{BuyerId, EventId, Millis};
use boxoffice_engine::ports::{
    Begin, ClaimedJoin, JoinClaim, JoinRecord, JoinWritten, Ledger, LinePlace, ReplayKey,
    StoredResponse,
};

use super::{FP, NOW, claimant, created, scope};
use crate::ledger::KeptPorts;
use crate::ledger::fixtures::event;

/// Expands into `mod claimed_joins { … }` with one timed tokio test per case.
#[macro_export]
macro_rules! claimed_joins_conformance {
    ($make:expr) => {
        mod claimed_joins {
            #[allow(unused_imports)]
            use super::*;
            $crate::__port_suite_cases!(idempotency, $make;
                a_batch_of_claimed_joins_keeps_each_claim_record_and_answer,
                a_refused_claim_in_a_batch_writes_nothing_for_its_join_and_the_others_stand,
                joins_racing_under_one_key_keep_one_record_and_one_answer,
            );
        }
    };
}

fn record(event: EventId, buyer: BuyerId, position: Option<u64>) -> JoinRecord {
    JoinRecord {
        event,
        buyer,
        at: Millis(5),
        position,
        pool: false,
    }
}

fn answer(text: &str) -> StoredResponse {
    StoredResponse {
        status: 200,
        body: text.as_bytes().to_vec(),
    }
}

fn claimed(record: JoinRecord, key: &Arc<ReplayKey>, answer: StoredResponse) -> ClaimedJoin {
    ClaimedJoin {
        record,
        claim: Some(JoinClaim {
            key: key.clone(),
            fingerprint: FP,
            now: NOW,
            claimant: claimant(),
            answer,
        }),
    }
}

fn plain(record: JoinRecord) -> ClaimedJoin {
    ClaimedJoin {
        record,
        claim: None,
    }
}

async fn places(ledger: &Arc<dyn Ledger>, event: EventId) -> Vec<(BuyerId, u64)> {
    let placed: Vec<LinePlace> = ledger.line_places(event).await.unwrap();
    placed.into_iter().map(|p| (p.buyer, p.position)).collect()
}

/// Claimed and unclaimed joins in one batch: each claimed one that stands keeps its
/// claim and answer (a retry from anywhere is a replay, by `begin` and by `lookup`);
/// one whose record does not stand (its position another buyer's) writes nothing, its
/// claim neither.
pub async fn a_batch_of_claimed_joins_keeps_each_claim_record_and_answer(stores: KeptPorts) {
    let KeptPorts { ledger, replays } = stores;
    assert!(replays.journals_joins());
    let e = event(&ledger, 1, 4).await.id;
    let b: Vec<BuyerId> = (0..4).map(|_| BuyerId::random()).collect();
    let s = scope();
    let k: Vec<Arc<ReplayKey>> = (0..4)
        .map(|i| Arc::new(ReplayKey::new(&s, format!("k{i}"))))
        .collect();
    let joins = [
        claimed(record(e, b[0], None), &k[0], answer("pool")),
        plain(record(e, b[1], Some(1))),
        claimed(record(e, b[2], Some(2)), &k[2], answer("second")),
        claimed(record(e, b[3], Some(1)), &k[3], answer("first, taken")),
    ];
    let written = replays.record_joins_claimed(&joins).await.unwrap();
    use JoinWritten::{NotStood, Stood};
    assert_eq!(written, vec![Stood, Stood, Stood, NotStood]);
    assert_eq!(ledger.pool_joins(e).await.unwrap(), vec![b[0]]);
    assert_eq!(places(&ledger, e).await, vec![(b[1], 1), (b[2], 2)]);
    let later = NOW.plus_secs(3_600);
    for (key, kept) in [(&k[0], "pool"), (&k[2], "second")] {
        let looked = replays.lookup(key, &FP, later, &claimant()).await.unwrap();
        assert_eq!(looked, Begin::Replay(answer(kept)));
        let begun = replays.begin(key, &FP, later, &claimant()).await.unwrap();
        assert_eq!(begun, Begin::Replay(answer(kept)));
        let other = replays.lookup(key, &[8; 32], later, &claimant()).await;
        assert_eq!(other.unwrap(), Begin::Mismatch);
    }
    // The join whose record did not stand took no claim: its key is new.
    let looked = replays.lookup(&k[3], &FP, later, &claimant()).await;
    assert_eq!(looked.unwrap(), Begin::Proceed);
    let begun = replays.begin(&k[3], &FP, later, &claimant()).await;
    assert_eq!(begun.unwrap(), Begin::Proceed);
}

/// A batch whose claims are refused (the key answered before, used for another
/// request, or still running): those joins write neither their record nor an answer,
/// and the batch's other joins stand.
pub async fn a_refused_claim_in_a_batch_writes_nothing_for_its_join_and_the_others_stand(
    stores: KeptPorts,
) {
    let KeptPorts { ledger, replays } = stores;
    let e = event(&ledger, 1, 4).await.id;
    let b: Vec<BuyerId> = (0..5).map(|_| BuyerId::random()).collect();
    let s = scope();
    let key = |name: &str| Arc::new(ReplayKey::new(&s, name));
    let (answered, reused, running, new) = (key("done"), key("reused"), key("running"), key("new"));
    let me = claimant();
    for k in [&answered, &reused] {
        assert_eq!(
            replays.begin(k, &FP, NOW, &me).await.unwrap(),
            Begin::Proceed
        );
        replays.finish(k, &created()).await.unwrap();
    }
    assert_eq!(
        replays.begin(&running, &FP, NOW, &me).await.unwrap(),
        Begin::Proceed
    );
    let mut mismatched = claimed(record(e, b[1], Some(2)), &reused, answer("reused"));
    if let Some(c) = mismatched.claim.as_mut() {
        c.fingerprint = [8; 32];
    }
    let mut in_flight = claimed(record(e, b[2], Some(3)), &running, answer("running"));
    if let Some(c) = in_flight.claim.as_mut() {
        c.claimant = me;
    }
    // The lookup answers as the write will.
    let looked = replays.lookup(&running, &FP, NOW, &me).await.unwrap();
    assert_eq!(looked, Begin::InFlight);
    let joins = [
        claimed(record(e, b[0], Some(1)), &answered, answer("again")),
        mismatched,
        in_flight,
        claimed(record(e, b[3], Some(1)), &new, answer("new")),
        plain(record(e, b[4], Some(5))),
    ];
    let written = replays.record_joins_claimed(&joins).await.unwrap();
    assert_eq!(
        written,
        vec![
            JoinWritten::Refused(Begin::Replay(created())),
            JoinWritten::Refused(Begin::Mismatch),
            JoinWritten::Refused(Begin::InFlight),
            JoinWritten::Stood,
            JoinWritten::Stood,
        ]
    );
    // Position 1 went to the claimed join after the refused one: nothing of it stayed.
    assert_eq!(places(&ledger, e).await, vec![(b[3], 1), (b[4], 5)]);
    let later = NOW.plus_secs(3_600);
    for k in [&answered, &reused] {
        let begun = replays.begin(k, &FP, later, &claimant()).await.unwrap();
        assert_eq!(begun, Begin::Replay(created()), "the first answer stays");
    }
    let kept = replays.begin(&new, &FP, later, &claimant()).await.unwrap();
    assert_eq!(kept, Begin::Replay(answer("new")));
    // The running request still keeps its own answer.
    replays.finish(&running, &created()).await.unwrap();
    let kept = replays
        .begin(&running, &FP, later, &claimant())
        .await
        .unwrap();
    assert_eq!(kept, Begin::Replay(created()));
}

/// K requests under one key (one buyer), each from another node and each with a place
/// of its own, written at once: exactly one record and one answer are kept, the
/// answer naming the kept record's place, and every other request is told the kept
/// answer (or, where its write met the winner's still running, that it is in flight).
pub async fn joins_racing_under_one_key_keep_one_record_and_one_answer(stores: KeptPorts) {
    const K: u64 = 8;
    let KeptPorts { ledger, replays } = stores;
    let e = event(&ledger, 1, 4).await.id;
    let buyer = BuyerId::random();
    let key = Arc::new(ReplayKey::new(scope(), "one key"));
    let writes = (1..=K).map(|position| {
        let (replays, key) = (replays.clone(), key.clone());
        async move {
            let join = claimed(
                record(e, buyer, Some(position)),
                &key,
                answer(&position.to_string()),
            );
            replays.record_joins_claimed(&[join]).await.unwrap()[0].clone()
        }
    });
    let written = futures::future::join_all(writes).await;
    let won: Vec<u64> = (1..=K)
        .zip(&written)
        .filter(|(_, w)| **w == JoinWritten::Stood)
        .map(|(p, _)| p)
        .collect();
    assert_eq!(won.len(), 1, "{written:?}");
    let kept = answer(&won[0].to_string());
    for w in &written {
        match w {
            JoinWritten::Stood => {}
            JoinWritten::Refused(Begin::Replay(r)) => assert_eq!(*r, kept),
            JoinWritten::Refused(Begin::InFlight) => {}
            other => panic!("a racer was answered {other:?}"),
        }
    }
    assert_eq!(places(&ledger, e).await, vec![(buyer, won[0])]);
    let later = NOW.plus_secs(3_600);
    let begun = replays.begin(&key, &FP, later, &claimant()).await.unwrap();
    assert_eq!(begun, Begin::Replay(kept));
}
