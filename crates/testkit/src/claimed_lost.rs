//! Holds under claims in two steps (`ClaimThenHold`: the claim, then the hold) whose
//! hold's answer is lost on its way back: the store took the hold, or not, and the
//! caller was told only that the store failed (a reply that timed out, a connection
//! reset). A retry of the same request must not take a second hold.
//!
//! ```ignore
//! boxoffice_testkit::claimed_lost_conformance!(async { TwoSteps { replays, arbiter } });
//! ```
//!
//! `arbiter` is the real store; the cases lose its answers themselves (`Losing`). Every
//! case uses its own event and key, so one shared backend runs the suite in parallel.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use boxoffice_domain::{BuyerId, Millis};
use boxoffice_engine::ports::{
    ArbiterError, Begin, ClaimThenHold, Claimed, ClaimedHolds, HoldRequest, HoldView,
    IdempotencyStore, SeatArbiter, SeatChoice, StoreError, StoredResponse,
};

use crate::arbiter::{Fixture, T0};
use crate::claimed::Key;
use crate::hooked::{Hooked, Hooks};
use crate::idempotency::claimant;

/// What a case runs on: the replay store the claims live in and the arbiter that holds.
#[derive(Clone)]
pub struct TwoSteps {
    pub replays: Arc<dyn IdempotencyStore>,
    pub arbiter: Arc<dyn SeatArbiter>,
}

/// Expands into `mod claimed_lost { … }` with one timed tokio test per case.
#[macro_export]
macro_rules! claimed_lost_conformance {
    ($make:expr) => {
        mod claimed_lost {
            #[allow(unused_imports)]
            use super::*;
            $crate::__port_suite_cases!(claimed_lost, $make;
                a_hold_whose_answer_was_lost_is_read_back_and_its_retry_holds_nothing,
                a_hold_lost_before_the_store_took_it_frees_the_key_and_its_retry_holds_once,
            );
        }
    };
}

/// When the next hold's answer is lost.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lose {
    /// The store took the hold; its answer never came back.
    AfterHolding,
    /// The request never reached the store.
    BeforeHolding,
}

/// The store, but the next hold's answer is lost as `lose` says: a `StoreError`
/// whatever happened. Every other call passes through.
struct Losing {
    lose: Lose,
    armed: AtomicBool,
}

fn lost() -> ArbiterError {
    ArbiterError::Store(StoreError("the reply timed out".into()))
}

#[async_trait]
impl Hooks for Losing {
    async fn hold(
        &self,
        store: &dyn SeatArbiter,
        req: &HoldRequest,
        now: Millis,
    ) -> Result<HoldView, ArbiterError> {
        if !self.armed.swap(false, Ordering::SeqCst) {
            return store.hold(req, now).await;
        }
        match self.lose {
            Lose::AfterHolding => {
                store.hold(req, now).await?;
                Err(lost())
            }
            Lose::BeforeHolding => Err(lost()),
        }
    }
}

/// A small event, a buyer and their key, and holds under claims on `p`'s stores whose
/// first hold's answer is lost as `lose` says.
async fn set_up(p: &TwoSteps, lose: Lose) -> (Fixture, BuyerId, Key, ClaimThenHold) {
    let fx = Fixture::small(p.arbiter.clone()).await;
    let buyer = BuyerId::random();
    let hooks = Losing {
        lose,
        armed: AtomicBool::new(true),
    };
    let inner = p.arbiter.clone();
    let losing: Arc<dyn SeatArbiter> = Arc::new(Hooked { inner, hooks });
    let holds = ClaimThenHold::new(p.replays.clone(), losing);
    (fx, buyer, Key::new(buyer, claimant()), holds)
}

fn seat_zero(fx: &Fixture, buyer: BuyerId) -> HoldRequest {
    fx.request(buyer, SeatChoice::Named(vec![0]))
}

/// The answer the caller keeps for a hold that ran (`idempotency::Claim::keep`).
fn created() -> StoredResponse {
    StoredResponse {
        status: 201,
        body: br#"{"hold_id":"first"}"#.to_vec(),
    }
}

async fn held(fx: &Fixture) -> u32 {
    fx.arb.counts(fx.event).await.expect("counts").held
}

/// The store took the hold and the answer was lost: the hold is read back and answered
/// as taken, so the caller keeps it and the retry (a new hold id, as every attempt
/// draws one) is answered with it, holding nothing more.
pub async fn a_hold_whose_answer_was_lost_is_read_back_and_its_retry_holds_nothing(p: TwoSteps) {
    let (fx, buyer, key, holds) = set_up(&p, Lose::AfterHolding).await;
    let first = seat_zero(&fx, buyer);
    let outcome = holds.hold(&key.claim(), &first, T0).await.unwrap();
    match &outcome {
        Claimed::Ran(Ok(hold)) => {
            assert_eq!((hold.hold, hold.buyer), (first.hold, buyer));
            assert_eq!(hold.seats, vec![0]);
        }
        other => panic!("a hold the store took is answered as taken: {other:?}"),
    }
    p.replays
        .finish(&key.replay, key.lease(), &created())
        .await
        .unwrap();
    let retry = fx.request(buyer, SeatChoice::Named(vec![0]));
    let again = holds.hold(&key.claim(), &retry, T0).await.unwrap();
    assert_eq!(again, Claimed::Refused(Begin::Replay(created())));
    assert_eq!(fx.arb.get(retry.hold).await.unwrap(), None);
    assert_eq!(held(&fx).await, 1, "one hold, not two");
    fx.done().await;
}

/// The request never reached the store: the answer is the store's error, the key is
/// freed (as the caller frees it for any failure of ours) and the retry holds, once.
pub async fn a_hold_lost_before_the_store_took_it_frees_the_key_and_its_retry_holds_once(
    p: TwoSteps,
) {
    let (fx, buyer, key, holds) = set_up(&p, Lose::BeforeHolding).await;
    let first = seat_zero(&fx, buyer);
    let outcome = holds.hold(&key.claim(), &first, T0).await.unwrap();
    assert!(
        matches!(outcome, Claimed::Ran(Err(ArbiterError::Store(_)))),
        "{outcome:?}"
    );
    assert_eq!(fx.arb.get(first.hold).await.unwrap(), None);
    p.replays.abandon(&key.replay, key.lease()).await.unwrap();
    let retry = seat_zero(&fx, buyer);
    match holds.hold(&key.claim(), &retry, T0).await.unwrap() {
        Claimed::Ran(Ok(hold)) => assert_eq!(hold.hold, retry.hold),
        other => panic!("the retry holds: {other:?}"),
    }
    assert_eq!(held(&fx).await, 1);
    fx.done().await;
}
