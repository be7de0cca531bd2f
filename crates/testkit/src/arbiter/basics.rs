//! Cases: taking seats. Named holds, best available, adjacency, GA, limits, errors.

use std::sync::Arc;

use boxoffice_domain::BuyerId;
use boxoffice_engine::ports::{ArbiterError as E, SeatArbiter};

use super::fixtures::*;

pub async fn a_second_buyer_cannot_hold_a_seat_already_held(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let first = fx.named(BuyerId::random(), &[2]).await.expect("first hold");
    assert_eq!(first.seats, vec![2]);
    assert_eq!(
        fx.named(BuyerId::random(), &[2]).await,
        Err(E::SeatUnavailable(2))
    );
    fx.done().await;
}

pub async fn a_named_hold_takes_all_its_seats_or_none(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    fx.named(BuyerId::random(), &[3]).await.expect("blocker");
    assert_eq!(
        fx.named(BuyerId::random(), &[1, 2, 3]).await,
        Err(E::SeatUnavailable(3))
    );
    assert_eq!(
        fx.free(&[1, 2, 3]).await,
        vec![true, true, false],
        "a failed hold must leave no seat behind"
    );
    assert_eq!(
        fx.arb
            .counts(fx.event)
            .await
            .map(|c| (c.held, c.active_holds)),
        Ok((1, 1))
    );
    fx.done().await;
}

pub async fn best_available_gives_the_best_ranked_seats(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let one = fx
        .best(BuyerId::random(), FRONT, 1, false)
        .await
        .expect("one");
    assert_eq!(one.seats, vec![2], "the centre of the front row ranks best");
    let two = fx
        .best(BuyerId::random(), FRONT, 2, false)
        .await
        .expect("two");
    assert_eq!(sorted(&two), vec![1, 3], "then the seats either side of it");
    fx.done().await;
}

pub async fn two_buyers_asking_for_the_best_seats_get_different_seats(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let a = fx
        .best(BuyerId::random(), FRONT, 3, false)
        .await
        .expect("a");
    let b = fx
        .best(BuyerId::random(), FRONT, 3, false)
        .await
        .expect("b");
    assert!(
        a.seats.iter().all(|s| !b.seats.contains(s)),
        "{a:?} and {b:?} share a seat"
    );
    fx.done().await;
}

pub async fn adjacent_best_available_keeps_a_party_together_in_one_row(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    // Row A keeps 0, 2 and 4 free: good seats, but no two side by side.
    fx.named(BuyerId::random(), &[1, 3]).await.expect("blocker");
    let apart = fx
        .best(BuyerId::random(), FRONT, 2, false)
        .await
        .expect("apart");
    assert_eq!(
        sorted(&apart),
        vec![0, 2],
        "without adjacency the best single seats win"
    );
    fx.arb.release(apart.hold).await.expect("release");
    let together = fx
        .best(BuyerId::random(), FRONT, 2, true)
        .await
        .expect("together");
    // Row B (5..10) is free; 6+7 and 7+8 tie on rank, the lower index wins.
    assert_eq!(sorted(&together), vec![6, 7]);
    fx.done().await;
}

pub async fn adjacent_best_available_falls_back_to_single_seats_when_no_run_is_left(
    arb: Arc<dyn SeatArbiter>,
) {
    let fx = Fixture::small(arb).await;
    fx.named(BuyerId::random(), &[1, 3])
        .await
        .expect("blocker A");
    fx.named(BuyerId::random(), &[6, 8])
        .await
        .expect("blocker B");
    // Free: 0 2 4 | 5 7 9. Seats 4 and 5 are consecutive indices in different rows.
    let v = fx
        .best(BuyerId::random(), FRONT, 2, true)
        .await
        .expect("fallback");
    assert_eq!(sorted(&v), vec![0, 2]);
    fx.done().await;
}

pub async fn general_admission_hands_out_distinct_units_and_ignores_adjacency(
    arb: Arc<dyn SeatArbiter>,
) {
    let fx = Fixture::small(arb).await;
    let a = fx.best(BuyerId::random(), FLOOR, 3, true).await.expect("a");
    let b = fx
        .best(BuyerId::random(), FLOOR, 4, false)
        .await
        .expect("b");
    let mut all: Vec<_> = a.seats.iter().chain(&b.seats).copied().collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 7);
    assert!(
        all.iter().all(|s| (10..20).contains(s)),
        "GA units are seats 10..20: {all:?}"
    );
    assert_eq!(
        fx.best(BuyerId::random(), FLOOR, 4, false).await,
        Err(E::SoldOut)
    );
    fx.best(BuyerId::random(), FLOOR, 3, false)
        .await
        .expect("the last three");
    fx.done().await;
}
