//! Cases: retaking an ended hold's exact seats for a late payment the event honours.

use std::sync::Arc;

use boxoffice_domain::{BuyerId, HoldId, HoldState as S, Millis, OrderId, SeatIndex};
use boxoffice_engine::ports::{ArbiterError as E, HoldView, Retake, SeatArbiter, SeatChoice};

use super::fixtures::*;

/// When a retake in these cases pins the seats until.
const REPINNED: Millis = Millis(DEADLINE.0 + 120_000);

/// A hold of `seats` pinned for a new order until `DEADLINE`, then expired by a sweep.
async fn lapsed(fx: &Fixture, seats: &[SeatIndex]) -> (HoldView, OrderId) {
    let h = fx.named(BuyerId::random(), seats).await.expect("hold");
    let order = OrderId::random();
    fx.arb.pin(h.hold, order, DEADLINE, T0).await.expect("pin");
    let swept = fx.arb.expire_due(fx.event, DEADLINE, 100).await;
    assert_eq!(swept.map(|e| e.len()), Ok(1));
    (h, order)
}

fn retake_of(h: &HoldView, order: OrderId) -> Retake {
    Retake {
        hold: h.hold,
        buyer: h.buyer,
        order,
        seats: h.seats.clone(),
        pinned_until: REPINNED,
        replacing: None,
    }
}

pub async fn an_expired_hold_retaken_for_its_order_gets_its_seats_back_and_can_be_sold(
    arb: Arc<dyn SeatArbiter>,
) {
    let fx = Fixture::small(arb).await;
    let (h, order) = lapsed(&fx, &[0, 1]).await;
    assert_eq!(fx.free(&[0, 1]).await, vec![true, true]);
    let req = retake_of(&h, order);
    let v = fx.arb.retake(&req, DEADLINE).await.expect("retake");
    assert_eq!(
        (v.state, v.expires_at, v.order, v.buyer),
        (S::CheckingOut, REPINNED, Some(order), h.buyer)
    );
    assert_eq!((v.seats.clone(), v.prices.clone()), (h.seats, h.prices));
    assert_eq!(fx.free(&[0, 1]).await, vec![false, false]);
    let again = fx.arb.retake(&req, DEADLINE.plus_millis(5)).await;
    assert_eq!(again, Ok(v.clone()), "a retried retake answers as it is");
    let c = fx.arb.counts(fx.event).await.expect("counts");
    assert_eq!((c.held, c.active_holds), (2, 1));
    assert_eq!(fx.arb.mark_sold(h.hold).await.map(|v| v.state), Ok(S::Sold));
    assert_eq!(fx.arb.sold_seats(fx.event).await, Ok(vec![0, 1]));
    fx.done().await;
}

pub async fn a_retake_takes_nothing_when_any_seat_was_taken_meanwhile(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let (h, order) = lapsed(&fx, &[0, 1]).await;
    let mut other = fx.request(BuyerId::random(), SeatChoice::Named(vec![1]));
    other.expires_at = REPINNED;
    fx.arb.hold(&other, DEADLINE).await.expect("another buyer");
    assert_eq!(
        fx.arb.retake(&retake_of(&h, order), DEADLINE).await,
        Err(E::SeatUnavailable(1))
    );
    assert_eq!(fx.free(&[0, 1]).await, vec![true, false]);
    let after = fx.arb.get(h.hold).await.map(|v| v.map(|v| v.state));
    assert_eq!(after, Ok(Some(S::Expired)));
    fx.done().await;
}

pub async fn a_retake_is_refused_for_a_live_hold_and_allowed_for_a_forgotten_one(
    arb: Arc<dyn SeatArbiter>,
) {
    let fx = Fixture::small(arb).await;
    let live = fx.named(BuyerId::random(), &[2]).await.expect("hold");
    assert_eq!(
        fx.arb
            .retake(&retake_of(&live, OrderId::random()), T0)
            .await,
        Err(E::WrongState(S::Held))
    );
    // A hold the store no longer remembers (trimmed, or the event rebuilt).
    let order = OrderId::random();
    let forgotten = Retake {
        hold: HoldId::random(fx.event),
        buyer: BuyerId::random(),
        order,
        seats: vec![3, 4],
        pinned_until: REPINNED,
        replacing: None,
    };
    let v = fx.arb.retake(&forgotten, T0).await.expect("retake");
    assert_eq!((v.state, v.order), (S::CheckingOut, Some(order)));
    // It expires at its new deadline like any pinned hold.
    let swept = fx
        .arb
        .expire_due(fx.event, REPINNED, 100)
        .await
        .expect("sweep");
    let holds: Vec<_> = swept.iter().map(|e| (e.hold, e.order)).collect();
    assert!(holds.contains(&(forgotten.hold, Some(order))), "{holds:?}");
    fx.done().await;
}

