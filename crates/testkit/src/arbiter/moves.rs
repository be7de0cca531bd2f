//! Cases: sale, release, out-of-order and retried moves of a hold.

use std::sync::Arc;

use boxoffice_domain::{BuyerId, HoldState as S, OrderId};
use boxoffice_engine::ports::{ArbiterError as E, SeatArbiter};

use super::fixtures::*;

pub async fn a_sold_hold_keeps_its_seats_for_good(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let h = fx.named(BuyerId::random(), &[5, 6]).await.expect("hold");
    fx.arb
        .pin(h.hold, OrderId::random(), DEADLINE, T0)
        .await
        .expect("pin");
    assert_eq!(fx.arb.mark_sold(h.hold).await.map(|v| v.state), Ok(S::Sold));
    assert_eq!(
        fx.arb
            .expire_due(fx.event, DEADLINE.plus_millis(3_600_000), 100)
            .await,
        Ok(vec![])
    );
    assert_eq!(fx.arb.release(h.hold).await, Err(E::WrongState(S::Sold)));
    assert_eq!(fx.free(&[5, 6]).await, vec![false, false]);
    let later = fx.request(
        BuyerId::random(),
        boxoffice_engine::ports::SeatChoice::Named(vec![5]),
    );
    assert_eq!(
        fx.arb.hold(&later, DEADLINE.plus_millis(3_600_000)).await,
        Err(E::SeatUnavailable(5))
    );
    assert_eq!(fx.arb.sold_seats(fx.event).await, Ok(vec![5, 6]));
    fx.done().await;
}

pub async fn an_uncertain_payment_keeps_the_pin_and_can_still_sell(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let h = fx.named(BuyerId::random(), &[7]).await.expect("hold");
    let pinned = DEADLINE.plus_millis(60_000);
    fx.arb
        .pin(h.hold, OrderId::random(), pinned, T0)
        .await
        .expect("pin");
    assert_eq!(
        fx.arb
            .mark_uncertain(h.hold)
            .await
            .map(|v| (v.state, v.expires_at)),
        Ok((S::PaymentPending, pinned))
    );
    assert_eq!(
        fx.arb
            .expire_due(fx.event, pinned.plus_millis(-1), 100)
            .await,
        Ok(vec![])
    );
    assert_eq!(fx.arb.mark_sold(h.hold).await.map(|v| v.state), Ok(S::Sold));
    fx.done().await;
}

pub async fn releasing_returns_the_seats_and_a_second_release_changes_nothing(
    arb: Arc<dyn SeatArbiter>,
) {
    let fx = Fixture::small(arb).await;
    let h = fx.named(BuyerId::random(), &[2, 3]).await.expect("hold");
    assert_eq!(
        fx.arb.release(h.hold).await.map(|v| v.state),
        Ok(S::Released)
    );
    assert_eq!(fx.free(&[2, 3]).await, vec![true, true]);
    let next = fx
        .named(BuyerId::random(), &[2])
        .await
        .expect("someone else takes seat 2");
    assert_eq!(
        fx.arb.release(h.hold).await.map(|v| v.state),
        Ok(S::Released)
    );
    assert_eq!(
        fx.free(&[2, 3]).await,
        vec![false, true],
        "the second release must not free seat 2 again"
    );
    assert_eq!(
        fx.arb.get(next.hold).await.map(|v| v.map(|v| v.state)),
        Ok(Some(S::Held))
    );
    assert_eq!(
        fx.arb
            .expire_due(fx.event, DEADLINE.plus_millis(-1), 100)
            .await,
        Ok(vec![])
    );
    let c = fx.arb.counts(fx.event).await.expect("counts");
    assert_eq!((c.held, c.active_holds), (1, 1));
    fx.done().await;
}

