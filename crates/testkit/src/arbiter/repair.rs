//! Cases: bringing the hot store in line with the ledger's sold seats. Seats the ledger
//! sold that the hot store still offers or holds are marked sold; seats whose sale the
//! ledger cancelled go back to stock.

use std::sync::Arc;

use boxoffice_domain::{BuyerId, HoldState as S, OrderId, SeatIndex};
use boxoffice_engine::ports::{ArbiterError as E, SeatArbiter, SeatChoice, SoldSeat};

use super::fixtures::*;

fn sold_to(buyer: BuyerId, seats: &[SeatIndex]) -> Vec<SoldSeat> {
    seats.iter().map(|&seat| SoldSeat { seat, buyer }).collect()
}

pub async fn seats_marked_sold_leave_stock_and_count_for_their_buyer(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let buyer = BuyerId::random();
    let n = fx
        .arb
        .mark_seats_sold(fx.event, &sold_to(buyer, &[0, 1, 1]))
        .await;
    assert_eq!(n, Ok(2), "a seat listed twice is one seat");
    assert_eq!(fx.arb.sold_seats(fx.event).await, Ok(vec![0, 1]));
    assert_eq!(fx.free(&[0, 1, 2]).await, vec![false, false, true]);
    let c = fx.arb.counts(fx.event).await.expect("counts");
    assert_eq!((c.free, c.held, c.sold), (18, 0, 2));
    // Two tickets of four are the buyer's now.
    assert_eq!(
        fx.best(buyer, FLOOR, 3, false).await.map(|v| v.seats.len()),
        Err(E::LimitExceeded { limit: 4 })
    );
    assert_eq!(
        fx.best(buyer, FLOOR, 2, false).await.map(|v| v.seats.len()),
        Ok(2)
    );
    let again = fx
        .arb
        .mark_seats_sold(fx.event, &sold_to(buyer, &[0, 1]))
        .await;
    assert_eq!(again, Ok(0), "seats already sold stay as they are");
    fx.done().await;
}

pub async fn a_held_seat_marked_sold_ends_the_other_buyers_hold(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let holder = BuyerId::random();
    let h = fx.named(holder, &[0, 1]).await.expect("hold");
    let pinned = fx.named(BuyerId::random(), &[5, 6]).await.expect("hold");
    fx.arb
        .pin(pinned.hold, OrderId::random(), DEADLINE, T0)
        .await
        .expect("pin");
    let owner = BuyerId::random();
    let n = fx
        .arb
        .mark_seats_sold(fx.event, &sold_to(owner, &[0, 6]))
        .await;
    assert_eq!(n, Ok(2));
    for hold in [h.hold, pinned.hold] {
        let state = fx.arb.get(hold).await.map(|v| v.map(|v| v.state));
        assert_eq!(state, Ok(Some(S::Released)), "a hold on a sold seat ends");
    }
    assert_eq!(
        fx.free(&[0, 1, 5, 6]).await,
        vec![false, true, true, false],
        "the holds' other seats are back in stock"
    );
    assert_eq!(fx.arb.sold_seats(fx.event).await, Ok(vec![0, 6]));
    let c = fx.arb.counts(fx.event).await.expect("counts");
    assert_eq!((c.held, c.sold, c.active_holds), (0, 2, 0));
    // The holder's count went back with the hold.
    let four = fx.best(holder, FLOOR, 4, false).await;
    assert_eq!(four.map(|v| v.seats.len()), Ok(4));
    fx.done().await;
}

pub async fn a_sale_being_recorded_is_sold_as_a_whole(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let buyer = BuyerId::random();
    let h = fx.named(buyer, &[2, 3]).await.expect("hold");
    fx.arb
        .pin(h.hold, OrderId::random(), DEADLINE, T0)
        .await
        .expect("pin");
    let n = fx
        .arb
        .mark_seats_sold(fx.event, &sold_to(buyer, &[2, 3]))
        .await;
    assert_eq!(n, Ok(2));
    let state = fx.arb.get(h.hold).await.map(|v| v.map(|v| v.state));
    assert_eq!(state, Ok(Some(S::Sold)));
    let late = fx.arb.mark_sold(h.hold).await.map(|v| v.state);
    assert_eq!(late, Ok(S::Sold), "the sale's own mark_sold still succeeds");
    let c = fx.arb.counts(fx.event).await.expect("counts");
    assert_eq!((c.free, c.held, c.sold, c.active_holds), (18, 0, 2, 0));
    fx.done().await;
}

