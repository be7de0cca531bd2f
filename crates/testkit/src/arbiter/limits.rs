//! Cases: limits, refusals, errors, and what the store reports (bitmap, counts, quote,
//! rebuild).

use std::sync::Arc;

use boxoffice_domain::{BuyerId, EventId, HoldId, OrderId};
use boxoffice_engine::ports::{ArbiterError as E, SeatArbiter, SeatChoice};

use super::fixtures::*;

pub async fn a_buyer_cannot_hold_more_than_the_limit_across_holds(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let buyer = BuyerId::random();
    fx.named(buyer, &[0, 1, 2]).await.expect("three");
    assert_eq!(
        fx.best(buyer, FLOOR, 2, false).await,
        Err(E::LimitExceeded { limit: 4 })
    );
    assert_eq!(
        fx.named(buyer, &[5, 6]).await,
        Err(E::LimitExceeded { limit: 4 })
    );
    fx.best(buyer, FLOOR, 1, false).await.expect("the fourth");
    fx.done().await;
}

pub async fn seats_sold_to_a_buyer_count_against_the_limit(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let buyer = BuyerId::random();
    let h = fx.named(buyer, &[0, 1]).await.expect("hold");
    fx.arb
        .pin(h.hold, OrderId::random(), T0.plus_millis(60_000), T0)
        .await
        .expect("pin");
    fx.arb.mark_sold(h.hold).await.expect("sold");
    fx.named(buyer, &[5]).await.expect("a third");
    assert_eq!(
        fx.named(buyer, &[6, 7]).await,
        Err(E::LimitExceeded { limit: 4 })
    );
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
    assert_eq!(
        arb.pin(stranger, OrderId::random(), T0, T0).await,
        Err(E::UnknownHold)
    );
    assert_eq!(arb.mark_uncertain(stranger).await, Err(E::UnknownHold));
    assert_eq!(arb.mark_sold(stranger).await, Err(E::UnknownHold));
    assert_eq!(arb.release(stranger).await, Err(E::UnknownHold));
    let gone = unique_event();
    let req = fx.request(b, SeatChoice::Named(vec![1]));
    let req = boxoffice_engine::ports::HoldRequest {
        hold: HoldId::random(gone),
        ..req
    };
    assert_eq!(arb.hold(&req, T0).await, Err(E::UnknownEvent));
    assert_eq!(arb.availability(gone).await, Err(E::UnknownEvent));
    assert_eq!(arb.counts(gone).await, Err(E::UnknownEvent));
    assert_eq!(arb.sold_seats(gone).await, Err(E::UnknownEvent));
    assert_eq!(arb.is_loaded(gone).await, Ok(false));
    assert_eq!(arb.expire_due(gone, T0, 10).await, Ok(vec![]));
    fx.done().await;
}

pub async fn the_availability_bitmap_has_one_bit_per_seat_most_significant_first(
    arb: Arc<dyn SeatArbiter>,
) {
    let fx = Fixture::small(arb).await;
    // 20 seats: two full bytes and four bits; the padding bits are never "free".
    assert_eq!(
        fx.arb.availability(fx.event).await,
        Ok(vec![0xff, 0xff, 0xf0])
    );
    fx.named(BuyerId::random(), &[0, 9, 19])
        .await
        .expect("hold");
    assert_eq!(
        fx.arb.availability(fx.event).await,
        Ok(vec![0x7f, 0xbf, 0xe0])
    );
    fx.done().await;
}

pub async fn counts_follow_holds_and_sales(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let h = fx.named(BuyerId::random(), &[0, 1]).await.expect("hold");
    fx.best(BuyerId::random(), FLOOR, 3, false)
        .await
        .expect("ga");
    fx.arb
        .pin(h.hold, OrderId::random(), T0.plus_millis(60_000), T0)
        .await
        .expect("pin");
    fx.arb.mark_sold(h.hold).await.expect("sold");
    let c = fx.arb.counts(fx.event).await.expect("counts");
    assert_eq!(
        (c.capacity, c.free, c.held, c.sold, c.active_holds),
        (20, 15, 3, 2, 1)
    );
    assert_eq!(fx.arb.sold_seats(fx.event).await, Ok(vec![0, 1]));
    fx.done().await;
}

pub async fn the_quote_is_each_seats_price_at_hold_time(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let h = fx.named(BuyerId::random(), &[4, 5]).await.expect("hold");
    let want: Vec<_> = h
        .seats
        .iter()
        .map(|&s| fx.layout.seats[s as usize].price)
        .collect();
    assert_eq!(h.prices, want);
    assert_eq!(h.total().0, 9_000 + 4_000, "row A is tier A, row B tier B");
    fx.done().await;
}

pub async fn a_rebuilt_event_comes_back_with_its_sold_seats_sold(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let buyer = BuyerId::random();
    fx.named(BuyerId::random(), &[7])
        .await
        .expect("a hold the rebuild forgets");
    let sold = [
        boxoffice_engine::ports::SoldSeat { seat: 2, buyer },
        boxoffice_engine::ports::SoldSeat { seat: 12, buyer },
        boxoffice_engine::ports::SoldSeat { seat: 3, buyer },
    ];
    fx.arb.load(&fx.layout, &sold).await.expect("reload");
    assert_eq!(
        fx.free(&[2, 3, 7, 12]).await,
        vec![false, false, true, false]
    );
    assert_eq!(fx.arb.sold_seats(fx.event).await, Ok(vec![2, 3, 12]));
    let c = fx.arb.counts(fx.event).await.expect("counts");
    assert_eq!((c.free, c.held, c.sold, c.active_holds), (17, 0, 3, 0));
    assert_eq!(
        fx.named(BuyerId::random(), &[2]).await,
        Err(E::SeatUnavailable(2))
    );
    assert_eq!(
        fx.named(buyer, &[0, 1]).await,
        Err(E::LimitExceeded { limit: 4 })
    );
    fx.named(buyer, &[0])
        .await
        .expect("one more is within the limit");
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
