//! The `IdempotencyStore` conformance suites (P4):
//!
//! ```ignore
//! boxoffice_testkit::idempotency_conformance!(async { fresh_store() });
//! // and one of these two, by who may open the store:
//! boxoffice_testkit::single_process_idempotency_conformance!(async { fresh_store() });
//! boxoffice_testkit::shared_idempotency_conformance!(async { fresh_store() });
//! // stores with a count cap: the expression builds one holding at most `cap` records
//! boxoffice_testkit::bounded_idempotency_conformance!(|cap| async move { capped(cap) });
//! ```
//!
//! Each expression yields a fresh `Arc<dyn IdempotencyStore>` per case. Every case uses
//! its own random scope and, where it must see the whole store (pruning), times decades
//! before the other cases', so a shared backend passes too.

use std::sync::Arc;

use boxoffice_domain::{BuyerId, Millis};
use boxoffice_engine::ports::{
    Begin, Claimant, IdempotencyStore, Incarnation, KnownWrite, ReplayKey, StoredResponse,
};

mod batches;
mod bounded;
mod liveness;

pub use batches::*;
pub use bounded::*;
pub use liveness::*;

/// Expands into `mod idempotency { … }` with one timed tokio test per case.
#[macro_export]
macro_rules! idempotency_conformance {
    ($make:expr) => {
        mod idempotency {
            #[allow(unused_imports)]
            use super::*;
            $crate::__idempotency_cases!([$crate::__port_suite_cases] idempotency, $make;);
        }
    };
}

/// The cases every store passes, as one list for every runner of the suite.
#[doc(hidden)]
#[macro_export]
macro_rules! __idempotency_cases {
    ([$($cb:tt)*] $($args:tt)*) => {
        $($cb)*!($($args)*
            a_first_request_proceeds_and_a_finished_one_replays,
            a_key_reused_for_another_request_is_a_mismatch,
            a_running_request_is_in_flight_until_its_lease_lapses,
            an_abandoned_key_runs_again,
            abandoning_a_finished_key_keeps_its_response,
            the_same_key_in_two_scopes_is_two_keys,
            a_claim_whose_holder_has_no_fresh_heartbeat_is_taken_over_at_once,
            a_claim_taken_over_is_neither_finished_nor_freed_by_its_first_holder,
            a_lapsed_claim_taken_over_by_its_own_process_is_the_retrys_alone,
            records_claimed_before_the_cutoff_are_pruned_in_batches,
            a_known_write_is_claimed_and_kept_in_one_write_or_left_to_the_caller,
            known_writes_racing_under_one_key_are_made_once,
            claims_in_one_batch_answer_as_claims_made_one_by_one,
            answers_in_one_batch_are_each_kept_for_their_own_key,
            claims_racing_under_one_key_proceed_once,
            claims_made_together_at_different_times_finish_under_their_own_leases,
        );
    };
}

pub(crate) const NOW: Millis = Millis(1_700_000_000_000);
pub(crate) const LEASE: i64 = 30_000;
/// Shorter than the lease, so a dead holder is told apart from a lapsed lease.
pub(crate) const DEAD_AFTER: i64 = 10_000;
pub(crate) const FP: [u8; 32] = [7; 32];

/// A claimant of a fresh incarnation: another process than every other claimant.
pub fn claimant() -> Claimant {
    Claimant {
        node: Incarnation::random(),
        lease_ms: LEASE,
        dead_after_ms: DEAD_AFTER,
    }
}

pub(crate) fn scope() -> String {
    format!("buyer:{}", BuyerId::random())
}

pub(crate) fn created() -> StoredResponse {
    StoredResponse {
        status: 201,
        body: br#"{"order_id":"o1"}"#.to_vec(),
    }
}

pub async fn a_first_request_proceeds_and_a_finished_one_replays(store: Arc<dyn IdempotencyStore>) {
    let (s, me) = (scope(), claimant());
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &FP, NOW, &me)
            .await
            .unwrap(),
        Begin::Proceed
    );
    store
        .finish(&ReplayKey::new(&s, "k1"), me.lease_from(NOW), &created())
        .await
        .unwrap();
    // A replay long after the lease would have lapsed still gets the first answer, and
    // so does a retry reaching another process.
    let later = NOW.plus_secs(3_600);
    for who in [me, claimant()] {
        assert_eq!(
            store
                .begin(&ReplayKey::new(&s, "k1"), &FP, later, &who)
                .await
                .unwrap(),
            Begin::Replay(created())
        );
    }
}

