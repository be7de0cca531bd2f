//! Cases: what happens to a hold after it is taken. Expiry, pinning, sale, release.

use std::sync::Arc;

use boxoffice_domain::{BuyerId, HoldState as S, OrderId};
use boxoffice_engine::ports::{ArbiterError as E, SeatArbiter};

use super::fixtures::*;

pub async fn a_hold_past_its_deadline_returns_its_seats_exactly_once(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let h = fx.named(BuyerId::random(), &[0, 1]).await.expect("hold");
    assert_eq!(
        fx.arb
            .expire_due(fx.event, DEADLINE.plus_millis(-1), 100)
            .await,
        Ok(vec![])
    );
    let expired = fx
        .arb
        .expire_due(fx.event, DEADLINE, 100)
        .await
        .expect("expire");
    assert_eq!(expired.len(), 1);
    assert_eq!(
        (expired[0].hold, expired[0].buyer, expired[0].order),
        (h.hold, h.buyer, None)
    );
    assert_eq!(expired[0].seats, h.seats);
    assert_eq!(
        fx.arb
            .expire_due(fx.event, DEADLINE.plus_millis(1_000), 100)
            .await,
        Ok(vec![]),
        "a second sweep finds nothing"
    );
    let c = fx.arb.counts(fx.event).await.expect("counts");
    assert_eq!((c.free, c.held, c.active_holds), (20, 0, 0));
    assert_eq!(
        fx.arb.get(h.hold).await.map(|v| v.map(|v| v.state)),
        Ok(Some(S::Expired))
    );
    fx.done().await;
}

pub async fn the_sweep_expires_at_most_its_limit(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    for seat in 0..5 {
        fx.named(BuyerId::random(), &[seat]).await.expect("hold");
    }
    assert_eq!(
        fx.arb
            .expire_due(fx.event, DEADLINE, 3)
            .await
            .map(|v| v.len()),
        Ok(3)
    );
    assert_eq!(
        fx.arb
            .expire_due(fx.event, DEADLINE, 3)
            .await
            .map(|v| v.len()),
        Ok(2)
    );
    assert_eq!(fx.arb.counts(fx.event).await.map(|c| c.free), Ok(20));
    fx.done().await;
}

pub async fn a_new_hold_first_expires_holds_that_are_due(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let late = fx.named(BuyerId::random(), &[2]).await.expect("first");
    let mut req = fx.request(
        BuyerId::random(),
        boxoffice_engine::ports::SeatChoice::Named(vec![2]),
    );
    req.expires_at = DEADLINE.plus_millis(TTL_MS);
    let second = fx
        .arb
        .hold(&req, DEADLINE)
        .await
        .expect("the seat came back at the deadline");
    assert_eq!(second.seats, vec![2]);
    assert_eq!(
        fx.arb.get(late.hold).await.map(|v| v.map(|v| v.state)),
        Ok(Some(S::Expired))
    );
    // The worker still hears of that expiry, once.
    let reports = fx
        .arb
        .expire_due(fx.event, DEADLINE, 100)
        .await
        .expect("sweep");
    assert_eq!(
        reports.iter().map(|e| e.hold).collect::<Vec<_>>(),
        vec![late.hold]
    );
    assert_eq!(fx.arb.expire_due(fx.event, DEADLINE, 100).await, Ok(vec![]));
    assert_eq!(
        fx.arb
            .counts(fx.event)
            .await
            .map(|c| (c.held, c.active_holds)),
        Ok((1, 1))
    );
    fx.done().await;
}

pub async fn a_pinned_hold_does_not_expire_before_its_pinned_deadline(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let h = fx.named(BuyerId::random(), &[4]).await.expect("hold");
    let (order, pinned) = (OrderId::random(), DEADLINE.plus_millis(60_000));
    let v = fx
        .arb
        .pin(h.hold, order, pinned, T0.plus_millis(5))
        .await
        .expect("pin");
    assert_eq!(
        (v.state, v.expires_at, v.order),
        (S::CheckingOut, pinned, Some(order))
    );
    assert_eq!(
        fx.arb
            .expire_due(fx.event, DEADLINE.plus_millis(1), 100)
            .await,
        Ok(vec![])
    );
    assert_eq!(fx.free(&[4]).await, vec![false]);
    let expired = fx
        .arb
        .expire_due(fx.event, pinned, 100)
        .await
        .expect("sweep");
    assert_eq!(
        expired
            .iter()
            .map(|e| (e.hold, e.order))
            .collect::<Vec<_>>(),
        vec![(h.hold, Some(order))]
    );
    assert_eq!(fx.free(&[4]).await, vec![true]);
    fx.done().await;
}

pub async fn an_expired_hold_cannot_be_pinned(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let a = fx.named(BuyerId::random(), &[0]).await.expect("a");
    let b = fx.named(BuyerId::random(), &[1]).await.expect("b");
    // Due but not yet swept: the pin itself must notice, and the seat comes back.
    assert_eq!(
        fx.arb
            .pin(
                a.hold,
                OrderId::random(),
                DEADLINE.plus_millis(60_000),
                DEADLINE
            )
            .await,
        Err(E::Expired)
    );
    assert_eq!(fx.free(&[0]).await, vec![true]);
    fx.arb
        .expire_due(fx.event, DEADLINE, 100)
        .await
        .expect("sweep");
    assert_eq!(
        fx.arb
            .pin(b.hold, OrderId::random(), DEADLINE.plus_millis(60_000), T0)
            .await,
        Err(E::Expired)
    );
    assert_eq!(fx.arb.mark_sold(b.hold).await, Err(E::Expired));
    assert_eq!(fx.arb.counts(fx.event).await.map(|c| c.free), Ok(20));
    fx.done().await;
}
