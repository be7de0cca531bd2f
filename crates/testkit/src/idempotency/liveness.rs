//! Claims whose holder died: taken over by the retry at once, not after the lease.
//! Which holders count as alive depends on who may open the store: every process of a
//! cluster (heartbeats decide) or one process at a time (only the caller is alive).

use std::sync::Arc;

use boxoffice_engine::ports::{Begin, IdempotencyStore, ReplayKey, StoredResponse};

use super::{DEAD_AFTER, FP, LEASE, NOW, claimant, created, scope};

/// For stores several nodes share: a claim of a node that keeps beating is honoured.
#[macro_export]
macro_rules! shared_idempotency_conformance {
    ($make:expr) => {
        mod idempotency_shared {
            #[allow(unused_imports)]
            use super::*;
            $crate::__shared_idempotency_cases!([$crate::__port_suite_cases] idempotency, $make;);
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __shared_idempotency_cases {
    ([$($cb:tt)*] $($args:tt)*) => {
        $($cb)*!($($args)*
            a_claim_of_a_live_node_is_in_flight_until_its_heartbeat_goes_stale,
        );
    };
}

/// For stores one process opens at a time: any other incarnation is an earlier life.
#[macro_export]
macro_rules! single_process_idempotency_conformance {
    ($make:expr) => {
        mod idempotency_single_process {
            #[allow(unused_imports)]
            use super::*;
            $crate::__port_suite_cases!(idempotency, $make;
                a_claim_of_an_earlier_incarnation_is_taken_over_at_once,
            );
        }
    };
}

/// Every store: a holder that never beat (or stopped long ago) is dead, so the retry
/// proceeds long before the lease would have lapsed, and then holds the key itself.
pub async fn a_claim_whose_holder_has_no_fresh_heartbeat_is_taken_over_at_once(
    store: Arc<dyn IdempotencyStore>,
) {
    let (s, dead, retry) = (scope(), claimant(), claimant());
    store
        .heartbeat(dead.node, NOW.plus_millis(-10 * DEAD_AFTER))
        .await
        .unwrap();
    store.heartbeat(retry.node, NOW).await.unwrap();
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &FP, NOW, &dead)
            .await
            .unwrap(),
        Begin::Proceed
    );
    let soon = NOW.plus_millis(1);
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &FP, soon, &retry)
            .await
            .unwrap(),
        Begin::Proceed,
        "the dead holder's claim is taken over at once"
    );
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &FP, soon, &retry)
            .await
            .unwrap(),
        Begin::InFlight,
        "the retry now holds the key"
    );
    // Another body under the key is still a mismatch, dead holder or not.
    let other = claimant();
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &[8; 32], soon, &other)
            .await
            .unwrap(),
        Begin::Mismatch
    );
    store
        .finish(
            &ReplayKey::new(&s, "k1"),
            retry.lease_from(soon),
            &created(),
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &FP, soon, &dead)
            .await
            .unwrap(),
        Begin::Replay(created())
    );
}

/// An answer the first request would keep, had the key still been its own.
fn stale() -> StoredResponse {
    StoredResponse {
        status: 409,
        body: b"the first holder's late answer".to_vec(),
    }
}

/// Every store: a request still running on a claim that a retry took over (its holder
/// counted dead) can neither keep its answer over the retry's nor free the key under
/// the retry, which would let a third request run beside it.
pub async fn a_claim_taken_over_is_neither_finished_nor_freed_by_its_first_holder(
    store: Arc<dyn IdempotencyStore>,
) {
    let (s, first, retry) = (scope(), claimant(), claimant());
    let k1 = ReplayKey::new(&s, "k1");
    store
        .heartbeat(first.node, NOW.plus_millis(-10 * DEAD_AFTER))
        .await
        .unwrap();
    store.heartbeat(retry.node, NOW).await.unwrap();
    assert_eq!(
        store.begin(&k1, &FP, NOW, &first).await.unwrap(),
        Begin::Proceed
    );
    let soon = NOW.plus_millis(1);
    assert_eq!(
        store.begin(&k1, &FP, soon, &retry).await.unwrap(),
        Begin::Proceed
    );
    // The first request ends late: its answer and its abandon are refused or ignored.
    let _ = store.finish(&k1, first.lease_from(NOW), &stale()).await;
    let _ = store.abandon(&k1, first.lease_from(NOW)).await;
    assert_eq!(
        store.begin(&k1, &FP, soon, &retry).await.unwrap(),
        Begin::InFlight,
        "the retry still holds the key, and no answer was kept for it"
    );
    store
        .finish(&k1, retry.lease_from(soon), &created())
        .await
        .unwrap();
    assert_eq!(
        store.begin(&k1, &FP, soon, &claimant()).await.unwrap(),
        Begin::Replay(created()),
        "the retry's answer is the key's"
    );
}