pub async fn a_key_reused_for_another_request_is_a_mismatch(store: Arc<dyn IdempotencyStore>) {
    let (s, me) = (scope(), claimant());
    store
        .begin(&ReplayKey::new(&s, "k1"), &FP, NOW, &me)
        .await
        .unwrap();
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &[8; 32], NOW, &me)
            .await
            .unwrap(),
        Begin::Mismatch
    );
    store
        .finish(&ReplayKey::new(&s, "k1"), me.lease_from(NOW), &created())
        .await
        .unwrap();
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &[8; 32], NOW, &me)
            .await
            .unwrap(),
        Begin::Mismatch
    );
}

pub async fn a_running_request_is_in_flight_until_its_lease_lapses(
    store: Arc<dyn IdempotencyStore>,
) {
    let (s, me) = (scope(), claimant());
    store.heartbeat(me.node, NOW).await.unwrap();
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &FP, NOW, &me)
            .await
            .unwrap(),
        Begin::Proceed
    );
    let almost = NOW.plus_millis(LEASE - 1);
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &FP, almost, &me)
            .await
            .unwrap(),
        Begin::InFlight
    );
    // The first attempt never finished: after the lease the retry takes the key over,
    // and holds it for a lease of its own.
    let lapsed = NOW.plus_millis(LEASE + 1);
    store.heartbeat(me.node, lapsed).await.unwrap();
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &FP, lapsed, &me)
            .await
            .unwrap(),
        Begin::Proceed
    );
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &FP, lapsed.plus_millis(1), &me)
            .await
            .unwrap(),
        Begin::InFlight
    );
    store
        .finish(&ReplayKey::new(&s, "k1"), me.lease_from(lapsed), &created())
        .await
        .unwrap();
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &FP, lapsed, &me)
            .await
            .unwrap(),
        Begin::Replay(created())
    );
}

pub async fn an_abandoned_key_runs_again(store: Arc<dyn IdempotencyStore>) {
    let (s, me) = (scope(), claimant());
    store
        .begin(&ReplayKey::new(&s, "k1"), &FP, NOW, &me)
        .await
        .unwrap();
    store
        .abandon(&ReplayKey::new(&s, "k1"), me.lease_from(NOW))
        .await
        .unwrap();
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &FP, NOW.plus_millis(1), &me)
            .await
            .unwrap(),
        Begin::Proceed
    );
}

pub async fn abandoning_a_finished_key_keeps_its_response(store: Arc<dyn IdempotencyStore>) {
    let (s, me) = (scope(), claimant());
    store
        .begin(&ReplayKey::new(&s, "k1"), &FP, NOW, &me)
        .await
        .unwrap();
    store
        .finish(&ReplayKey::new(&s, "k1"), me.lease_from(NOW), &created())
        .await
        .unwrap();
    store
        .abandon(&ReplayKey::new(&s, "k1"), me.lease_from(NOW))
        .await
        .unwrap();
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &FP, NOW, &me)
            .await
            .unwrap(),
        Begin::Replay(created())
    );
}

pub async fn the_same_key_in_two_scopes_is_two_keys(store: Arc<dyn IdempotencyStore>) {
    let (a, b, me) = (scope(), scope(), claimant());
    assert_eq!(
        store
            .begin(&ReplayKey::new(&a, "k1"), &FP, NOW, &me)
            .await
            .unwrap(),
        Begin::Proceed
    );
    assert_eq!(
        store
            .begin(&ReplayKey::new(&b, "k1"), &[9; 32], NOW, &me)
            .await
            .unwrap(),
        Begin::Proceed
    );
}

/// Records pruned by age: whoever calls `prune` sees the whole store, so this case
/// works decades before every other case's records.
pub async fn records_claimed_before_the_cutoff_are_pruned_in_batches(
    store: Arc<dyn IdempotencyStore>,
) {
    const T0: Millis = Millis(1_000_000_000);
    let (s, me) = (scope(), claimant());
    for i in 0..6 {
        let at = T0.plus_millis(if i < 5 { i } else { 100 });
        let key = format!("k{i}");
        assert_eq!(
            store
                .begin(&ReplayKey::new(&s, &key), &FP, at, &me)
                .await
                .unwrap(),
            Begin::Proceed
        );
        store
            .finish(&ReplayKey::new(&s, &key), me.lease_from(at), &created())
            .await
            .unwrap();
    }
    let cutoff = T0.plus_millis(50);
    let batches = [
        store.prune(cutoff, 2).await.unwrap(),
        store.prune(cutoff, 2).await.unwrap(),
        store.prune(cutoff, 2).await.unwrap(),
        store.prune(cutoff, 2).await.unwrap(),
    ];
    assert_eq!(batches, [2, 2, 1, 0], "five old records, in batches of two");
    let then = T0.plus_millis(60);
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k0"), &[3; 32], then, &me)
            .await
            .unwrap(),
        Begin::Proceed,
        "a pruned key is new again"
    );
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k5"), &FP, then, &me)
            .await
            .unwrap(),
        Begin::Replay(created()),
        "a younger record is kept"
    );
}

