//! The `VelocityStore` conformance suite:
//!
//! ```ignore
//! boxoffice_testkit::velocity_conformance!(async { fresh_store() });
//! ```
//!
//! The expression yields a fresh `Arc<dyn VelocityStore>` per case. Every case works
//! in an event of its own (a random id), so a shared backend passes too.

use std::sync::Arc;

use boxoffice_domain::{EventId, Millis};
use boxoffice_engine::ports::{Admission, Counter, Dimension, Join, Link, Links, VelocityStore};

/// Expands into `mod velocity { … }` with one timed tokio test per case.
#[macro_export]
macro_rules! velocity_conformance {
    ($make:expr) => {
        mod velocity {
            #[allow(unused_imports)]
            use super::*;
            $crate::__port_suite_cases!(velocity, $make;
                attempts_past_the_limit_are_refused_until_the_window_frees_a_place,
                a_refused_check_adds_nothing_to_any_counter,
                a_counter_checked_without_adding_only_reads,
                recorded_entries_are_counted_in_their_window_up_to_the_limit,
                counters_of_two_events_or_two_keys_are_apart,
                of_many_concurrent_checks_exactly_the_limit_are_admitted,
                a_cluster_counts_distinct_members_and_refuses_past_its_most,
                a_cluster_counts_at_most_its_cap,
                of_many_concurrent_new_members_exactly_the_most_join,
                clusters_are_listed_largest_first_within_the_limit,
                joining_several_clusters_is_all_or_nothing,
                of_many_concurrent_buyers_sharing_a_cluster_exactly_the_most_join_any,
                a_stash_is_taken_once_and_not_after_it_lapsed,
                of_many_concurrent_takes_of_a_stash_exactly_one_gets_it,
            );
        }
    };
}

const T0: Millis = Millis(1_700_000_000_000);
const WINDOW: u64 = 10_000;

fn event() -> EventId {
    let n = uuid::Uuid::new_v4().as_u128() as i64;
    EventId((n & i64::MAX).max(1))
}

fn counter(key: &str, limit: u32, add: bool) -> Counter {
    Counter {
        key: key.into(),
        limit,
        window_ms: WINDOW,
        add,
    }
}

fn at(ms: i64) -> Millis {
    T0.plus_millis(ms)
}

fn join<'a>(key: &'a str, member: &'a str, most: Option<u32>) -> Join<'a> {
    Join {
        dimension: Dimension::Network,
        key,
        member,
        most,
        cap: 100,
        ttl_ms: 3_600_000,
    }
}

pub async fn attempts_past_the_limit_are_refused_until_the_window_frees_a_place(
    store: Arc<dyn VelocityStore>,
) {
    let (e, c) = (event(), [counter("b:1", 3, true)]);
    for ms in [0, 1_000, 2_000] {
        assert_eq!(store.check(e, &c, at(ms)).await, Ok(Admission::Admitted));
    }
    // The place comes back when the first of the last three entries leaves the window.
    let refused = Admission::Refused {
        index: 0,
        until: at(WINDOW as i64),
    };
    assert_eq!(store.check(e, &c, at(3_000)).await, Ok(refused));
    assert_eq!(store.check(e, &c, at(9_999)).await, Ok(refused));
    assert_eq!(
        store.check(e, &c, at(WINDOW as i64)).await,
        Ok(Admission::Admitted)
    );
    let next = Admission::Refused {
        index: 0,
        until: at(1_000 + WINDOW as i64),
    };
    assert_eq!(store.check(e, &c, at(WINDOW as i64)).await, Ok(next));
}

pub async fn a_refused_check_adds_nothing_to_any_counter(store: Arc<dyn VelocityStore>) {
    let e = event();
    store
        .record(e, &[counter("d:1", 1, false)], at(0))
        .await
        .unwrap();
    let both = [counter("a:1", 5, true), counter("d:1", 1, false)];
    let refused = store.check(e, &both, at(1)).await.unwrap();
    assert!(
        matches!(refused, Admission::Refused { index: 1, .. }),
        "{refused:?}"
    );
    // Had the refused check added to "a:1", recording now would count two.
    let counts = store.record(e, &[counter("a:1", 5, true)], at(2)).await;
    assert_eq!(counts, Ok(vec![1]));
}

