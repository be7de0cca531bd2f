use std::sync::Arc;

use async_trait::async_trait;
use boxoffice_domain::{BuyerId, EventId, HoldId, Millis};

use super::{
    ArbiterError, Begin, Claimant, HoldRequest, HoldView, IdempotencyStore, Place, QueueStore,
    ReplayKey, SeatArbiter, StoreError,
};

/// An Idempotency-Key claim to take in the same step as the write it guards: the
/// arguments of `IdempotencyStore::begin`.
#[derive(Clone, Copy, Debug)]
pub struct ReplayClaim<'a> {
    pub key: &'a ReplayKey,
    pub fingerprint: &'a [u8; 32],
    pub now: Millis,
    pub claimant: &'a Claimant,
}

/// What a claimed step answered.
#[derive(Debug, PartialEq, Eq)]
pub enum Claimed<T> {
    /// The claim was not granted (`Replay`, `Mismatch`, `InFlight` or `Full`, never
    /// `Proceed`): the step did not run.
    Refused(Begin),
    /// The claim is the caller's (it finishes or abandons it) and the step ran.
    Ran(T),
    /// The step ran and the store kept its outcome as the key's answer in the same step,
    /// so a retry is refused with `Begin::Kept`: the caller neither finishes nor
    /// abandons the claim. Only outcomes the caller would keep as they are come back
    /// kept: never `ArbiterError::UnknownEvent` (the caller rebuilds the event and
    /// tries again) or `ArbiterError::Store`.
    Kept(T),
}

impl<T> Claimed<T> {
    /// The step's outcome and whether the store kept it, or the claim's refusal.
    pub fn outcome(self) -> Result<(T, bool), Begin> {
        match self {
            Claimed::Refused(begin) => Err(begin),
            Claimed::Ran(outcome) => Ok((outcome, false)),
            Claimed::Kept(outcome) => Ok((outcome, true)),
        }
    }

    /// `outcome` again, as `Ran` or `Kept` by `kept`.
    pub fn of(outcome: T, kept: bool) -> Claimed<T> {
        if kept {
            Claimed::Kept(outcome)
        } else {
            Claimed::Ran(outcome)
        }
    }
}

/// A claimed step's outcome that the store kept as the key's answer in the step itself,
/// in the store's own terms, so the caller can answer a retry as it answered the first
/// request (`Begin::Kept`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeptOutcome {
    /// A hold's, as `ClaimedHolds::hold` returned it.
    Hold(Result<HoldView, ArbiterError>),
    /// A buyer's release, as `ClaimedHolds::release` returned it.
    Release(Result<Released, ArbiterError>),
    /// A join's (`ClaimedJoins::join_line`): the buyer took or found their place. The
    /// place is not kept with it: a join run again finds the same place (one per buyer
    /// and event), so a retry runs the join again and answers from the line as it is.
    Joined,
}

/// What a buyer's release under a claim did (`ClaimedHolds::release`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Released {
    /// The hold as it is now: released, or ended before (released or expired).
    pub hold: HoldView,
    /// Whether this call released it; `false`: it had ended already and nothing moved.
    pub now: bool,
    /// Whether the same step also counted the buyer as a finished shopper in the
    /// waiting room (`QueueStore::finish`); when it released and did not, the caller
    /// counts them.
    pub finish_counted: bool,
}

/// Holds and releases under an Idempotency-Key: the claim of the key in the hold replay
/// store and, when it is granted, the hold (or the buyer's release), as one step where
/// the hot store can do both at once (one script on a single Redis) and as `begin` then
/// the arbiter's calls elsewhere. Either way the answers are those of
/// `IdempotencyStore::begin` followed by `SeatArbiter::hold` (or by
/// [`ClaimThenHold::release_checked`]): the conformance suite (`testkit::claimed`) runs
/// the same cases on every adapter.
#[async_trait]
pub trait ClaimedHolds: Send + Sync {
    /// The replay store the claims live in: `finish` and `abandon` go there.
    fn replays(&self) -> &Arc<dyn IdempotencyStore>;