/// Every store: a process that takes over its own claim (the first request outlived
/// the lease) holds the key under a new lease, and the first request's late answer or
/// abandon, made under the old one, changes nothing.
pub async fn a_lapsed_claim_taken_over_by_its_own_process_is_the_retrys_alone(
    store: Arc<dyn IdempotencyStore>,
) {
    let (s, me) = (scope(), claimant());
    let k1 = ReplayKey::new(&s, "k1");
    store.heartbeat(me.node, NOW).await.unwrap();
    assert_eq!(
        store.begin(&k1, &FP, NOW, &me).await.unwrap(),
        Begin::Proceed
    );
    let lapsed = NOW.plus_millis(LEASE + 1);
    store.heartbeat(me.node, lapsed).await.unwrap();
    assert_eq!(
        store.begin(&k1, &FP, lapsed, &me).await.unwrap(),
        Begin::Proceed
    );
    let _ = store.finish(&k1, me.lease_from(NOW), &stale()).await;
    let _ = store.abandon(&k1, me.lease_from(NOW)).await;
    let after = lapsed.plus_millis(1);
    assert_eq!(
        store.begin(&k1, &FP, after, &me).await.unwrap(),
        Begin::InFlight,
        "the retry still holds the key, and no answer was kept for it"
    );
    store
        .finish(&k1, me.lease_from(lapsed), &created())
        .await
        .unwrap();
    assert_eq!(
        store.begin(&k1, &FP, after, &me).await.unwrap(),
        Begin::Replay(created())
    );
}

pub async fn a_claim_of_a_live_node_is_in_flight_until_its_heartbeat_goes_stale(
    store: Arc<dyn IdempotencyStore>,
) {
    let (s, holder, retry) = (scope(), claimant(), claimant());
    store.heartbeat(holder.node, NOW).await.unwrap();
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &FP, NOW, &holder)
            .await
            .unwrap(),
        Begin::Proceed
    );
    // It keeps beating: its claim stands past one bound of silence from the first beat.
    let beat = NOW.plus_millis(DEAD_AFTER - 2_000);
    store.heartbeat(holder.node, beat).await.unwrap();
    let checked = NOW.plus_millis(DEAD_AFTER + 1_000);
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &FP, checked, &retry)
            .await
            .unwrap(),
        Begin::InFlight
    );
    // Then it stops: once its last beat is older than the bound the claim is dead,
    // although its lease has not lapsed.
    let stale = beat.plus_millis(DEAD_AFTER + 1);
    assert!(stale < NOW.plus_millis(LEASE));
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &FP, stale, &retry)
            .await
            .unwrap(),
        Begin::Proceed
    );
}

pub async fn a_claim_of_an_earlier_incarnation_is_taken_over_at_once(
    store: Arc<dyn IdempotencyStore>,
) {
    let (s, before, after) = (scope(), claimant(), claimant());
    store.heartbeat(before.node, NOW).await.unwrap();
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &FP, NOW, &before)
            .await
            .unwrap(),
        Begin::Proceed
    );
    // The process restarted: the claim's holder is gone whatever it last said.
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k1"), &FP, NOW.plus_millis(1), &after)
            .await
            .unwrap(),
        Begin::Proceed
    );
}