pub async fn marking_an_unknown_seat_sold_changes_nothing(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let buyer = BuyerId::random();
    let n = fx
        .arb
        .mark_seats_sold(fx.event, &sold_to(buyer, &[0, 999]))
        .await;
    assert_eq!(n, Err(E::NoSuchSeat(999)));
    let back = fx
        .arb
        .return_sold_seats(fx.event, &sold_to(buyer, &[0, 999]))
        .await;
    assert_eq!(back, Err(E::NoSuchSeat(999)));
    assert_eq!(fx.free(&[0]).await, vec![true]);
    let other = unique_event();
    let unknown = fx.arb.mark_seats_sold(other, &sold_to(buyer, &[0])).await;
    assert_eq!(unknown, Err(E::UnknownEvent));
    fx.done().await;
}

pub async fn returned_seats_come_back_to_stock_once(arb: Arc<dyn SeatArbiter>) {
    let buyer = BuyerId::random();
    let fx = Fixture::load(arb, &small_spec(), &sold_to(buyer, &[0, 1])).await;
    let back = fx
        .arb
        .return_sold_seats(fx.event, &sold_to(buyer, &[0]))
        .await;
    assert_eq!(back, Ok(1));
    assert_eq!(fx.free(&[0, 1]).await, vec![true, false]);
    let again = fx
        .arb
        .return_sold_seats(fx.event, &sold_to(buyer, &[0]))
        .await;
    assert_eq!(again, Ok(0), "a seat not sold is left as it is");
    let held = fx.named(BuyerId::random(), &[2]).await.expect("hold");
    let not_sold = fx
        .arb
        .return_sold_seats(fx.event, &sold_to(buyer, &[2]))
        .await;
    assert_eq!(not_sold, Ok(0), "a held seat is not the ledger's to return");
    assert_eq!(fx.free(&[2]).await, vec![false]);
    fx.arb.release(held.hold).await.expect("release");
    assert_eq!(fx.arb.sold_seats(fx.event).await, Ok(vec![1]));
    let c = fx.arb.counts(fx.event).await.expect("counts");
    assert_eq!((c.free, c.held, c.sold), (19, 0, 1));
    // The buyer owns one ticket now, so three more fit and four do not.
    let req = fx.request(buyer, SeatChoice::Named(vec![3, 4, 5, 6]));
    let four = fx.arb.hold(&req, T0).await.map(|v| v.seats.len());
    assert_eq!(four, Err(E::LimitExceeded { limit: 4 }));
    assert_eq!(
        fx.named(buyer, &[3, 4, 5]).await.map(|v| v.seats.len()),
        Ok(3)
    );
    fx.done().await;
}