pub async fn a_counter_checked_without_adding_only_reads(store: Arc<dyn VelocityStore>) {
    let e = event();
    let c = [counter("d:2", 2, false)];
    for ms in 0..5 {
        assert_eq!(store.check(e, &c, at(ms)).await, Ok(Admission::Admitted));
    }
    store.record(e, &c, at(5)).await.unwrap();
    store.record(e, &c, at(6)).await.unwrap();
    let refused = store.check(e, &c, at(7)).await.unwrap();
    let until = at(5 + WINDOW as i64);
    assert_eq!(refused, Admission::Refused { index: 0, until });
}

pub async fn recorded_entries_are_counted_in_their_window_up_to_the_limit(
    store: Arc<dyn VelocityStore>,
) {
    let e = event();
    let c = [counter("d:3", 3, true), counter("l:3", 10, true)];
    let mut seen = Vec::new();
    for ms in 0..5 {
        seen.push(store.record(e, &c, at(ms)).await.unwrap());
    }
    let expected: Vec<Vec<u32>> = vec![vec![1, 1], vec![2, 2], vec![3, 3], vec![3, 4], vec![3, 5]];
    assert_eq!(seen, expected);
    // A window later, everything recorded before has left it.
    let later = store.record(e, &c, at(10 + WINDOW as i64)).await;
    assert_eq!(later, Ok(vec![1, 1]));
}

pub async fn counters_of_two_events_or_two_keys_are_apart(store: Arc<dyn VelocityStore>) {
    let (e1, e2) = (event(), event());
    let c = [counter("b:x", 1, true)];
    assert_eq!(store.check(e1, &c, at(0)).await, Ok(Admission::Admitted));
    assert!(matches!(
        store.check(e1, &c, at(1)).await,
        Ok(Admission::Refused { .. })
    ));
    assert_eq!(store.check(e2, &c, at(1)).await, Ok(Admission::Admitted));
    let other = [counter("b:y", 1, true)];
    assert_eq!(
        store.check(e1, &other, at(1)).await,
        Ok(Admission::Admitted)
    );
}

pub async fn of_many_concurrent_checks_exactly_the_limit_are_admitted(
    store: Arc<dyn VelocityStore>,
) {
    const N: usize = 64;
    const K: u32 = 7;
    let e = event();
    let tries = (0..N).map(|i| {
        let store = store.clone();
        tokio::spawn(async move {
            let c = [counter("b:race", K, true), counter("n:race", 1_000, true)];
            store.check(e, &c, at(i as i64)).await
        })
    });
    let answers = futures::future::join_all(tries).await;
    let admitted = answers
        .into_iter()
        .map(|a| a.expect("no task panics").expect("the store answers"))
        .filter(|a| *a == Admission::Admitted)
        .count();
    assert_eq!(admitted, K as usize);
    // The network counter was added to by the admitted checks only.
    let n = store
        .record(e, &[counter("n:race", 1_000, true)], at(N as i64))
        .await;
    assert_eq!(n, Ok(vec![K + 1]));
}

pub async fn a_cluster_counts_distinct_members_and_refuses_past_its_most(
    store: Arc<dyn VelocityStore>,
) {
    let e = event();
    let link = |member: &'static str| {
        let store = store.clone();
        async move { store.link(e, &join("n1", member, Some(2)), at(0)).await }
    };
    assert_eq!(link("alice").await, Ok(Link::Joined(1)));
    assert_eq!(link("alice").await, Ok(Link::Joined(1)));
    assert_eq!(link("bob").await, Ok(Link::Joined(2)));
    assert_eq!(link("carol").await, Ok(Link::Refused(2)));
    // Members already in are never refused; the refusal added no one.
    assert_eq!(link("alice").await, Ok(Link::Joined(2)));
    let listed = store.clusters(e, Dimension::Network, 10).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].key.as_str(), listed[0].buyers), ("n1", 2));
    // No limit: anyone joins.
    let open = store.link(e, &join("n1", "carol", None), at(0)).await;
    assert_eq!(open, Ok(Link::Joined(3)));
}