    /// Claims `claim` and, when granted, holds `req` as `SeatArbiter::hold` does. A
    /// `StoreError` says nothing about whether the claim was taken (as from `begin`).
    /// A store may keep the hold's outcome as the key's answer in the same step
    /// (`Claimed::Kept`; a retry then gets `Begin::Kept(KeptOutcome::Hold(..))`).
    async fn hold(
        &self,
        claim: &ReplayClaim<'_>,
        req: &HoldRequest,
        now: Millis,
    ) -> Result<Claimed<Result<HoldView, ArbiterError>>, StoreError>;

    /// Claims `claim` and, when granted, releases `hold` for `buyer` as
    /// [`ClaimThenHold::release_checked`] does: another buyer's hold, or one the store
    /// does not have, is `UnknownHold`; a hold past held (checking out, paid for) is
    /// `WrongState`; one already released or expired is answered as it is, nothing
    /// moved. A `StoreError` says nothing about whether the claim was taken. A store may
    /// keep the release's outcome as the key's answer in the same step
    /// (`Claimed::Kept`; a retry then gets `Begin::Kept(KeptOutcome::Release(..))`).
    async fn release(
        &self,
        claim: &ReplayClaim<'_>,
        hold: HoldId,
        buyer: BuyerId,
    ) -> Result<Claimed<Result<Released, ArbiterError>>, StoreError>;
}

/// `ClaimedHolds` as two steps: `begin`, then `hold` when the claim is granted. For
/// stores that cannot do both at once (in-process; the replay record and the event in
/// different Redis Cluster slots).
pub struct ClaimThenHold {
    replays: Arc<dyn IdempotencyStore>,
    arbiter: Arc<dyn SeatArbiter>,
}

impl ClaimThenHold {
    pub fn new(replays: Arc<dyn IdempotencyStore>, arbiter: Arc<dyn SeatArbiter>) -> Self {
        ClaimThenHold { replays, arbiter }
    }

    /// The claim, then the hold: for adapters that fall back to two steps.
    pub async fn run(
        replays: &dyn IdempotencyStore,
        arbiter: &dyn SeatArbiter,
        claim: &ReplayClaim<'_>,
        req: &HoldRequest,
        now: Millis,
    ) -> Result<Claimed<Result<HoldView, ArbiterError>>, StoreError> {
        Self::claim_then(replays, claim, Self::hold_read_back(arbiter, req, now)).await
    }

    /// `SeatArbiter::hold`, and when its answer is lost (a `StoreError`, which says
    /// nothing of whether the store took the hold: the script ran and its reply timed
    /// out, say) the hold read back by its id. A hold the store took is answered as
    /// taken, so the caller keeps it as the key's answer and a retry is answered with
    /// it; not found, the caller frees the key for a retry (a request still on its way
    /// to the store could yet take the first hold: rare, and it lapses at its expiry).
    /// Only when the read fails as well is the hold's fate unknown: the error stands
    /// and a retry may hold a second time (the first lapses at its expiry). Where the claim and the hold are one step, the store keeps the answer
    /// in that step and a lost reply is found in the key's record instead.
    async fn hold_read_back(
        arbiter: &dyn SeatArbiter,
        req: &HoldRequest,
        now: Millis,
    ) -> Result<HoldView, ArbiterError> {
        match arbiter.hold(req, now).await {
            Err(ArbiterError::Store(lost)) => match arbiter.get(req.hold).await {
                Ok(Some(taken)) if taken.buyer == req.buyer => Ok(taken),
                Ok(_) | Err(_) => Err(ArbiterError::Store(lost)),
            },
            answer => answer,
        }
    }

    /// The claim, then the release: for adapters that fall back to two steps.
    pub async fn run_release(
        replays: &dyn IdempotencyStore,
        arbiter: &dyn SeatArbiter,
        claim: &ReplayClaim<'_>,
        hold: HoldId,
        buyer: BuyerId,
    ) -> Result<Claimed<Result<Released, ArbiterError>>, StoreError> {
        Self::claim_then(replays, claim, Self::release_checked(arbiter, hold, buyer)).await
    }

    /// Claims `claim` and runs `step` only when the claim is granted (a future does
    /// nothing until it is awaited).
    async fn claim_then<T>(
        replays: &dyn IdempotencyStore,
        claim: &ReplayClaim<'_>,
        step: impl Future<Output = T>,
    ) -> Result<Claimed<T>, StoreError> {
        let begun = replays
            .begin(claim.key, claim.fingerprint, claim.now, claim.claimant)
            .await?;
        Ok(match begun {
            Begin::Proceed => Claimed::Ran(step.await),
            other => Claimed::Refused(other),
        })
    }