/// `write_claimed`: a store that keeps its records in the ledger's database takes the
/// claim, makes the write and keeps the answer in one, and answers every later request
/// with the key as `begin` would after a `finish`; a refused claim comes back as
/// `begin`'s refusal. A store that keeps no ledger rows answers `None` (its callers
/// claim, write and finish in turn) and must not have claimed the key.
pub async fn a_known_write_is_claimed_and_kept_in_one_write_or_left_to_the_caller(
    store: Arc<dyn IdempotencyStore>,
) {
    let (s, me) = (scope(), claimant());
    let sign_up = || KnownWrite::SignUp {
        buyer: BuyerId::random(),
        at: NOW,
    };
    let key = ReplayKey::new(&s, "k1");
    let first = store
        .write_claimed(&key, &FP, NOW, &me, sign_up(), &created())
        .await
        .unwrap();
    let Some(first) = first else {
        // Left to the caller: the key is untouched, so its own claim proceeds.
        let begun = store.begin(&key, &FP, NOW, &me).await.unwrap();
        assert_eq!(begun, Begin::Proceed);
        return;
    };
    assert_eq!(first, Begin::Proceed);
    // Kept at once: a retry from another process, later, is a replay, by either call.
    let later = NOW.plus_secs(3_600);
    let replayed = store.begin(&key, &FP, later, &claimant()).await.unwrap();
    assert_eq!(replayed, Begin::Replay(created()));
    let again = StoredResponse {
        status: 201,
        body: b"another answer".to_vec(),
    };
    let retried = store
        .write_claimed(&key, &FP, later, &claimant(), sign_up(), &again)
        .await
        .unwrap();
    assert_eq!(retried, Some(Begin::Replay(created())));
    let other = store
        .write_claimed(&key, &[8; 32], later, &me, sign_up(), &again)
        .await
        .unwrap();
    assert_eq!(other, Some(Begin::Mismatch));
    // A key a running request holds is in flight, and that request still keeps its own.
    let running = ReplayKey::new(&s, "k2");
    assert_eq!(
        store.begin(&running, &FP, NOW, &me).await.unwrap(),
        Begin::Proceed
    );
    let meanwhile = store
        .write_claimed(&running, &FP, NOW, &me, sign_up(), &again)
        .await
        .unwrap();
    assert_eq!(meanwhile, Some(Begin::InFlight));
    store
        .finish(&running, me.lease_from(NOW), &created())
        .await
        .unwrap();
    let kept = store.begin(&running, &FP, later, &me).await.unwrap();
    assert_eq!(kept, Begin::Replay(created()));
    // A request whose answer is all it leaves is kept the same way.
    let grant = ReplayKey::new(&s, "k3");
    let answer_only = KnownWrite::AnswerOnly;
    let granted = store
        .write_claimed(&grant, &FP, NOW, &me, answer_only, &created())
        .await
        .unwrap();
    assert_eq!(granted, Some(Begin::Proceed));
    let regranted = store.begin(&grant, &FP, later, &claimant()).await.unwrap();
    assert_eq!(regranted, Begin::Replay(created()));
}

/// Many requests under one key, each with the answer its own write would give, race
/// through `write_claimed`: exactly one is made and kept, and every other is told the
/// first's answer (or, while it runs, that it is in flight), never its own.
pub async fn known_writes_racing_under_one_key_are_made_once(store: Arc<dyn IdempotencyStore>) {
    const RACERS: usize = 20;
    let s = scope();
    let key = ReplayKey::new(&s, "k1");
    let answer = |i: usize| StoredResponse {
        status: 201,
        body: format!("racer {i}").into_bytes(),
    };
    let racers = (0..RACERS).map(|i| {
        let (store, key) = (store.clone(), key.clone());
        tokio::spawn(async move {
            let (who, write) = (claimant(), KnownWrite::AnswerOnly);
            store
                .write_claimed(&key, &FP, NOW, &who, write, &answer(i))
                .await
        })
    });
    let mut made = Vec::new();
    let mut told = Vec::new();
    for (i, racer) in futures::future::join_all(racers)
        .await
        .into_iter()
        .enumerate()
    {
        match racer
            .expect("a racer panicked")
            .expect("a racer's write failed")
        {
            // Left to the caller: this store has no one write for it to race.
            None => return,
            Some(Begin::Proceed) => made.push(i),
            Some(Begin::Replay(r)) => told.push(r),
            Some(Begin::InFlight) => {}
            Some(other) => panic!("racer {i} was answered {other:?}"),
        }
    }
    assert_eq!(made.len(), 1, "racers made and kept: {made:?}");
    let first = answer(made[0]);
    assert!(told.iter().all(|r| *r == first), "told {told:?}");
    let later = store.begin(&key, &FP, NOW.plus_secs(60), &claimant()).await;
    assert_eq!(later.unwrap(), Begin::Replay(first));
}
