//! The `ClaimedHolds` conformance suite: a hold under an Idempotency-Key claim answers
//! as `IdempotencyStore::begin` followed (when the claim is granted) by
//! `SeatArbiter::hold`, whether the adapter does both in one step or in two.
//!
//! ```ignore
//! boxoffice_testkit::claimed_holds_conformance!(async { ClaimedPorts { holds, arbiter } });
//! ```
//!
//! `holds` must keep its claims in `holds.replays()` and hold on `arbiter`. Every case
//! uses its own event and scope, so one shared backend runs the suite in parallel.

use std::sync::Arc;

use boxoffice_domain::{BuyerId, SeatIndex};
use boxoffice_engine::ports::{
    ArbiterError, Begin, Claimant, Claimed, ClaimedHolds, HoldRequest, HoldView, ReplayClaim,
    SeatArbiter, SeatChoice, StoredResponse,
};
use futures::future::join_all;

use crate::arbiter::{Fixture, T0};
use crate::idempotency::claimant;

/// What a case runs on: the holds under claims and the arbiter they hold on.
#[derive(Clone)]
pub struct ClaimedPorts {
    pub holds: Arc<dyn ClaimedHolds>,
    pub arbiter: Arc<dyn SeatArbiter>,
}

/// Expands into `mod claimed_holds { … }` with one timed tokio test per case.
#[macro_export]
macro_rules! claimed_holds_conformance {
    ($make:expr) => {
        mod claimed_holds {
            #[allow(unused_imports)]
            use super::*;
            $crate::__claimed_holds_cases!([$crate::__port_suite_cases] claimed, $make;);
        }
    };
}

/// The suite's case names, one list for every runner.
#[doc(hidden)]
#[macro_export]
macro_rules! __claimed_holds_cases {
    ([$($cb:tt)*] $($args:tt)*) => {
        $($cb)*!($($args)*
            a_granted_claim_holds_and_a_finished_one_replays_without_holding_again,
            a_running_claim_is_in_flight_and_its_duplicate_holds_nothing,
            a_key_reused_for_another_request_is_a_mismatch_and_holds_nothing,
            a_refused_hold_keeps_its_claim_until_it_is_finished,
            a_claim_on_an_event_the_store_lost_is_taken_and_the_hold_is_unknown_event,
            an_abandoned_claim_holds_again,
            many_buyers_racing_with_duplicates_exactly_k_win_and_each_key_runs_once,
        );
    };
}

const FP: [u8; 32] = [3; 32];

/// One Idempotency-Key of one buyer.
struct Key {
    scope: String,
    key: String,
    fingerprint: [u8; 32],
    claimant: Claimant,
}

impl Key {
    fn new(buyer: BuyerId, claimant: Claimant) -> Key {
        Key {
            scope: format!("buyer:{buyer}"),
            key: format!("k-{}", uuid::Uuid::new_v4().simple()),
            fingerprint: FP,
            claimant,
        }
    }

    fn claim(&self) -> ReplayClaim<'_> {
        ReplayClaim {
            scope: &self.scope,
            key: &self.key,
            fingerprint: &self.fingerprint,
            now: T0,
            claimant: &self.claimant,
        }
    }
}

type Outcome = Claimed<Result<HoldView, ArbiterError>>;

async fn hold(p: &ClaimedPorts, key: &Key, req: &HoldRequest) -> Outcome {
    p.holds
        .hold(&key.claim(), req, T0)
        .await
        .expect("the store answers")
}

fn named(fx: &Fixture, buyer: BuyerId, seats: &[SeatIndex]) -> HoldRequest {
    fx.request(buyer, SeatChoice::Named(seats.to_vec()))
}

fn kept() -> StoredResponse {
    StoredResponse {
        status: 201,
        body: br#"{"hold_id":"h1"}"#.to_vec(),
    }
}

async fn finish(p: &ClaimedPorts, key: &Key) {
    let replays = p.holds.replays();
    replays.finish(&key.scope, &key.key, &kept()).await.unwrap();
}

