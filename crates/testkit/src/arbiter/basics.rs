//! Cases: taking seats. Named holds, best available, adjacency, GA, limits, errors.

use std::sync::Arc;

use boxoffice_domain::{BuyerId, EventId, HoldId, OrderId};
use boxoffice_engine::ports::{ArbiterError as E, SeatArbiter, SeatChoice};

use super::fixtures::*;

pub async fn a_second_buyer_cannot_hold_a_seat_already_held(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let first = fx.named(BuyerId::random(), &[2]).await.expect("first hold");
    assert_eq!(first.seats, vec![2]);
    assert_eq!(fx.named(BuyerId::random(), &[2]).await, Err(E::SeatUnavailable(2)));
    fx.done().await;
}

pub async fn a_named_hold_takes_all_its_seats_or_none(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    fx.named(BuyerId::random(), &[3]).await.expect("blocker");
    assert_eq!(fx.named(BuyerId::random(), &[1, 2, 3]).await, Err(E::SeatUnavailable(3)));
    assert_eq!(fx.free(&[1, 2, 3]).await, vec![true, true, false], "a failed hold must leave no seat behind");
    assert_eq!(fx.arb.counts(fx.event).await.map(|c| (c.held, c.active_holds)), Ok((1, 1)));
    fx.done().await;
}

pub async fn best_available_gives_the_best_ranked_seats(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let one = fx.best(BuyerId::random(), FRONT, 1, false).await.expect("one");
    assert_eq!(one.seats, vec![2], "the centre of the front row ranks best");
    let two = fx.best(BuyerId::random(), FRONT, 2, false).await.expect("two");
    assert_eq!(sorted(&two), vec![1, 3], "then the seats either side of it");
    fx.done().await;
}

pub async fn two_buyers_asking_for_the_best_seats_get_different_seats(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let a = fx.best(BuyerId::random(), FRONT, 3, false).await.expect("a");
    let b = fx.best(BuyerId::random(), FRONT, 3, false).await.expect("b");
    assert!(a.seats.iter().all(|s| !b.seats.contains(s)), "{a:?} and {b:?} share a seat");
    fx.done().await;
}

pub async fn adjacent_best_available_keeps_a_party_together_in_one_row(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    // Row A keeps 0, 2 and 4 free: good seats, but no two side by side.
    fx.named(BuyerId::random(), &[1, 3]).await.expect("blocker");
    let apart = fx.best(BuyerId::random(), FRONT, 2, false).await.expect("apart");
    assert_eq!(sorted(&apart), vec![0, 2], "without adjacency the best single seats win");
    fx.arb.release(apart.hold).await.expect("release");
    let together = fx.best(BuyerId::random(), FRONT, 2, true).await.expect("together");
    // Row B (5..10) is free; 6+7 and 7+8 tie on rank, the lower index wins.
    assert_eq!(sorted(&together), vec![6, 7]);
    fx.done().await;
}

pub async fn adjacent_best_available_falls_back_to_single_seats_when_no_run_is_left(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    fx.named(BuyerId::random(), &[1, 3]).await.expect("blocker A");
    fx.named(BuyerId::random(), &[6, 8]).await.expect("blocker B");
    // Free: 0 2 4 | 5 7 9. Seats 4 and 5 are consecutive indices in different rows.
    let v = fx.best(BuyerId::random(), FRONT, 2, true).await.expect("fallback");
    assert_eq!(sorted(&v), vec![0, 2]);
    fx.done().await;
}

pub async fn general_admission_hands_out_distinct_units_and_ignores_adjacency(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let a = fx.best(BuyerId::random(), FLOOR, 3, true).await.expect("a");
    let b = fx.best(BuyerId::random(), FLOOR, 4, false).await.expect("b");
    let mut all: Vec<_> = a.seats.iter().chain(&b.seats).copied().collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 7);
    assert!(all.iter().all(|s| (10..20).contains(s)), "GA units are seats 10..20: {all:?}");
    assert_eq!(fx.best(BuyerId::random(), FLOOR, 4, false).await, Err(E::SoldOut));
    fx.best(BuyerId::random(), FLOOR, 3, false).await.expect("the last three");
    fx.done().await;
}

pub async fn a_buyer_cannot_hold_more_than_the_limit_across_holds(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let buyer = BuyerId::random();
    fx.named(buyer, &[0, 1, 2]).await.expect("three");
    assert_eq!(fx.best(buyer, FLOOR, 2, false).await, Err(E::LimitExceeded { limit: 4 }));
    assert_eq!(fx.named(buyer, &[5, 6]).await, Err(E::LimitExceeded { limit: 4 }));
    fx.best(buyer, FLOOR, 1, false).await.expect("the fourth");
    fx.done().await;
}

pub async fn seats_sold_to_a_buyer_count_against_the_limit(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let buyer = BuyerId::random();
    let h = fx.named(buyer, &[0, 1]).await.expect("hold");
    fx.arb.pin(h.hold, OrderId::random(), T0.plus_millis(60_000), T0).await.expect("pin");
    fx.arb.mark_sold(h.hold).await.expect("sold");
    fx.named(buyer, &[5]).await.expect("a third");
    assert_eq!(fx.named(buyer, &[6, 7]).await, Err(E::LimitExceeded { limit: 4 }));
    fx.done().await;
}

