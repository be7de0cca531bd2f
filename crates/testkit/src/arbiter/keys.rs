//! Cases: the proof-of-possession key a hold is taken with is on the hold itself, so
//! it lives exactly as long as the hold: through every move, a retried request and a
//! retake, and never on another hold.

use std::sync::Arc;

use boxoffice_domain::possession::Thumbprint;
use boxoffice_domain::{BuyerId, HoldState as S, OrderId};
use boxoffice_engine::ports::{HoldRequest, HoldView, Retake, SeatArbiter, SeatChoice};

use super::fixtures::*;

fn thumbprint() -> Thumbprint {
    // A thumbprint's form: 43 base64url characters.
    let id = uuid::Uuid::new_v4().simple().to_string();
    Thumbprint(
        format!("{id}{}", &id[..11])
            .replace('a', "-")
            .replace('b', "_"),
    )
}

pub async fn a_hold_keeps_the_key_it_was_taken_with_through_every_move(arb: Arc<dyn SeatArbiter>) {
    let fx = Fixture::small(arb).await;
    let key = thumbprint();
    let (buyer, order) = (BuyerId::random(), OrderId::random());
    let req = HoldRequest {
        key: Some(key.clone()),
        ..fx.request(buyer, SeatChoice::Named(vec![0, 1]))
    };
    let h = fx.arb.hold(&req, T0).await.expect("hold");
    assert_eq!(h.key.as_ref(), Some(&key));
    let again = fx.arb.hold(&req, T0).await.expect("a retried hold");
    assert_eq!(again, h, "a retry answers with the hold and its key");
    let read = |v: Option<HoldView>| v.and_then(|v| v.key);
    assert_eq!(read(fx.arb.get(h.hold).await.unwrap()), Some(key.clone()));
    let pinned = fx.arb.pin(h.hold, order, DEADLINE, T0).await.expect("pin");
    assert_eq!(pinned.key.as_ref(), Some(&key));
    let uncertain = fx.arb.mark_uncertain(h.hold).await.expect("uncertain");
    assert_eq!(uncertain.key.as_ref(), Some(&key));
    let sold = fx.arb.mark_sold(h.hold).await.expect("sold");
    assert_eq!((sold.state, sold.key.as_ref()), (S::Sold, Some(&key)));
    assert_eq!(read(fx.arb.get(h.hold).await.unwrap()), Some(key));
    // A hold taken without a key has none, and no other hold's.
    let plain = fx.named(BuyerId::random(), &[2]).await.expect("hold");
    assert_eq!(plain.key, None);
    assert_eq!(read(fx.arb.get(plain.hold).await.unwrap()), None);
    fx.done().await;
}

pub async fn an_ended_hold_keeps_its_key_while_kept_and_a_retake_keeps_it(
    arb: Arc<dyn SeatArbiter>,
) {
    let fx = Fixture::small(arb).await;
    let key = thumbprint();
    let buyer = BuyerId::random();
    let req = HoldRequest {
        key: Some(key.clone()),
        ..fx.request(buyer, SeatChoice::Named(vec![3]))
    };
    let h = fx.arb.hold(&req, T0).await.expect("hold");
    let expired = fx
        .arb
        .expire_due(fx.event, DEADLINE, 10)
        .await
        .expect("sweep");
    assert_eq!(expired.len(), 1);
    let ended = fx
        .arb
        .get(h.hold)
        .await
        .unwrap()
        .expect("kept after it ended");
    assert_eq!((ended.state, ended.key.as_ref()), (S::Expired, Some(&key)));
    let order = OrderId::random();
    let retake = Retake {
        hold: h.hold,
        buyer,
        order,
        seats: h.seats.clone(),
        pinned_until: DEADLINE.plus_millis(60_000),
        replacing: None,
    };
    let back = fx.arb.retake(&retake, DEADLINE).await.expect("retake");
    assert_eq!(
        (back.state, back.key.as_ref()),
        (S::CheckingOut, Some(&key))
    );
    let released = fx.named(BuyerId::random(), &[4]).await.expect("hold");
    let released = fx.arb.release(released.hold).await.expect("release");
    assert_eq!((released.state, released.key), (S::Released, None));
    fx.done().await;
}
