//! The `ClaimedHolds` conformance suite: a hold under an Idempotency-Key claim answers
//! as `IdempotencyStore::begin` followed (when the claim is granted) by
//! `SeatArbiter::hold`, and a release as `begin` followed by
//! `ClaimThenHold::release_checked`, whether the adapter does both in one step or in
//! two.
//!
//! ```ignore
//! boxoffice_testkit::claimed_holds_conformance!(async { ClaimedPorts { holds, arbiter } });
//! ```
//!
//! `holds` must keep its claims in `holds.replays()` and hold on `arbiter`. Every case
//! uses its own event and scope, so one shared backend runs the suite in parallel.
//!
//! A store may keep a hold's outcome as the key's answer in the step itself
//! (`Claimed::Kept`): the cases then expect a retry to be refused with that outcome
//! (`Begin::Kept`) where a store that leaves the keeping to the caller answers what the
//! caller kept (`Begin::Replay`), or `InFlight` until it is kept.

use std::sync::Arc;

use boxoffice_domain::{BuyerId, HoldId, HoldState, OrderId, SeatIndex};
use boxoffice_engine::ports::{
    ArbiterError, Begin, Claimant, Claimed, ClaimedHolds, HoldRequest, HoldView, KeptOutcome,
    Lease, Released, ReplayClaim, ReplayKey, SeatArbiter, SeatChoice, StoredResponse,
};
use futures::future::join_all;

use crate::arbiter::{DEADLINE, Fixture, T0};
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
            a_replayed_release_answers_the_stored_answer_and_releases_nothing_twice,
            a_release_checks_the_buyer_and_the_state_and_moves_nothing_it_refuses,
            a_release_racing_another_release_of_the_same_hold_exactly_one_releases,
            many_releases_racing_with_duplicates_release_each_hold_once,
        );
    };
}

const FP: [u8; 32] = [3; 32];

/// One Idempotency-Key of one buyer (also the joins suite's).
pub(crate) struct Key {
    pub(crate) replay: ReplayKey,
    pub(crate) fingerprint: [u8; 32],
    pub(crate) claimant: Claimant,
}

impl Key {
    pub(crate) fn new(buyer: BuyerId, claimant: Claimant) -> Key {
        Key {
            replay: ReplayKey::new(
                format!("buyer:{buyer}"),
                format!("k-{}", uuid::Uuid::new_v4().simple()),
            ),
            fingerprint: FP,
            claimant,
        }
    }

    /// The lease `claim` takes.
    pub(crate) fn lease(&self) -> Lease {
        self.claimant.lease_from(T0)
    }

