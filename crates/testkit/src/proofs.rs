//! The `ProofMemory` conformance suite (proof of possession: proof ids used once; the
//! key a hold is bound to is the arbiter suite's, on the hold itself):
//!
//! ```ignore
//! boxoffice_testkit::proofs_conformance!(async { fresh_memory() });
//! // a memory holding at most `cap` proof ids per event (and window)
//! boxoffice_testkit::bounded_proofs_conformance!(|cap| async move { capped(cap) });
//! ```
//!
//! Every case uses events of its own, so a shared backend passes too.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use boxoffice_domain::EventId;
use boxoffice_domain::possession::Thumbprint;
use boxoffice_engine::ports::{FirstUse, ProofMemory};

/// Expands into `mod proofs { … }` with one timed tokio test per case.
#[macro_export]
macro_rules! proofs_conformance {
    ($make:expr) => {
        mod proofs {
            #[allow(unused_imports)]
            use super::*;
            $crate::__port_suite_cases!(proofs, $make;
                a_proof_id_is_fresh_once_and_replayed_after,
                an_id_under_another_key_or_event_is_another_proof,
                a_remembered_id_is_forgotten_after_its_window,
                of_n_racing_first_uses_of_k_ids_exactly_k_are_fresh,
            );
        }
    };
}

/// Expands into `mod bounded_proofs { … }`: the cap holds and forgets nothing live.
#[macro_export]
macro_rules! bounded_proofs_conformance {
    ($make:expr) => {
        mod bounded_proofs {
            #[allow(unused_imports)]
            use super::*;
            #[$crate::test(flavor = "multi_thread", worker_threads = 2)]
            async fn at_the_cap_a_new_id_is_refused_and_none_is_forgotten() {
                $crate::proofs::at_the_cap_a_new_id_is_refused_and_none_is_forgotten(
                    ($make)(CAP).await,
                    CAP,
                )
                .await;
            }
            const CAP: usize = 5;
        }
    };
}

const WINDOW: Duration = Duration::from_secs(600);

/// An event id no other case (or run) uses.
fn event() -> EventId {
    let n = uuid::Uuid::new_v4().as_u128() as u64 >> 2;
    EventId(i64::try_from(n).unwrap_or(1).max(1))
}

fn key(n: u32) -> Thumbprint {
    Thumbprint(format!("key-{n}-{}", uuid::Uuid::new_v4().simple()))
}

pub async fn a_proof_id_is_fresh_once_and_replayed_after(memory: Arc<dyn ProofMemory>) {
    let (e, k) = (event(), key(1));
    let first = memory.first_use(e, &k, "jti-1", WINDOW).await.unwrap();
    assert_eq!(first, FirstUse::Fresh);
    for _ in 0..3 {
        let again = memory.first_use(e, &k, "jti-1", WINDOW).await.unwrap();
        assert_eq!(again, FirstUse::Replayed);
    }
}

pub async fn an_id_under_another_key_or_event_is_another_proof(memory: Arc<dyn ProofMemory>) {
    let (e1, e2, k1, k2) = (event(), event(), key(1), key(2));
    let fresh = FirstUse::Fresh;
    assert_eq!(
        memory.first_use(e1, &k1, "same", WINDOW).await.unwrap(),
        fresh
    );
    assert_eq!(
        memory.first_use(e1, &k2, "same", WINDOW).await.unwrap(),
        fresh
    );
    assert_eq!(
        memory.first_use(e2, &k1, "same", WINDOW).await.unwrap(),
        fresh
    );
    let replayed = memory.first_use(e2, &k1, "same", WINDOW).await.unwrap();
    assert_eq!(replayed, FirstUse::Replayed);
}

pub async fn a_remembered_id_is_forgotten_after_its_window(memory: Arc<dyn ProofMemory>) {
    let (e, k) = (event(), key(1));
    let short = Duration::from_millis(300);
    assert_eq!(
        memory.first_use(e, &k, "j", short).await.unwrap(),
        FirstUse::Fresh
    );
    assert_eq!(
        memory.first_use(e, &k, "j", short).await.unwrap(),
        FirstUse::Replayed
    );
    crate::eventually(
        "the id to be forgotten after its window",
        Duration::from_secs(10),
        Duration::from_millis(100),
        || async {
            match memory.first_use(e, &k, "j", short).await.unwrap() {
                FirstUse::Fresh => Ok(()),
                other => Err(other),
            }
        },
    )
    .await;
}

/// "N ≫ K concurrent, exactly K win": 240 uses of 12 ids at once.
pub async fn of_n_racing_first_uses_of_k_ids_exactly_k_are_fresh(memory: Arc<dyn ProofMemory>) {
    let (e, k) = (event(), key(1));
    const IDS: usize = 12;
    let tasks: Vec<_> = (0..240)
        .map(|i| {
            let (memory, k) = (memory.clone(), k.clone());
            tokio::spawn(async move {
                let jti = format!("jti-{}", i % IDS);
                let used = memory.first_use(e, &k, &jti, WINDOW).await.unwrap();
                (jti, used)
            })
        })
        .collect();
    let mut fresh = HashSet::new();
    for t in tasks {
        let (jti, used) = t.await.unwrap();
        if used == FirstUse::Fresh {
            assert!(fresh.insert(jti.clone()), "{jti} was fresh twice");
        } else {
            assert_eq!(used, FirstUse::Replayed);
        }
    }
    assert_eq!(fresh.len(), IDS);
}

pub async fn at_the_cap_a_new_id_is_refused_and_none_is_forgotten(
    memory: Arc<dyn ProofMemory>,
    cap: usize,
) {
    let (e, k) = (event(), key(1));
    for i in 0..cap {
        let used = memory
            .first_use(e, &k, &format!("j{i}"), WINDOW)
            .await
            .unwrap();
        assert_eq!(used, FirstUse::Fresh);
    }
    let over = memory.first_use(e, &k, "one-more", WINDOW).await.unwrap();
    assert_eq!(over, FirstUse::Full);
    // Nothing inside its window was forgotten to make room, and the refused id was
    // not remembered.
    for i in 0..cap {
        let used = memory
            .first_use(e, &k, &format!("j{i}"), WINDOW)
            .await
            .unwrap();
        assert_eq!(used, FirstUse::Replayed);
    }
    assert_eq!(
        memory.first_use(e, &k, "one-more", WINDOW).await.unwrap(),
        FirstUse::Full
    );
    // Another event has a cap of its own.
    assert_eq!(
        memory.first_use(event(), &k, "j0", WINDOW).await.unwrap(),
        FirstUse::Fresh
    );
}