pub async fn a_cluster_counts_at_most_its_cap(store: Arc<dyn VelocityStore>) {
    let e = event();
    for i in 0..6 {
        let member = format!("m{i}");
        let capped = Join {
            cap: 4,
            ..join("n-cap", &member, None)
        };
        let joined = store.link(e, &capped, at(0)).await.unwrap();
        assert_eq!(joined, Link::Joined((i + 1).min(4)));
    }
}

pub async fn of_many_concurrent_new_members_exactly_the_most_join(store: Arc<dyn VelocityStore>) {
    const N: usize = 48;
    const K: u32 = 5;
    let e = event();
    let tries = (0..N).map(|i| {
        let store = store.clone();
        tokio::spawn(async move {
            let member = format!("buyer-{i}");
            let j = Join {
                dimension: Dimension::Card,
                ..join("card-race", &member, Some(K))
            };
            store.link(e, &j, at(0)).await
        })
    });
    let answers = futures::future::join_all(tries).await;
    let joined = answers
        .into_iter()
        .map(|a| a.expect("no task panics").expect("the store answers"))
        .filter(|a| matches!(a, Link::Joined(_)))
        .count();
    assert_eq!(joined, K as usize);
    let listed = store.clusters(e, Dimension::Card, 5).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].buyers, K);
}