pub async fn bad_quantities_are_refused(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let b = BuyerId::random();
    assert_eq!(fx.named(b, &[]).await, Err(E::BadQuantity));
    assert_eq!(fx.named(b, &[1, 1]).await, Err(E::BadQuantity));
    assert_eq!(fx.named(b, &[0, 1, 2, 3, 4]).await, Err(E::BadQuantity));
    assert_eq!(fx.best(b, FRONT, 0, false).await, Err(E::BadQuantity));
    assert_eq!(fx.best(b, FRONT, 5, false).await, Err(E::BadQuantity));
    assert_eq!(fx.arb.counts(fx.event).await.map(|c| c.held), Ok(0));
    fx.done().await;
}

pub async fn unknown_events_holds_seats_and_sections_are_errors(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let (arb, b) = (fx.arb.clone(), BuyerId::random());
    assert_eq!(fx.named(b, &[20]).await, Err(E::NoSuchSeat(20)));
    assert_eq!(fx.best(b, 7, 1, false).await, Err(E::NoSuchSection));
    let stranger = HoldId::random(fx.event);
    assert_eq!(arb.get(stranger).await, Ok(None));
    assert_eq!(arb.pin(stranger, OrderId::random(), T0, T0).await, Err(E::UnknownHold));
    assert_eq!(arb.mark_uncertain(stranger).await, Err(E::UnknownHold));
    assert_eq!(arb.mark_sold(stranger).await, Err(E::UnknownHold));
    assert_eq!(arb.release(stranger).await, Err(E::UnknownHold));
    let gone = unique_event();
    let req = fx.request(b, SeatChoice::Named(vec![1]));
    let req = boxoffice_engine::ports::HoldRequest { hold: HoldId::random(gone), ..req };
    assert_eq!(arb.hold(&req, T0).await, Err(E::UnknownEvent));
    assert_eq!(arb.availability(gone).await, Err(E::UnknownEvent));
    assert_eq!(arb.counts(gone).await, Err(E::UnknownEvent));
    assert_eq!(arb.sold_seats(gone).await, Err(E::UnknownEvent));
    assert_eq!(arb.is_loaded(gone).await, Ok(false));
    assert_eq!(arb.expire_due(gone, T0, 10).await, Ok(vec![]));
    fx.done().await;
}

pub async fn the_availability_bitmap_has_one_bit_per_seat_most_significant_first(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    // 20 seats: two full bytes and four bits; the padding bits are never "free".
    assert_eq!(fx.arb.availability(fx.event).await, Ok(vec![0xff, 0xff, 0xf0]));
    fx.named(BuyerId::random(), &[0, 9, 19]).await.expect("hold");
    assert_eq!(fx.arb.availability(fx.event).await, Ok(vec![0x7f, 0xbf, 0xe0]));
    fx.done().await;
}

pub async fn counts_follow_holds_and_sales(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let h = fx.named(BuyerId::random(), &[0, 1]).await.expect("hold");
    fx.best(BuyerId::random(), FLOOR, 3, false).await.expect("ga");
    fx.arb.pin(h.hold, OrderId::random(), T0.plus_millis(60_000), T0).await.expect("pin");
    fx.arb.mark_sold(h.hold).await.expect("sold");
    let c = fx.arb.counts(fx.event).await.expect("counts");
    assert_eq!((c.capacity, c.free, c.held, c.sold, c.active_holds), (20, 15, 3, 2, 1));
    assert_eq!(fx.arb.sold_seats(fx.event).await, Ok(vec![0, 1]));
    fx.done().await;
}

pub async fn the_quote_is_each_seats_price_at_hold_time(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let h = fx.named(BuyerId::random(), &[4, 5]).await.expect("hold");
    let want: Vec<_> = h.seats.iter().map(|&s| fx.layout.seats[s as usize].price).collect();
    assert_eq!(h.prices, want);
    assert_eq!(h.total().0, 9_000 + 4_000, "row A is tier A, row B tier B");
    fx.done().await;
}

pub async fn a_rebuilt_event_comes_back_with_its_sold_seats_sold(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let buyer = BuyerId::random();
    fx.named(BuyerId::random(), &[7]).await.expect("a hold the rebuild forgets");
    let sold = [
        boxoffice_engine::ports::SoldSeat { seat: 2, buyer },
        boxoffice_engine::ports::SoldSeat { seat: 12, buyer },
        boxoffice_engine::ports::SoldSeat { seat: 3, buyer },
    ];
    fx.arb.load(&fx.layout, &sold).await.expect("reload");
    assert_eq!(fx.free(&[2, 3, 7, 12]).await, vec![false, false, true, false]);
    assert_eq!(fx.arb.sold_seats(fx.event).await, Ok(vec![2, 3, 12]));
    let c = fx.arb.counts(fx.event).await.expect("counts");
    assert_eq!((c.free, c.held, c.sold, c.active_holds), (17, 0, 3, 0));
    assert_eq!(fx.named(BuyerId::random(), &[2]).await, Err(E::SeatUnavailable(2)));
    assert_eq!(fx.named(buyer, &[0, 1]).await, Err(E::LimitExceeded { limit: 4 }));
    fx.named(buyer, &[0]).await.expect("one more is within the limit");
    fx.done().await;
}

pub async fn an_unloaded_event_is_forgotten(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let h = fx.named(BuyerId::random(), &[0]).await.expect("hold");
    let (arb, event): (Arc<dyn SeatArbiter>, EventId) = (fx.arb.clone(), fx.event);
    fx.done().await;
    assert_eq!(arb.get(h.hold).await, Ok(None));
    assert_eq!(arb.counts(event).await, Err(E::UnknownEvent));
}
