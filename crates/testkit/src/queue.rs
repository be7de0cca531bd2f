//! The `QueueStore` conformance suite: `queue_conformance!(async { Arc::new(..) as
//! Arc<dyn QueueStore> })`. Same rules as the arbiter suite: random event ids, each case
//! drops its events.

use std::collections::HashSet;
use std::sync::Arc;

use boxoffice_domain::{BuyerId, Millis};
use boxoffice_engine::ports::Place;

use crate::arbiter::unique_event;

mod pool;
pub use pool::*;

/// For the macros: the port, reachable as `$crate::queue::QueueStore`.
#[doc(hidden)]
pub use boxoffice_engine::ports::QueueStore;

#[macro_export]
macro_rules! queue_conformance {
    ($make:expr) => {
        mod queue {
            #[allow(unused_imports)]
            use super::*;
            $crate::__queue_cases!([$crate::__conformance_cases] queue, QueueStore, $make;);
        }
    };
}

pub async fn concurrent_joins_get_unique_dense_positions(q: Arc<dyn QueueStore>) {
    const N: u64 = 10_000;
    let event = unique_event();
    let tasks: Vec<_> = (0..N)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.join(event, BuyerId::random(), true).await })
        })
        .collect();
    let mut positions = HashSet::new();
    for t in tasks {
        let place = t.await.expect("join task").expect("join");
        assert!(place.new);
        let position = place.position.expect("an open line places at once");
        assert!(
            positions.insert(position),
            "position {position} given twice"
        );
    }
    assert_eq!(
        positions,
        (1..=N).collect::<HashSet<_>>(),
        "positions must be 1..=N with no gap"
    );
    assert_eq!(q.state(event).await.map(|s| s.queue_length), Ok(N));
    q.drop_event(event).await.expect("drop");
}

/// The admission ticker, joins and status reads can all find an unopened line at once
/// (in one process as across nodes): exactly one of them may open or put it back. Its
/// holder renews it while it works; only the holder gives it up; once it lets go, or its
/// claim lapses, the claim can be taken again, and the old holder's renewal then fails.
pub async fn of_the_callers_that_find_a_line_unopened_exactly_one_claims_it(
    q: Arc<dyn QueueStore>,
) {
    let event = unique_event();
    let claims: Vec<_> = (0..30)
        .map(|i| {
            let q = q.clone();
            tokio::spawn(async move { q.claim_line(event, &format!("caller-{i}"), 5_000).await })
        })
        .collect();
    let mut won = Vec::new();
    for (i, c) in claims.into_iter().enumerate() {
        if c.await.expect("claim task").expect("claim") {
            won.push(format!("caller-{i}"));
        }
    }
    assert_eq!(won.len(), 1, "exactly one claim of thirty");
    let holder = won[0].as_str();
    assert_eq!(
        q.claim_line(event, "other", 5_000).await,
        Ok(false),
        "still held"
    );
    assert_eq!(
        q.renew_line_claim(event, holder, 5_000).await,
        Ok(true),
        "renewed"
    );
    assert_eq!(
        q.renew_line_claim(event, "other", 5_000).await,
        Ok(false),
        "not theirs"
    );
    q.release_line_claim(event, "other").await.expect("release");
    assert_eq!(
        q.claim_line(event, "other", 100).await,
        Ok(false),
        "not given up"
    );
    q.release_line_claim(event, holder).await.expect("release");
    assert_eq!(
        q.claim_line(event, "other", 100).await,
        Ok(true),
        "released"
    );
    assert_eq!(
        q.claim_line(event, holder, 100).await,
        Ok(false),
        "held again"
    );
    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    assert_eq!(
        q.renew_line_claim(event, "other", 100).await,
        Ok(false),
        "lapsed for good"
    );
    assert_eq!(
        q.claim_line(event, "third", 100).await,
        Ok(true),
        "anyone's once lapsed"
    );
    assert_eq!(
        q.renew_line_claim(event, "other", 100).await,
        Ok(false),
        "taken over"
    );
    q.release_line_claim(event, "third").await.expect("release");
    q.drop_event(event).await.expect("drop");
}

pub async fn a_buyer_who_joins_again_keeps_their_place(q: Arc<dyn QueueStore>) {
    let (event, a, b) = (unique_event(), BuyerId::random(), BuyerId::random());
    assert_eq!(
        q.join(event, a, true).await,
        Ok(Place {
            position: Some(1),
            new: true
        })
    );
    assert_eq!(
        q.join(event, b, true).await,
        Ok(Place {
            position: Some(2),
            new: true
        })
    );
    assert_eq!(
        q.join(event, a, true).await,
        Ok(Place {
            position: Some(1),
            new: false
        })
    );
    assert_eq!(q.state(event).await.map(|s| s.queue_length), Ok(2));
    q.drop_event(event).await.expect("drop");
}