/// A buyer's own release (`release_held`) frees only their hold and only while it is
/// held: once a checkout pinned it, it is refused and the seats stay with the checkout.
pub async fn a_buyers_release_frees_only_their_own_held_hold(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let (buyer, other) = (BuyerId::random(), BuyerId::random());
    let pinned = fx.named(buyer, &[4]).await.expect("hold");
    fx.arb
        .pin(pinned.hold, OrderId::random(), DEADLINE, T0)
        .await
        .expect("pin");
    assert_eq!(
        fx.arb.release_held(pinned.hold, buyer).await,
        Err(E::WrongState(S::CheckingOut))
    );
    assert_eq!(
        fx.free(&[4]).await,
        vec![false],
        "the checkout keeps its seat"
    );
    let held = fx.named(buyer, &[5]).await.expect("hold");
    assert_eq!(
        fx.arb.release_held(held.hold, other).await,
        Err(E::UnknownHold),
        "another buyer's hold"
    );
    assert_eq!(fx.free(&[5]).await, vec![false]);
    let (view, now) = fx
        .arb
        .release_held(held.hold, buyer)
        .await
        .expect("released");
    assert_eq!((view.state, now), (S::Released, true));
    assert_eq!(fx.free(&[5]).await, vec![true]);
    let (view, now) = fx.arb.release_held(held.hold, buyer).await.expect("again");
    assert_eq!(
        (view.state, now),
        (S::Released, false),
        "a retry changes nothing"
    );
    fx.done().await;
}

/// The load of a lost event leaves an event loaded meanwhile (another rebuild finished
/// first) as it is, holds and all; once the event is gone, it loads.
pub async fn loading_a_lost_event_keeps_one_loaded_meanwhile(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let h = fx.named(BuyerId::random(), &[1]).await.expect("hold");
    assert_eq!(fx.arb.load_lost(&fx.layout, &[]).await, Ok(false));
    assert_eq!(
        fx.arb.get(h.hold).await.map(|v| v.map(|v| v.state)),
        Ok(Some(S::Held)),
        "the hold survives"
    );
    assert_eq!(fx.free(&[1]).await, vec![false]);
    fx.arb.unload(fx.event).await.expect("lost");
    assert_eq!(fx.arb.load_lost(&fx.layout, &[]).await, Ok(true));
    assert_eq!(fx.free(&[1]).await, vec![true], "loaded afresh");
    fx.done().await;
}

pub async fn moves_out_of_order_are_refused(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let h = fx.named(BuyerId::random(), &[0]).await.expect("hold");
    assert_eq!(
        fx.arb.mark_sold(h.hold).await,
        Err(E::WrongState(S::Held)),
        "no sale without checkout"
    );
    assert_eq!(
        fx.arb.mark_uncertain(h.hold).await,
        Err(E::WrongState(S::Held))
    );
    fx.arb.release(h.hold).await.expect("release");
    assert_eq!(
        fx.arb.pin(h.hold, OrderId::random(), DEADLINE, T0).await,
        Err(E::WrongState(S::Released))
    );
    fx.done().await;
}

pub async fn retried_moves_answer_with_the_hold_as_it_is(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let h = fx.named(BuyerId::random(), &[0]).await.expect("hold");
    let order = OrderId::random();
    let first = fx.arb.pin(h.hold, order, DEADLINE, T0).await.expect("pin");
    assert_eq!(
        fx.arb.pin(h.hold, order, DEADLINE.plus_millis(5), T0).await,
        Ok(first.clone())
    );
    assert_eq!(
        fx.arb.pin(h.hold, OrderId::random(), DEADLINE, T0).await,
        Err(E::WrongState(S::CheckingOut))
    );
    fx.arb.mark_uncertain(h.hold).await.expect("uncertain");
    assert_eq!(
        fx.arb.mark_uncertain(h.hold).await.map(|v| v.state),
        Ok(S::PaymentPending)
    );
    fx.arb.mark_sold(h.hold).await.expect("sold");
    assert_eq!(fx.arb.mark_sold(h.hold).await.map(|v| v.state), Ok(S::Sold));
    assert_eq!(
        fx.arb.counts(fx.event).await.map(|c| c.sold),
        Ok(1),
        "sold once"
    );
    let again = fx
        .arb
        .hold(
            &boxoffice_engine::ports::HoldRequest {
                hold: h.hold,
                ..fx.request(h.buyer, h_choice())
            },
            T0,
        )
        .await;
    assert_eq!(
        again.map(|v| v.hold),
        Ok(h.hold),
        "a retried hold request answers with its hold"
    );
    fx.done().await;
}

fn h_choice() -> boxoffice_engine::ports::SeatChoice {
    boxoffice_engine::ports::SeatChoice::Named(vec![0])
}