/// The hold `req` asked for does not exist: the step did not run.
async fn never_held(fx: &Fixture, req: &HoldRequest) {
    assert_eq!(
        fx.arb.get(req.hold).await.unwrap(),
        None,
        "{req:?} was held"
    );
}

pub async fn a_granted_claim_holds_and_a_finished_one_replays_without_holding_again(
    p: ClaimedPorts,
) {
    let fx = Fixture::small(p.arbiter.clone()).await;
    let buyer = BuyerId::random();
    let key = Key::new(buyer, claimant());
    let first = named(&fx, buyer, &[0, 1]);
    match hold(&p, &key, &first).await {
        Claimed::Ran(Ok(h)) => assert_eq!((h.hold, h.seats), (first.hold, vec![0, 1])),
        other => panic!("the first request holds: {other:?}"),
    }
    finish(&p, &key).await;
    // The retry (a new hold id: the engine draws one per attempt) is answered from the
    // store, on this node and on another, and takes no seat.
    let retry = named(&fx, buyer, &[2]);
    assert_eq!(
        hold(&p, &key, &retry).await,
        Claimed::Refused(Begin::Replay(kept()))
    );
    let elsewhere = Key {
        claimant: claimant(),
        ..key
    };
    assert_eq!(
        hold(&p, &elsewhere, &retry).await,
        Claimed::Refused(Begin::Replay(kept()))
    );
    never_held(&fx, &retry).await;
    assert_eq!(fx.free(&[0, 1, 2]).await, [false, false, true]);
    fx.done().await;
}

pub async fn a_running_claim_is_in_flight_and_its_duplicate_holds_nothing(p: ClaimedPorts) {
    let fx = Fixture::small(p.arbiter.clone()).await;
    let buyer = BuyerId::random();
    let key = Key::new(buyer, claimant());
    assert!(matches!(
        hold(&p, &key, &named(&fx, buyer, &[0])).await,
        Claimed::Ran(Ok(_))
    ));
    let duplicate = named(&fx, buyer, &[1]);
    assert_eq!(
        hold(&p, &key, &duplicate).await,
        Claimed::Refused(Begin::InFlight)
    );
    never_held(&fx, &duplicate).await;
    // The claim lives in the replay store: `begin` there sees it too.
    let replays = p.holds.replays();
    let begun = (replays.begin(&key.scope, &key.key, &FP, T0, &key.claimant)).await;
    assert_eq!(begun.unwrap(), Begin::InFlight);
    fx.done().await;
}

pub async fn a_key_reused_for_another_request_is_a_mismatch_and_holds_nothing(p: ClaimedPorts) {
    let fx = Fixture::small(p.arbiter.clone()).await;
    let buyer = BuyerId::random();
    let key = Key::new(buyer, claimant());
    assert!(matches!(
        hold(&p, &key, &named(&fx, buyer, &[0])).await,
        Claimed::Ran(Ok(_))
    ));
    let other = Key {
        fingerprint: [4; 32],
        ..key
    };
    let req = named(&fx, buyer, &[1]);
    assert_eq!(
        hold(&p, &other, &req).await,
        Claimed::Refused(Begin::Mismatch)
    );
    finish(&p, &other).await;
    assert_eq!(
        hold(&p, &other, &req).await,
        Claimed::Refused(Begin::Mismatch)
    );
    never_held(&fx, &req).await;
    fx.done().await;
}

pub async fn a_refused_hold_keeps_its_claim_until_it_is_finished(p: ClaimedPorts) {
    let fx = Fixture::small(p.arbiter.clone()).await;
    let (first, second) = (BuyerId::random(), BuyerId::random());
    fx.named(first, &[0]).await.expect("the seat is held");
    let key = Key::new(second, claimant());
    assert_eq!(
        hold(&p, &key, &named(&fx, second, &[0])).await,
        Claimed::Ran(Err(ArbiterError::SeatUnavailable(0)))
    );
    // The refusal is the request's answer: the key stays claimed until it is kept.
    let retry = named(&fx, second, &[1]);
    assert_eq!(
        hold(&p, &key, &retry).await,
        Claimed::Refused(Begin::InFlight)
    );
    finish(&p, &key).await;
    assert_eq!(
        hold(&p, &key, &retry).await,
        Claimed::Refused(Begin::Replay(kept()))
    );
    never_held(&fx, &retry).await;
    fx.done().await;
}