pub async fn admission_never_moves_backwards_nor_past_the_end_of_the_line(q: Arc<dyn QueueStore>) {
    let event = unique_event();
    assert_eq!(
        q.state(event)
            .await
            .map(|s| (s.serving_up_to, s.queue_length)),
        Ok((0, 0))
    );
    for _ in 0..5 {
        q.join(event, BuyerId::random(), true).await.expect("join");
    }
    let s = q.advance(event, 3, Millis(10)).await.expect("advance");
    assert_eq!((s.serving_up_to, s.advanced_at), (3, Millis(10)));
    let s = q.advance(event, 2, Millis(20)).await.expect("backwards");
    assert_eq!(
        (s.serving_up_to, s.advanced_at),
        (3, Millis(10)),
        "a step back changes nothing"
    );
    let s = q
        .advance(event, 99, Millis(30))
        .await
        .expect("past the end");
    assert_eq!((s.serving_up_to, s.advanced_at), (5, Millis(30)));
    assert_eq!(q.state(event).await, Ok(s));
    q.drop_event(event).await.expect("drop");
}

pub async fn each_position_is_admitted_at_the_time_of_the_batch_that_reached_it(
    q: Arc<dyn QueueStore>,
) {
    let event = unique_event();
    for _ in 0..6 {
        q.join(event, BuyerId::random(), true).await.expect("join");
    }
    assert_eq!(
        q.admitted_at(event, 1).await,
        Ok(None),
        "nobody admitted yet"
    );
    q.advance(event, 2, Millis(10)).await.expect("advance");
    q.advance(event, 4, Millis(20)).await.expect("advance");
    // A step back, or to where the line already is, admits nobody.
    q.advance(event, 3, Millis(30)).await.expect("backwards");
    q.advance(event, 4, Millis(35)).await.expect("in place");
    q.advance(event, 99, Millis(40))
        .await
        .expect("past the end");
    let at = |p| q.admitted_at(event, p);
    let expected = [
        Some(10),
        Some(10),
        Some(20),
        Some(20),
        Some(40),
        Some(40),
        None,
    ];
    for (p, want) in (1..=7).zip(expected) {
        assert_eq!(at(p).await, Ok(want.map(Millis)), "position {p}");
    }
    assert_eq!(at(0).await, Ok(None));
    q.drop_event(event).await.expect("drop");
    assert_eq!(
        q.admitted_at(event, 1).await,
        Ok(None),
        "dropped with the line"
    );
}

pub async fn each_event_has_its_own_line(q: Arc<dyn QueueStore>) {
    let (one, two, buyer) = (unique_event(), unique_event(), BuyerId::random());
    q.join(one, BuyerId::random(), true).await.expect("join");
    assert_eq!(
        q.join(one, buyer, true).await.map(|p| p.position),
        Ok(Some(2))
    );
    assert_eq!(
        q.join(two, buyer, true).await,
        Ok(Place {
            position: Some(1),
            new: true
        })
    );
    q.advance(one, 2, Millis(1)).await.expect("advance");
    q.set_sold_out(one, true).await.expect("sold out");
    let other = q.state(two).await.expect("state");
    assert_eq!(
        (other.serving_up_to, other.queue_length, other.sold_out),
        (0, 1, false)
    );
    q.drop_event(one).await.expect("drop");
    q.drop_event(two).await.expect("drop");
}

pub async fn the_sold_out_flag_is_set_and_cleared(q: Arc<dyn QueueStore>) {
    let event = unique_event();
    q.join(event, BuyerId::random(), true).await.expect("join");
    q.set_sold_out(event, true).await.expect("set");
    assert_eq!(q.state(event).await.map(|s| s.sold_out), Ok(true));
    // Expired holds can put seats back on sale: the line is told again.
    q.set_sold_out(event, false).await.expect("clear");
    assert_eq!(q.state(event).await.map(|s| s.sold_out), Ok(false));
    q.drop_event(event).await.expect("drop");
}

pub async fn a_dropped_event_starts_a_fresh_line(q: Arc<dyn QueueStore>) {
    let (event, buyer) = (unique_event(), BuyerId::random());
    q.join(event, BuyerId::random(), true).await.expect("join");
    q.join(event, buyer, true).await.expect("join");
    q.drop_event(event).await.expect("drop");
    assert_eq!(q.state(event).await.map(|s| s.queue_length), Ok(0));
    assert_eq!(
        q.join(event, buyer, true).await,
        Ok(Place {
            position: Some(1),
            new: true
        })
    );
    q.drop_event(event).await.expect("drop");
}