    pub(crate) fn claim(&self) -> ReplayClaim<'_> {
        ReplayClaim {
            key: &self.replay,
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

/// The hold's outcome of a step that ran, kept by the store or not.
fn ran(outcome: &Outcome) -> Option<&Result<HoldView, ArbiterError>> {
    match outcome {
        Claimed::Ran(o) | Claimed::Kept(o) => Some(o),
        Claimed::Refused(_) => None,
    }
}

/// What a retry of a step that ran is refused with once its answer is kept: the answer
/// the caller keeps now (`kept()`, when the store left the keeping to it) or the
/// outcome the store kept in the step.
async fn answer_kept(p: &ClaimedPorts, key: &Key, outcome: &Outcome) -> Begin {
    match outcome {
        Claimed::Ran(_) => {
            finish(p, key).await;
            Begin::Replay(kept())
        }
        Claimed::Kept(o) => Begin::Kept(Box::new(KeptOutcome::Hold(o.clone()))),
        Claimed::Refused(b) => panic!("the step did not run: {b:?}"),
    }
}

/// A small event whose buyer held seat 0 under a key of theirs, and the hold's outcome
/// (the claim not finished by the caller).
async fn seat_zero_held(p: &ClaimedPorts) -> (Fixture, BuyerId, Key, Outcome) {
    let fx = Fixture::small(p.arbiter.clone()).await;
    let buyer = BuyerId::random();
    let key = Key::new(buyer, claimant());
    let outcome = hold(p, &key, &named(&fx, buyer, &[0])).await;
    assert!(matches!(ran(&outcome), Some(Ok(_))), "{outcome:?}");
    (fx, buyer, key, outcome)
}

fn kept() -> StoredResponse {
    StoredResponse {
        status: 201,
        body: br#"{"hold_id":"h1"}"#.to_vec(),
    }
}

async fn finish(p: &ClaimedPorts, key: &Key) {
    let replays = p.holds.replays();
    replays
        .finish(&key.replay, key.lease(), &kept())
        .await
        .unwrap();
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
    let outcome = hold(&p, &key, &first).await;
    match ran(&outcome) {
        Some(Ok(h)) => assert_eq!((h.hold, &h.seats), (first.hold, &vec![0, 1])),
        _ => panic!("the first request holds: {outcome:?}"),
    }
    let answer = answer_kept(&p, &key, &outcome).await;
    // The retry (a new hold id: the engine draws one per attempt) is answered from the
    // store, on this node and on another, and takes no seat.
    let retry = named(&fx, buyer, &[2]);
    assert_eq!(
        hold(&p, &key, &retry).await,
        Claimed::Refused(answer.clone())
    );
    let elsewhere = Key {
        claimant: claimant(),
        ..key
    };
    assert_eq!(hold(&p, &elsewhere, &retry).await, Claimed::Refused(answer));
    never_held(&fx, &retry).await;
    assert_eq!(fx.free(&[0, 1, 2]).await, [false, false, true]);
    fx.done().await;
}

pub async fn a_running_claim_is_in_flight_and_its_duplicate_holds_nothing(p: ClaimedPorts) {
    let (fx, buyer, key, outcome) = seat_zero_held(&p).await;
    // Running until the caller keeps its answer, unless the store kept it in the step.
    let running = match outcome {
        Claimed::Kept(o) => Begin::Kept(Box::new(KeptOutcome::Hold(o))),
        _ => Begin::InFlight,
    };
    let duplicate = named(&fx, buyer, &[1]);
    assert_eq!(
        hold(&p, &key, &duplicate).await,
        Claimed::Refused(running.clone())
    );
    never_held(&fx, &duplicate).await;
    // The claim lives in the replay store: `begin` there sees it too.
    let replays = p.holds.replays();
    let begun = (replays.begin(&key.replay, &FP, T0, &key.claimant)).await;
    assert_eq!(begun.unwrap(), running);
    fx.done().await;
}

pub async fn a_key_reused_for_another_request_is_a_mismatch_and_holds_nothing(p: ClaimedPorts) {
    let (fx, buyer, key, _) = seat_zero_held(&p).await;
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
    let outcome = hold(&p, &key, &named(&fx, second, &[0])).await;
    assert_eq!(
        ran(&outcome),
        Some(&Err(ArbiterError::SeatUnavailable(0))),
        "{outcome:?}"
    );
    // The refusal is the request's answer: the key stays claimed until it is kept.
    let retry = named(&fx, second, &[1]);
    if let Claimed::Ran(_) = outcome {
        assert_eq!(
            hold(&p, &key, &retry).await,
            Claimed::Refused(Begin::InFlight)
        );
    }
    let answer = answer_kept(&p, &key, &outcome).await;
    assert_eq!(hold(&p, &key, &retry).await, Claimed::Refused(answer));
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
    let outcome = hold(&p, &key, &first).await;
    assert!(matches!(ran(&outcome), Some(Ok(_))), "{outcome:?}");
    let replays = p.holds.replays();
    replays.abandon(&key.replay, key.lease()).await.unwrap();
    let again = named(&fx, buyer, &[1]);
    let retried = hold(&p, &key, &again).await;
    match outcome {
        // An answer kept is never abandoned: the retry is answered with it.
        Claimed::Kept(o) => {
            assert_eq!(
                retried,
                Claimed::Refused(Begin::Kept(Box::new(KeptOutcome::Hold(o))))
            );
            never_held(&fx, &again).await;
        }
        _ => match retried {
            Claimed::Ran(Ok(h)) => assert_eq!(h.seats, vec![1]),
            other => panic!("an abandoned key runs again: {other:?}"),
        },
    }
    fx.done().await;
}

/// Of a request and its duplicate sent at once under one key, the outcome of the one
/// that ran: exactly one runs, the other is in flight, or (when the store kept the
/// outcome in the step) answered with the kept outcome, which `kept` tells.
fn ran_once<T: std::fmt::Debug + PartialEq>(
    pair: &[Claimed<T>],
    kept: impl Fn(&Begin) -> Option<T>,
) -> &T {
    let (ran, other): (Vec<&Claimed<T>>, Vec<&Claimed<T>>) =
        pair.iter().partition(|o| !matches!(o, Claimed::Refused(_)));
    assert_eq!(ran.len(), 1, "each key runs once: {pair:?}");
    let outcome = match ran[0] {
        Claimed::Ran(o) | Claimed::Kept(o) => o,
        Claimed::Refused(_) => unreachable!(),
    };
    let duplicate = match other[0] {
        Claimed::Refused(begin) => begin,
        _ => unreachable!(),
    };
    let answered = match (ran[0], duplicate) {
        (_, Begin::InFlight) => true,
        (Claimed::Kept(_), begin) => kept(begin).as_ref() == Some(outcome),
        _ => false,
    };
    assert!(answered, "the duplicate is in flight or answered: {pair:?}");
    outcome
}

/// The outcome a store kept, in a refusal.
fn kept_of(begin: &Begin) -> Option<&KeptOutcome> {
    match begin {
        Begin::Kept(k) => Some(k),
        _ => None,
    }
}

/// A hold's kept outcome in a refusal.
fn kept_hold(begin: &Begin) -> Option<Result<HoldView, ArbiterError>> {
    match kept_of(begin)? {
        KeptOutcome::Hold(o) => Some(o.clone()),
        KeptOutcome::Release(_) | KeptOutcome::Joined => None,
    }
}

/// A release's kept outcome in a refusal.
fn kept_release(begin: &Begin) -> Option<Result<Released, ArbiterError>> {
    match kept_of(begin)? {
        KeptOutcome::Release(o) => Some(o.clone()),
        KeptOutcome::Hold(_) | KeptOutcome::Joined => None,
    }
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
        match ran_once(pair, kept_hold) {
            Ok(h) => {
                assert_eq!(h.seats.len(), 1);
                won += 1;
            }
            Err(ArbiterError::SoldOut) => sold_out += 1,
            other => panic!("a run wins or finds the units gone: {other:?}"),
        }
    }
    assert_eq!((won, sold_out), (UNITS, BUYERS - UNITS));
    let c = fx.arb.counts(fx.event).await.unwrap();
    assert_eq!(c.active_holds as usize, UNITS);
    fx.done().await;
}

type ReleaseOutcome = Claimed<Result<Released, ArbiterError>>;

async fn release(p: &ClaimedPorts, key: &Key, hold: HoldId, buyer: BuyerId) -> ReleaseOutcome {
    p.holds
        .release(&key.claim(), hold, buyer)
        .await
        .expect("the store answers")
}

/// The release's outcome of a step that ran, kept by the store or not.
fn released(outcome: &ReleaseOutcome) -> Option<&Result<Released, ArbiterError>> {
    match outcome {
        Claimed::Ran(o) | Claimed::Kept(o) => Some(o),
        Claimed::Refused(_) => None,
    }
}

/// The set-up of a release case: a fresh event and a buyer holding `seats` of it.
async fn holding(p: &ClaimedPorts, seats: &[SeatIndex]) -> (Fixture, BuyerId, HoldView) {
    let fx = Fixture::small(p.arbiter.clone()).await;
    let buyer = BuyerId::random();
    let held = fx.named(buyer, seats).await.expect("the seats are held");
    (fx, buyer, held)
}

/// The state of `hold` in the arbiter.
async fn state_of(fx: &Fixture, hold: HoldId) -> HoldState {
    let view = fx.arb.get(hold).await.expect("the store answers");
    view.expect("the hold is there").state
}

pub async fn a_replayed_release_answers_the_stored_answer_and_releases_nothing_twice(
    p: ClaimedPorts,
) {
    let (fx, buyer, held) = holding(&p, &[0, 1]).await;
    let key = Key::new(buyer, claimant());
    let outcome = release(&p, &key, held.hold, buyer).await;
    match released(&outcome) {
        Some(Ok(r)) => {
            assert!(r.now, "the first release releases: {r:?}");
            assert_eq!(
                (r.hold.hold, r.hold.state, &r.hold.seats),
                (held.hold, HoldState::Released, &vec![0, 1])
            );
        }
        _ => panic!("the first release runs: {outcome:?}"),
    }
    assert_eq!(fx.free(&[0, 1]).await, [true, true]);
    // Until its answer is kept, the key is in flight (unless the store kept it in the
    // step): the duplicate releases nothing.
    let answer = match outcome {
        Claimed::Kept(o) => Begin::Kept(Box::new(KeptOutcome::Release(o))),
        _ => {
            assert_eq!(
                release(&p, &key, held.hold, buyer).await,
                Claimed::Refused(Begin::InFlight)
            );
            finish(&p, &key).await;
            Begin::Replay(kept())
        }
    };
    // Another buyer takes the seats; the replayed release (on this node and another)
    // answers the kept answer and gives back nothing of theirs.
    let other = BuyerId::random();
    fx.named(other, &[0, 1])
        .await
        .expect("the seats are held again");
    let elsewhere = Key {
        replay: key.replay.clone(),
        fingerprint: FP,
        claimant: claimant(),
    };
    for k in [&key, &elsewhere] {
        assert_eq!(
            release(&p, k, held.hold, buyer).await,
            Claimed::Refused(answer.clone())
        );
    }
    // The same release under a new key runs, finds the hold ended, and moves nothing.
    let again = release(&p, &Key::new(buyer, claimant()), held.hold, buyer).await;
    match released(&again) {
        Some(Ok(r)) => assert_eq!((r.now, r.hold.state), (false, HoldState::Released)),
        _ => panic!("a release of a released hold answers it: {again:?}"),
    }
    assert_eq!(fx.free(&[0, 1]).await, [false, false]);
    let c = fx.arb.counts(fx.event).await.unwrap();
    assert_eq!((c.held, c.active_holds), (2, 1));
    fx.done().await;
}

pub async fn a_release_checks_the_buyer_and_the_state_and_moves_nothing_it_refuses(
    p: ClaimedPorts,
) {
    let (fx, owner, held) = holding(&p, &[0]).await;
    let stranger = BuyerId::random();
    // Another buyer's hold is not found, and a hold that does not exist neither.
    let key = Key::new(stranger, claimant());
    let unknown = Err(ArbiterError::UnknownHold);
    let outcome = release(&p, &key, held.hold, stranger).await;
    assert_eq!(released(&outcome), Some(&unknown), "{outcome:?}");
    let missing = HoldId::random(fx.event);
    let key = Key::new(owner, claimant());
    let outcome = release(&p, &key, missing, owner).await;
    assert_eq!(released(&outcome), Some(&unknown), "{outcome:?}");
    assert_eq!(state_of(&fx, held.hold).await, HoldState::Held);
    // A hold at checkout is not the buyer's to release.
    let pinned = fx.named(owner, &[1]).await.expect("held");
    let until = DEADLINE.plus_millis(60_000);
    (fx.arb.pin(pinned.hold, OrderId::random(), until, T0))
        .await
        .expect("pinned");
    let key = Key::new(owner, claimant());
    let outcome = release(&p, &key, pinned.hold, owner).await;
    assert_eq!(
        released(&outcome),
        Some(&Err(ArbiterError::WrongState(HoldState::CheckingOut))),
        "{outcome:?}"
    );
    assert_eq!(state_of(&fx, pinned.hold).await, HoldState::CheckingOut);
    // An expired hold is answered as it is.
    let gone = fx.named(owner, &[2]).await.expect("held");
    let expired = fx.arb.expire_due(fx.event, DEADLINE, 100).await.unwrap();
    assert!(expired.iter().any(|e| e.hold == gone.hold), "{expired:?}");
    let key = Key::new(owner, claimant());
    let outcome = release(&p, &key, gone.hold, owner).await;
    match released(&outcome) {
        Some(Ok(r)) => assert_eq!((r.now, r.hold.state), (false, HoldState::Expired)),
        _ => panic!("an expired hold is answered as it is: {outcome:?}"),
    }
    assert_eq!(fx.free(&[0, 1, 2]).await, [true, false, true]);
    fx.done().await;
}

pub async fn a_release_racing_another_release_of_the_same_hold_exactly_one_releases(
    p: ClaimedPorts,
) {
    let (fx, buyer, held) = holding(&p, &[0, 1]).await;
    // Two tabs, each with its own key, release the same hold at once.
    let keys = [Key::new(buyer, claimant()), Key::new(buyer, claimant())];
    let outcomes = join_all(keys.iter().map(|k| release(&p, k, held.hold, buyer))).await;
    let mut now = 0;
    for o in &outcomes {
        match released(o) {
            Some(Ok(r)) => {
                assert_eq!(r.hold.state, HoldState::Released);
                now += usize::from(r.now);
            }
            _ => panic!("each key runs: {o:?}"),
        }
    }
    assert_eq!(now, 1, "exactly one releases: {outcomes:?}");
    let c = fx.arb.counts(fx.event).await.unwrap();
    assert_eq!((c.held, c.active_holds), (0, 0));
    fx.done().await;
}

/// Ten buyers hold a GA unit each; every hold is released by 3 keys at once, each key
/// sent twice at once (60 releases): per key exactly one runs, per hold exactly one run
/// releases, and every unit is free again once.
pub async fn many_releases_racing_with_duplicates_release_each_hold_once(p: ClaimedPorts) {
    const HOLDS: usize = 10;
    const KEYS_PER_HOLD: usize = 3;
    let fx = Fixture::small(p.arbiter.clone()).await;
    let me = claimant();
    let mut holds = Vec::new();
    for _ in 0..HOLDS {
        let buyer = BuyerId::random();
        let h = (fx.best(buyer, crate::arbiter::FLOOR, 1, false).await).expect("a unit");
        let keys: Vec<Key> = (0..KEYS_PER_HOLD).map(|_| Key::new(buyer, me)).collect();
        holds.push((h.hold, buyer, keys));
    }
    let p = &p;
    let attempts = holds.iter().flat_map(|(hold, buyer, keys)| {
        keys.iter()
            .flat_map(move |key| [0, 1].map(move |_| release(p, key, *hold, *buyer)))
    });
    let outcomes = join_all(attempts).await;
    for per_hold in outcomes.chunks(2 * KEYS_PER_HOLD) {
        let mut now = 0;
        for pair in per_hold.chunks(2) {
            match ran_once(pair, kept_release) {
                Ok(r) => now += usize::from(r.now),
                other => panic!("a release answers the hold: {other:?}"),
            }
        }
        assert_eq!(now, 1, "each hold is released once: {per_hold:?}");
    }
    let c = fx.arb.counts(fx.event).await.unwrap();
    assert_eq!((c.held, c.active_holds), (0, 0));
    fx.done().await;
}