pub async fn a_sold_seat_given_away_counts_against_its_new_owner(arb: Arc<dyn SeatArbiter>) {
    let (alice, bob) = (BuyerId::random(), BuyerId::random());
    let fx = Fixture::load(arb, &small_spec(), &sold_to(alice, &[0, 1, 2, 3])).await;
    let one = fx.request(alice, SeatChoice::Named(vec![5]));
    assert_eq!(
        fx.arb.hold(&one, T0).await.map(|v| v.seats.len()),
        Err(E::LimitExceeded { limit: 4 }),
        "four of four owned"
    );
    let given = fx.arb.give_sold_seat(fx.event, 0, alice, bob).await;
    assert_eq!(given, Ok(true));
    // Alice owns three and Bob one: one more seat fits her, three him, and no more.
    assert_eq!(fx.named(alice, &[5]).await.map(|v| v.seats.len()), Ok(1));
    let req = fx.request(bob, SeatChoice::Named(vec![6, 7, 8, 9]));
    let four = fx.arb.hold(&req, T0).await.map(|v| v.seats.len());
    assert_eq!(four, Err(E::LimitExceeded { limit: 4 }));
    assert_eq!(
        fx.named(bob, &[6, 7, 8]).await.map(|v| v.seats.len()),
        Ok(3)
    );
    // The seat stays sold, and nothing else moved.
    assert_eq!(fx.arb.sold_seats(fx.event).await, Ok(vec![0, 1, 2, 3]));
    let c = fx.arb.counts(fx.event).await.expect("counts");
    assert_eq!((c.free, c.held, c.sold), (12, 4, 4));
    // A seat not sold (free or held) moves no count; a seat the event lacks is refused.
    for seat in [4, 5] {
        let not_sold = fx.arb.give_sold_seat(fx.event, seat, alice, bob).await;
        assert_eq!(not_sold, Ok(false), "seat {seat}");
    }
    let none = fx.arb.give_sold_seat(fx.event, 99, alice, bob).await;
    assert_eq!(none, Err(E::NoSuchSeat(99)));
    assert_eq!(
        fx.named(alice, &[4]).await.map(|v| v.seats.len()),
        Err(E::LimitExceeded { limit: 4 }),
        "Alice's count was not given away twice"
    );
    // The seat given back counts against Alice again.
    assert_eq!(
        fx.arb.give_sold_seat(fx.event, 0, bob, alice).await,
        Ok(true)
    );
    assert_eq!(fx.named(bob, &[9]).await.map(|v| v.seats.len()), Ok(1));
    fx.done().await;
}

/// Holds racing.
const RACERS: usize = 200;

pub async fn seats_given_away_while_both_buyers_race_for_holds_keep_each_within_the_limit(
    arb: Arc<dyn SeatArbiter>,
) {
    let (alice, bob) = (BuyerId::random(), BuyerId::random());
    let fx = Fixture::load(arb, &small_spec(), &sold_to(alice, &[0, 1, 2, 3])).await;
    let start = Arc::new(tokio::sync::Barrier::new(4 + 2 * RACERS));
    let gives: Vec<_> = (0..4)
        .map(|seat| {
            let (arb, start, event) = (fx.arb.clone(), start.clone(), fx.event);
            tokio::spawn(async move {
                start.wait().await;
                arb.give_sold_seat(event, seat, alice, bob).await
            })
        })
        .collect();
    let holds: Vec<_> = (0..2 * RACERS)
        .map(|i| {
            let buyer = if i % 2 == 0 { alice } else { bob };
            let req = fx.request(
                buyer,
                SeatChoice::BestAvailable {
                    section: FLOOR,
                    quantity: 1,
                    adjacent: false,
                },
            );
            let (arb, start) = (fx.arb.clone(), start.clone());
            tokio::spawn(async move {
                start.wait().await;
                (buyer, arb.hold(&req, T0).await)
            })
        })
        .collect();
    for given in gives {
        assert_eq!(given.await.expect("a give task"), Ok(true));
    }
    let mut won = std::collections::HashMap::from([(alice, 0), (bob, 0)]);
    for hold in holds {
        match hold.await.expect("a hold task") {
            (buyer, Ok(_)) => *won.get_mut(&buyer).expect("a racer") += 1,
            (_, Err(e)) => assert_eq!(e, E::LimitExceeded { limit: 4 }),
        }
    }
    // Each was held to the limit at every hold; Bob now owns the four seats.
    assert!(won[&alice] <= 4 && won[&bob] <= 4, "{won:?}");
    let c = fx.arb.counts(fx.event).await.expect("counts");
    assert_eq!(c.held as usize, won[&alice] + won[&bob]);
    let over = fx.best(bob, FLOOR, 1, false).await.map(|v| v.seats.len());
    assert_eq!(over, Err(E::LimitExceeded { limit: 4 }), "Bob owns four");
    // Alice owns none: her holds alone count.
    let left = 4 - won[&alice] as u32;
    if left > 0 {
        let rest = fx
            .best(alice, FLOOR, left, false)
            .await
            .map(|v| v.seats.len());
        assert_eq!(rest, Ok(left as usize));
    }
    let more = fx.best(alice, FLOOR, 1, false).await.map(|v| v.seats.len());
    assert_eq!(more, Err(E::LimitExceeded { limit: 4 }));
    fx.done().await;
}