/// A digest no other case (nor run) uses.
fn fresh_digest() -> [u8; 32] {
    let mut d = [0u8; 32];
    d[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    d[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    d
}

pub async fn a_human_check_is_remembered_for_its_first_owner_only(q: Arc<dyn QueueStore>) {
    let (event, a, b) = (unique_event(), BuyerId::random(), BuyerId::random());
    let (d, other) = (fresh_digest(), fresh_digest());
    let now = Millis(1_000_000);
    let until = now.plus_secs(60);
    assert_eq!(q.remembered_check(event, &d, now).await, Ok(None));
    assert_eq!(q.remember_check(event, &d, a, until, now).await, Ok(a));
    assert_eq!(
        q.remember_check(event, &d, b, until, now).await,
        Ok(a),
        "the second owner reads the first"
    );
    assert_eq!(q.remembered_check(event, &d, now).await, Ok(Some(a)));
    assert_eq!(q.remembered_check(event, &other, now).await, Ok(None));
    assert_eq!(q.remember_check(event, &other, b, until, now).await, Ok(b));
    let elsewhere = unique_event();
    assert_eq!(
        q.remembered_check(elsewhere, &d, now).await,
        Ok(None),
        "each event remembers its own checks"
    );
    q.drop_event(event).await.expect("drop");
    q.drop_event(elsewhere).await.expect("drop");
}

pub async fn a_remembered_check_lapses_at_its_end(q: Arc<dyn QueueStore>) {
    let (event, a, b) = (unique_event(), BuyerId::random(), BuyerId::random());
    let d = fresh_digest();
    let now = Millis(1_000_000);
    // 150 ms: a store that keeps time itself (Redis) sees it lapse in real time too.
    let until = now.plus_millis(150);
    assert_eq!(q.remember_check(event, &d, a, until, now).await, Ok(a));
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let later = now.plus_millis(400);
    assert_eq!(q.remembered_check(event, &d, later).await, Ok(None));
    assert_eq!(
        q.remember_check(event, &d, b, later.plus_secs(60), later)
            .await,
        Ok(b),
        "a lapsed check is anyone's again"
    );
    q.drop_event(event).await.expect("drop");
}

pub async fn concurrent_uses_of_one_check_have_exactly_one_owner(q: Arc<dyn QueueStore>) {
    const N: usize = 200;
    let event = unique_event();
    let d = fresh_digest();
    let now = Millis(1_000_000);
    let buyers: Vec<BuyerId> = (0..N).map(|_| BuyerId::random()).collect();
    let tasks: Vec<_> = buyers
        .iter()
        .map(|&b| {
            let q = q.clone();
            tokio::spawn(
                async move { q.remember_check(event, &d, b, now.plus_secs(60), now).await },
            )
        })
        .collect();
    let mut owners = HashSet::new();
    for t in tasks {
        owners.insert(t.await.expect("task").expect("remember"));
    }
    assert_eq!(owners.len(), 1, "every caller reads the same single owner");
    let owner = owners.into_iter().next().expect("one owner");
    assert!(buyers.contains(&owner));
    assert_eq!(q.remembered_check(event, &d, now).await, Ok(Some(owner)));
    q.drop_event(event).await.expect("drop");
}

/// The suite's case names, handed to the macro in brackets after the other arguments:
/// the one list that every runner of the suite (per-case tests, a sequential run on a
/// cluster) expands, so none of them can miss a case.
#[doc(hidden)]
#[macro_export]
macro_rules! __queue_cases {
    ([$($cb:tt)*] $($args:tt)*) => {
        $($cb)*!($($args)*
                concurrent_joins_get_unique_dense_positions,
                a_buyer_who_joins_again_keeps_their_place,
                admission_never_moves_backwards_nor_past_the_end_of_the_line,
                each_position_is_admitted_at_the_time_of_the_batch_that_reached_it,
                each_event_has_its_own_line,
                the_sold_out_flag_is_set_and_cleared,
                a_dropped_event_starts_a_fresh_line,
                pool_members_wait_without_a_position_and_later_arrivals_append,
                placing_the_pool_gives_it_the_first_positions_in_the_given_order,
                placing_a_pool_that_is_not_the_sealed_one_is_refused,
                joins_racing_the_opening_still_get_unique_dense_positions,
                a_finished_shopper_is_counted_once,
                the_first_writer_of_a_setting_wins_when_asked,
                a_line_join_waits_until_the_line_is_opened,
                a_restored_line_has_its_places_pool_and_admissions_back,
                a_human_check_is_remembered_for_its_first_owner_only,
                a_remembered_check_lapses_at_its_end,
                concurrent_uses_of_one_check_have_exactly_one_owner,
                of_the_callers_that_find_a_line_unopened_exactly_one_claims_it,
        );
    };
}