    /// A buyer's release of their hold, in the arbiter's one step (`release_held`):
    /// released if it is the buyer's and held. The buyer is not counted as a finished
    /// shopper (`finish_counted` is false).
    pub async fn release_checked(
        arbiter: &dyn SeatArbiter,
        hold: HoldId,
        buyer: BuyerId,
    ) -> Result<Released, ArbiterError> {
        let (hold, now) = arbiter.release_held(hold, buyer).await?;
        Ok(Released {
            hold,
            now,
            finish_counted: false,
        })
    }
}

#[async_trait]
impl ClaimedHolds for ClaimThenHold {
    fn replays(&self) -> &Arc<dyn IdempotencyStore> {
        &self.replays
    }

    async fn hold(
        &self,
        claim: &ReplayClaim<'_>,
        req: &HoldRequest,
        now: Millis,
    ) -> Result<Claimed<Result<HoldView, ArbiterError>>, StoreError> {
        Self::run(&*self.replays, &*self.arbiter, claim, req, now).await
    }

    async fn release(
        &self,
        claim: &ReplayClaim<'_>,
        hold: HoldId,
        buyer: BuyerId,
    ) -> Result<Claimed<Result<Released, ArbiterError>>, StoreError> {
        Self::run_release(&*self.replays, &*self.arbiter, claim, hold, buyer).await
    }
}

/// A queue join after opening under an Idempotency-Key: the claim of the key in the
/// join replay store and, when it is granted, the place at the back of the line
/// (`QueueStore::join_line`), as one step where the hot store can do both at once (one
/// script on a single Redis) and as `begin` then `join_line` elsewhere. The claim
/// decides before a place is taken, so a key used for another request takes none.
#[async_trait]
pub trait ClaimedJoins: Send + Sync {
    /// The replay store the claims live in: `finish` and `abandon` go there, and so do
    /// the claims of joins before opening (journaled before they are placed).
    fn replays(&self) -> &Arc<dyn IdempotencyStore>;

    /// Claims `claim` and, when granted, answers `QueueStore::join_line(event, buyer)`
    /// (`Ok(None)`: the store has not opened the line; the claim is the caller's all
    /// the same). The outer `StoreError` says nothing about whether the claim was
    /// taken (as from `begin`); the inner one is the line's, under a granted claim. A
    /// store may keep `KeptOutcome::Joined` as the key's answer in the same step
    /// (`Claimed::Kept`): a retry is then refused with it and runs the join again.
    async fn join_line(
        &self,
        claim: &ReplayClaim<'_>,
        event: EventId,
        buyer: BuyerId,
    ) -> Result<Claimed<Result<Option<Place>, StoreError>>, StoreError>;
}

/// `ClaimedJoins` as two steps: `begin`, then `join_line` when the claim is granted.
/// For stores that cannot do both at once (in-process; the replay record and the line
/// in different Redis Cluster slots).
pub struct ClaimThenJoin {
    replays: Arc<dyn IdempotencyStore>,
    queue: Arc<dyn QueueStore>,
}

impl ClaimThenJoin {
    pub fn new(replays: Arc<dyn IdempotencyStore>, queue: Arc<dyn QueueStore>) -> Self {
        ClaimThenJoin { replays, queue }
    }

    /// The claim, then the place: for adapters that fall back to two steps.
    pub async fn run(
        replays: &dyn IdempotencyStore,
        queue: &dyn QueueStore,
        claim: &ReplayClaim<'_>,
        event: EventId,
        buyer: BuyerId,
    ) -> Result<Claimed<Result<Option<Place>, StoreError>>, StoreError> {
        ClaimThenHold::claim_then(replays, claim, queue.join_line(event, buyer)).await
    }
}

#[async_trait]
impl ClaimedJoins for ClaimThenJoin {
    fn replays(&self) -> &Arc<dyn IdempotencyStore> {
        &self.replays
    }

    async fn join_line(
        &self,
        claim: &ReplayClaim<'_>,
        event: EventId,
        buyer: BuyerId,
    ) -> Result<Claimed<Result<Option<Place>, StoreError>>, StoreError> {
        Self::run(&*self.replays, &*self.queue, claim, event, buyer).await
    }
}
