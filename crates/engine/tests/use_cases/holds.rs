//! Holds: all or none, given back early by the buyer, or returned by the expiry worker
//! once the event's hold time has run out (and not a moment before).

use boxoffice_domain::HoldState;
use boxoffice_engine::{EngineConfig, EngineError};
use boxoffice_payment_fake::{FakeGatewayConfig, methods};

use super::{admitted, hold_named};
use crate::common::*;

/// `open_event`'s hold time.
const HOLD_TTL_S: i64 = 600;

#[boxoffice_testkit::test]
async fn a_hold_takes_every_named_seat_or_none() {
    let d = Durable::new(FakeGatewayConfig::default());
    let n = node(&d, EngineConfig::default());
    let event = open_event(&n.engine, 1, 4).await;
    let first = admitted(&n.engine, event).await;
    let second = admitted(&n.engine, event).await;

    let held = hold_named(&n.engine, &first, &["A-1-1", "A-1-2"]).await;
    assert_eq!(held.expect("the seats are free").state, HoldState::Held);
    let overlapping = hold_named(&n.engine, &second, &["A-1-2", "A-1-3"]).await;
    assert!(
        matches!(overlapping, Err(EngineError::SeatUnavailable)),
        "{overlapping:?}"
    );
    let seats = free(&n.engine, event, &["A-1-1", "A-1-2", "A-1-3"]).await;
    assert_eq!(
        seats,
        vec![false, false, true],
        "A-1-3 was taken by a refused hold"
    );
}

#[boxoffice_testkit::test]
async fn a_released_hold_gives_its_seats_back_and_only_its_buyer_may_release_it() {
    let d = Durable::new(FakeGatewayConfig::default());
    let n = node(&d, EngineConfig::default());
    let event = open_event(&n.engine, 1, 4).await;
    let owner = admitted(&n.engine, event).await;
    let stranger = admitted(&n.engine, event).await;
    let hold = hold_named(&n.engine, &owner, &["A-1-1", "A-1-2"]).await;
    let hold = hold.expect("the seats are free");

    let refused = n.engine.release_hold(&stranger.who, hold.hold).await;
    assert!(
        matches!(refused, Err(EngineError::NotFound(_))),
        "{refused:?}"
    );
    assert_eq!(hold_state(&n.engine, &hold).await, Some(HoldState::Held));

    let released = n.engine.release_hold(&owner.who, hold.hold).await;
    assert_eq!(released.expect("released").state, HoldState::Released);
    assert_eq!(
        free(&n.engine, event, &["A-1-1", "A-1-2"]).await,
        vec![true, true]
    );
    let again = n.engine.release_hold(&owner.who, hold.hold).await;
    assert_eq!(
        again.expect("a second release is harmless").state,
        HoldState::Released
    );
}

#[boxoffice_testkit::test]
async fn the_expiry_worker_returns_the_seats_of_a_hold_whose_time_ran_out() {
    let d = Durable::new(FakeGatewayConfig::default());
    let n = node(&d, EngineConfig::default());
    let event = open_event(&n.engine, 1, 4).await;
    let buyer = admitted(&n.engine, event).await;
    let hold = hold_named(&n.engine, &buyer, &["A-1-1"]).await;
    let hold = hold.expect("the seat is free");

    d.clock.advance_secs(HOLD_TTL_S - 1);
    let early = n.engine.expiry_step().await.expect("the worker runs");
    assert_eq!(early.done, 0, "a hold expired before its time");
    assert_eq!(hold_state(&n.engine, &hold).await, Some(HoldState::Held));

    d.clock.advance_secs(2);
    let due = n.engine.expiry_step().await.expect("the worker runs");
    assert_eq!(due.done, 1);
    assert_eq!(hold_state(&n.engine, &hold).await, Some(HoldState::Expired));
    assert_eq!(free(&n.engine, event, &["A-1-1"]).await, vec![true]);
    let late = n
        .engine
        .checkout(&buyer.who, hold.hold, methods::VISA)
        .await;
    assert!(matches!(late, Err(EngineError::HoldExpired)), "{late:?}");
}