pub async fn clusters_are_listed_largest_first_within_the_limit(store: Arc<dyn VelocityStore>) {
    let e = event();
    for (key, members) in [("small", 1), ("big", 4), ("mid-b", 2), ("mid-a", 2)] {
        for m in 0..members {
            let member = format!("{key}-{m}");
            store
                .link(e, &join(key, &member, None), at(0))
                .await
                .unwrap();
        }
    }
    let device = Join {
        dimension: Dimension::Device,
        ..join("elsewhere", "x", None)
    };
    store.link(e, &device, at(0)).await.unwrap();
    let listed = store.clusters(e, Dimension::Network, 3).await.unwrap();
    let seen: Vec<(&str, u32)> = listed.iter().map(|c| (c.key.as_str(), c.buyers)).collect();
    assert_eq!(seen, [("big", 4), ("mid-a", 2), ("mid-b", 2)]);
    let devices = store.clusters(e, Dimension::Device, 10).await.unwrap();
    assert_eq!(devices.len(), 1);
    assert!(
        store
            .clusters(event(), Dimension::Network, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn joining_several_clusters_is_all_or_nothing(store: Arc<dyn VelocityStore>) {
    let e = event();
    let device = |member| Join {
        dimension: Dimension::Device,
        ..join("d1", member, Some(5))
    };
    let full = store
        .link(e, &join("n-full", "alice", Some(1)), at(0))
        .await;
    assert_eq!(full, Ok(Link::Joined(1)));
    // Bob's network cluster has no room: he joins neither it nor his device's.
    let both = [device("bob"), join("n-full", "bob", Some(1))];
    let refused = store.link_all(e, &both, at(1)).await;
    assert_eq!(
        refused,
        Ok(Links::Refused {
            index: 1,
            buyers: 1
        })
    );
    assert!(
        store
            .clusters(e, Dimension::Device, 10)
            .await
            .unwrap()
            .is_empty(),
        "a refused buyer joined no cluster"
    );
    // Alice is in the full cluster already: she joins both.
    let both = [device("alice"), join("n-full", "alice", Some(1))];
    assert_eq!(
        store.link_all(e, &both, at(2)).await,
        Ok(Links::Joined(vec![1, 1]))
    );
    let again = store.link_all(e, &both, at(3)).await;
    assert_eq!(again, Ok(Links::Joined(vec![1, 1])));
    let open = [device("carol"), join("n-other", "carol", None)];
    assert_eq!(
        store.link_all(e, &open, at(4)).await,
        Ok(Links::Joined(vec![2, 1]))
    );
    assert_eq!(
        store.link_all(e, &[], at(5)).await,
        Ok(Links::Joined(vec![]))
    );
}

pub async fn of_many_concurrent_buyers_sharing_a_cluster_exactly_the_most_join_any(
    store: Arc<dyn VelocityStore>,
) {
    const N: usize = 48;
    const K: u32 = 6;
    let e = event();
    let tries = (0..N).map(|i| {
        let store = store.clone();
        tokio::spawn(async move {
            let (member, own) = (format!("buyer-{i}"), format!("device-{i}"));
            let joins = [
                Join {
                    dimension: Dimension::Device,
                    ..join(&own, &member, Some(3))
                },
                join("shared-net", &member, Some(K)),
            ];
            store.link_all(e, &joins, at(0)).await
        })
    });
    let answers = futures::future::join_all(tries).await;
    let joined = answers
        .into_iter()
        .map(|a| a.expect("no task panics").expect("the store answers"))
        .filter(|a| matches!(a, Links::Joined(_)))
        .count();
    assert_eq!(joined, K as usize);
    // Only the buyers who joined the shared network joined their own device's cluster.
    let devices = store.clusters(e, Dimension::Device, 100).await.unwrap();
    assert_eq!(devices.len(), K as usize);
    let net = store.clusters(e, Dimension::Network, 10).await.unwrap();
    assert_eq!(net.len(), 1);
    assert_eq!(net[0].buyers, K);
}

pub async fn a_stash_is_taken_once_and_not_after_it_lapsed(store: Arc<dyn VelocityStore>) {
    let (e, other) = (event(), event());
    store
        .stash(e, "o:1", "c0ffee 203.0.113.0/24", 60_000, at(0))
        .await
        .unwrap();
    assert_eq!(store.take(other, "o:1", at(1)).await, Ok(None));
    assert_eq!(store.take(e, "o:2", at(1)).await, Ok(None));
    let taken = store.take(e, "o:1", at(1)).await;
    assert_eq!(taken, Ok(Some("c0ffee 203.0.113.0/24".to_string())));
    assert_eq!(store.take(e, "o:1", at(2)).await, Ok(None));
    // A stash replaced is taken as last kept.
    store.stash(e, "o:3", "a", 60_000, at(0)).await.unwrap();
    store.stash(e, "o:3", "b", 60_000, at(0)).await.unwrap();
    assert_eq!(store.take(e, "o:3", at(1)).await, Ok(Some("b".into())));
    // One that lapsed is gone (a store that keeps time itself lets a moment pass).
    store.stash(e, "o:4", "gone", 1, at(0)).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert_eq!(store.take(e, "o:4", at(1_000)).await, Ok(None));
    let long = "x".repeat(boxoffice_engine::ports::MAX_STASH_LEN + 1);
    assert!(store.stash(e, "o:5", &long, 60_000, at(0)).await.is_err());
}

pub async fn of_many_concurrent_takes_of_a_stash_exactly_one_gets_it(
    store: Arc<dyn VelocityStore>,
) {
    const N: usize = 32;
    let e = event();
    store.stash(e, "o:race", "v", 60_000, at(0)).await.unwrap();
    let takes = (0..N).map(|_| {
        let store = store.clone();
        tokio::spawn(async move { store.take(e, "o:race", at(1)).await })
    });
    let got = futures::future::join_all(takes)
        .await
        .into_iter()
        .map(|t| t.expect("no task panics").expect("the store answers"))
        .filter(Option::is_some)
        .count();
    assert_eq!(got, 1);
}