pub async fn a_claim_on_an_event_the_store_lost_is_taken_and_the_hold_is_unknown_event(
    p: ClaimedPorts,
) {
    let fx = Fixture::small(p.arbiter.clone()).await;
    p.arbiter.unload(fx.event).await.unwrap();
    let buyer = BuyerId::random();
    let key = Key::new(buyer, claimant());
    let req = named(&fx, buyer, &[0]);
    assert_eq!(
        hold(&p, &key, &req).await,
        Claimed::Ran(Err(ArbiterError::UnknownEvent))
    );
    // The claim is the caller's: after a rebuild it holds with the plain `hold`.
    assert_eq!(
        hold(&p, &key, &req).await,
        Claimed::Refused(Begin::InFlight)
    );
    p.arbiter.load(&fx.layout, &[]).await.unwrap();
    assert_eq!(p.arbiter.hold(&req, T0).await.unwrap().seats, vec![0]);
    fx.done().await;
}

pub async fn an_abandoned_claim_holds_again(p: ClaimedPorts) {
    let fx = Fixture::small(p.arbiter.clone()).await;
    let buyer = BuyerId::random();
    let key = Key::new(buyer, claimant());
    let first = named(&fx, buyer, &[0]);
    assert!(matches!(hold(&p, &key, &first).await, Claimed::Ran(Ok(_))));
    let replays = p.holds.replays();
    replays.abandon(&key.scope, &key.key).await.unwrap();
    let again = named(&fx, buyer, &[1]);
    match hold(&p, &key, &again).await {
        Claimed::Ran(Ok(h)) => assert_eq!(h.seats, vec![1]),
        other => panic!("an abandoned key runs again: {other:?}"),
    }
    fx.done().await;
}

/// Buyers with a key each race for the 10 GA units of `small_spec`, each sending its
/// request twice at once: per key exactly one runs (the other is in flight), and
/// exactly 10 of the runs win a unit.
pub async fn many_buyers_racing_with_duplicates_exactly_k_win_and_each_key_runs_once(
    p: ClaimedPorts,
) {
    const BUYERS: usize = 30;
    const UNITS: usize = 10;
    let fx = Fixture::small(p.arbiter.clone()).await;
    let me = claimant();
    let keys: Vec<(BuyerId, Key)> = (0..BUYERS)
        .map(|_| {
            let b = BuyerId::random();
            (b, Key::new(b, me))
        })
        .collect();
    let ga = SeatChoice::BestAvailable {
        section: crate::arbiter::FLOOR,
        quantity: 1,
        adjacent: false,
    };
    let attempts = keys.iter().flat_map(|(buyer, key)| {
        let reqs = [
            fx.request(*buyer, ga.clone()),
            fx.request(*buyer, ga.clone()),
        ];
        reqs.map(|req| {
            let p = p.clone();
            async move { hold(&p, key, &req).await }
        })
    });
    let outcomes = join_all(attempts).await;
    let (mut won, mut sold_out) = (0, 0);
    for pair in outcomes.chunks(2) {
        let ran: Vec<&Outcome> = pair
            .iter()
            .filter(|o| matches!(o, Claimed::Ran(_)))
            .collect();
        assert_eq!(ran.len(), 1, "each key runs once: {pair:?}");
        assert!(
            pair.contains(&Claimed::Refused(Begin::InFlight)),
            "the duplicate is in flight: {pair:?}"
        );
        match ran[0] {
            Claimed::Ran(Ok(h)) => {
                assert_eq!(h.seats.len(), 1);
                won += 1;
            }
            Claimed::Ran(Err(ArbiterError::SoldOut)) => sold_out += 1,
            other => panic!("a run wins or finds the units gone: {other:?}"),
        }
    }
    assert_eq!((won, sold_out), (UNITS, BUYERS - UNITS));
    let c = fx.arb.counts(fx.event).await.unwrap();
    assert_eq!(c.active_holds as usize, UNITS);
    fx.done().await;
}
