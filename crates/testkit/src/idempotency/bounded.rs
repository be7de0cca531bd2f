//! Stores kept in memory (in-process, Redis) hold at most a configured number of
//! records. At the cap the oldest record that is not running makes room; a running
//! claim never does, so a store full of running claims refuses new keys (`Full`).

use std::sync::Arc;

use boxoffice_engine::ports::{Begin, IdempotencyStore, ReplayKey};

use super::{FP, NOW, claimant, created, scope};

/// The cap every case builds its store with: a multiple of the shard counts.
pub const CAP: usize = 128;

/// `$make` is a closure from a cap to a future of a fresh store with that cap (one the
/// other cases of the run do not share, since they fill it).
#[macro_export]
macro_rules! bounded_idempotency_conformance {
    ($make:expr) => {
        mod idempotency_bounded {
            #[allow(unused_imports)]
            use super::*;
            $crate::__bounded_idempotency_cases!([$crate::__bounded_cases] $make;);
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __bounded_idempotency_cases {
    ([$($cb:tt)*] $($args:tt)*) => {
        $($cb)*!($($args)*
            replay_records_stay_under_their_count_cap,
            the_oldest_finished_records_make_room_and_running_claims_never_do,
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __bounded_cases {
    ($make:expr; $($case:ident),+ $(,)?) => {
        $(
            #[$crate::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let store = ($make)($crate::idempotency::CAP).await;
                $crate::idempotency::$case(store).await;
            }
        )+
    };
}

/// Running claims cannot be forgotten, so how many are accepted is how many the store
/// holds: never more than the cap.
pub async fn replay_records_stay_under_their_count_cap(store: Arc<dyn IdempotencyStore>) {
    let (s, me) = (scope(), claimant());
    let mut accepted = Vec::new();
    let mut refused = 0;
    for i in 0..4 * CAP {
        let key = format!("k{i}");
        match store
            .begin(&ReplayKey::new(&s, &key), &FP, NOW, &me)
            .await
            .unwrap()
        {
            Begin::Proceed => accepted.push(key),
            Begin::Full => refused += 1,
            other => panic!("a new key answered {other:?}"),
        }
    }
    assert!(
        accepted.len() <= CAP && accepted.len() >= CAP / 2,
        "{} running claims held under a cap of {CAP}",
        accepted.len()
    );
    assert_eq!(accepted.len() + refused, 4 * CAP);
    for key in &accepted {
        assert_eq!(
            store
                .begin(&ReplayKey::new(&s, key), &FP, NOW.plus_millis(1), &me)
                .await
                .unwrap(),
            Begin::InFlight,
            "a running claim was forgotten"
        );
    }
}

pub async fn the_oldest_finished_records_make_room_and_running_claims_never_do(
    store: Arc<dyn IdempotencyStore>,
) {
    let (s, me) = (scope(), claimant());
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "running"), &FP, NOW, &me)
            .await
            .unwrap(),
        Begin::Proceed
    );
    let flood = 16 * CAP;
    for i in 0..flood {
        let (key, at) = (format!("k{i}"), NOW.plus_millis(1 + i as i64));
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
    let after = NOW.plus_millis(1 + flood as i64);
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "running"), &FP, after, &me)
            .await
            .unwrap(),
        Begin::InFlight,
        "the running claim outlived a flood of newer records"
    );
    let newest = format!("k{}", flood - 1);
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, &newest), &FP, after, &me)
            .await
            .unwrap(),
        Begin::Replay(created())
    );
    assert_eq!(
        store
            .begin(&ReplayKey::new(&s, "k0"), &FP, after, &me)
            .await
            .unwrap(),
        Begin::Proceed,
        "the oldest record made room"
    );
}
