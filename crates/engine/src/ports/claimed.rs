use std::sync::Arc;

use async_trait::async_trait;
use boxoffice_domain::Millis;

use super::{
    ArbiterError, Begin, Claimant, HoldRequest, HoldView, IdempotencyStore, SeatArbiter, StoreError,
};

/// An Idempotency-Key claim to take in the same step as the write it guards: the
/// arguments of `IdempotencyStore::begin`.
#[derive(Clone, Copy, Debug)]
pub struct ReplayClaim<'a> {
    pub scope: &'a str,
    pub key: &'a str,
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
}

/// Holds under an Idempotency-Key: the claim of the key in the hold replay store and,
/// when it is granted, the hold, as one step where the hot store can do both at once
/// (one script on a single Redis) and as `begin` then `hold` elsewhere. Either way the
/// answers are those of `IdempotencyStore::begin` followed by `SeatArbiter::hold`: the
/// conformance suite (`testkit::claimed`) runs the same cases on every adapter.
#[async_trait]
pub trait ClaimedHolds: Send + Sync {
    /// The replay store the claims live in: `finish` and `abandon` go there.
    fn replays(&self) -> &Arc<dyn IdempotencyStore>;

    /// Claims `claim` and, when granted, holds `req` as `SeatArbiter::hold` does. A
    /// `StoreError` says nothing about whether the claim was taken (as from `begin`).
    async fn hold(
        &self,
        claim: &ReplayClaim<'_>,
        req: &HoldRequest,
        now: Millis,
    ) -> Result<Claimed<Result<HoldView, ArbiterError>>, StoreError>;
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
        let begun = replays
            .begin(
                claim.scope,
                claim.key,
                claim.fingerprint,
                claim.now,
                claim.claimant,
            )
            .await?;
        Ok(match begun {
            Begin::Proceed => Claimed::Ran(arbiter.hold(req, now).await),
            other => Claimed::Refused(other),
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
}