pub async fn a_retake_keeps_the_buyer_limit(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let (h, order) = lapsed(&fx, &[0, 1]).await;
    // Meanwhile the same buyer holds three more seats: two back would make five of four.
    let mut more = fx.request(h.buyer, SeatChoice::Named(vec![10, 11, 12]));
    more.expires_at = REPINNED;
    fx.arb.hold(&more, DEADLINE).await.expect("a new hold");
    assert_eq!(
        fx.arb.retake(&retake_of(&h, order), DEADLINE).await,
        Err(E::LimitExceeded { limit: 4 })
    );
    assert_eq!(fx.free(&[0, 1]).await, vec![true, true]);
    fx.done().await;
}

/// A checkout retried after the hot store lost its pin pinned the hold for a second
/// order the ledger refused (the ledger has the first). The hold goes back to the first
/// order in one step: pinned for it until its new deadline, its seats never free in
/// between (released and retaken, a competitor could take one between the two). Only
/// the refused order named gives way; a hold live for any other order is left as it is.
pub async fn a_hold_pinned_for_a_refused_order_is_pinned_for_the_ledgers_in_place(
    arb: Arc<dyn SeatArbiter>,
) {
    let fx = Fixture::small(arb).await;
    let h = fx.named(BuyerId::random(), &[0, 1]).await.expect("hold");
    let (first, refused) = (OrderId::random(), OrderId::random());
    fx.arb
        .pin(h.hold, refused, DEADLINE, T0)
        .await
        .expect("pin");
    let other = Retake {
        replacing: Some(OrderId::random()),
        ..retake_of(&h, first)
    };
    assert_eq!(
        fx.arb.retake(&other, T0).await,
        Err(E::WrongState(S::CheckingOut)),
        "a hold pinned for an order not named stays as it is"
    );
    let req = Retake {
        replacing: Some(refused),
        ..retake_of(&h, first)
    };
    let v = fx.arb.retake(&req, T0).await.expect("repinned");
    assert_eq!(
        (v.state, v.expires_at, v.order, v.buyer),
        (S::CheckingOut, REPINNED, Some(first), h.buyer)
    );
    assert_eq!(
        (v.seats.clone(), v.prices.clone()),
        (h.seats.clone(), h.prices.clone())
    );
    let c = fx.arb.counts(fx.event).await.expect("counts");
    assert_eq!(
        (c.held, c.active_holds),
        (2, 1),
        "the same hold, not a second"
    );
    assert_eq!(
        fx.arb.retake(&req, T0.plus_millis(5)).await,
        Ok(v.clone()),
        "a retried repin answers as it is"
    );
    // The refused order's deadline no longer ends it; the first order's does.
    let early = fx.arb.expire_due(fx.event, DEADLINE, 100).await;
    assert_eq!(early.map(|e| e.len()), Ok(0));
    assert_eq!(fx.free(&[0, 1]).await, vec![false, false]);
    // A payment still unsure keeps its pin, and can be given to the order the ledger has.
    fx.arb.mark_uncertain(h.hold).await.expect("uncertain");
    let third = OrderId::random();
    let back = Retake {
        replacing: Some(first),
        ..retake_of(&h, third)
    };
    let v = fx.arb.retake(&back, T0).await.expect("repinned again");
    assert_eq!((v.state, v.order), (S::CheckingOut, Some(third)));
    let swept = fx.arb.expire_due(fx.event, REPINNED, 100).await;
    let swept: Vec<_> = swept.expect("sweep").iter().map(|e| e.order).collect();
    assert_eq!(swept, vec![Some(third)]);
    assert_eq!(fx.free(&[0, 1]).await, vec![true, true]);
    fx.done().await;
}
