//! `MemoryClaimedHolds`: holds under their Idempotency-Key claims in the embedded
//! deployment, with each hold's outcome kept as the key's answer in the same step.
//!
//! The claim and the hold are two calls here too (`ClaimThenHold::run`), but the hold's
//! outcome goes into the claim's record at once (`Claimed::Kept`): the caller then
//! neither renders nor keeps the JSON answer a second time, and the record keeps the
//! hold's view packed in a few dozen bytes instead of the answer's couple of hundred.
//! Every hold of an on-sale leaves such a record for the retention period, so that is
//! the replay store's memory and the fresh memory each hold touches. A retry is answered
//! from the kept view (`Begin::Kept`), as Redis answers it (`RedisClaimedHolds`).
//!
//! Releases are rare: they run as `ClaimThenHold` runs them and the caller keeps the
//! answer.

use std::sync::Arc;

use async_trait::async_trait;
use boxoffice_domain::{BuyerId, EventId, HoldId, HoldState, Millis, Money, SeatIndex};
use boxoffice_engine::ports::{
    ArbiterError, ClaimThenHold, Claimed, ClaimedHolds, HoldRequest, HoldView, IdempotencyStore,
    KeptOutcome, Released, ReplayClaim, SeatArbiter, StoreError,
};
use uuid::Uuid;

use crate::MemoryIdempotency;
use crate::idempotency::Kept;

pub struct MemoryClaimedHolds {
    replays: Arc<MemoryIdempotency>,
    /// The same store, as the port's callers finish and abandon claims in it.
    as_port: Arc<dyn IdempotencyStore>,
    arbiter: Arc<dyn SeatArbiter>,
}

impl MemoryClaimedHolds {
    /// Holds on `arbiter` under claims in `replays`.
    pub fn new(replays: Arc<MemoryIdempotency>, arbiter: Arc<dyn SeatArbiter>) -> Self {
        MemoryClaimedHolds {
            as_port: replays.clone(),
            replays,
            arbiter,
        }
    }
}

#[async_trait]
impl ClaimedHolds for MemoryClaimedHolds {
    fn replays(&self) -> &Arc<dyn IdempotencyStore> {
        &self.as_port
    }

    async fn hold(
        &self,
        claim: &ReplayClaim<'_>,
        req: &HoldRequest,
        now: Millis,
    ) -> Result<Claimed<Result<HoldView, ArbiterError>>, StoreError> {
        let claimed = ClaimThenHold::run(&*self.replays, &*self.arbiter, claim, req, now).await?;
        let Claimed::Ran(outcome) = claimed else {
            return Ok(claimed);
        };
        // A lost event is rebuilt and held again under the same claim; a store's failure
        // is the caller's to answer (and abandon): neither is kept.
        let kept = match &outcome {
            Err(ArbiterError::UnknownEvent | ArbiterError::Store(_)) => None,
            Ok(view) => Some(pack(view).map_or_else(|| other(&outcome), Kept::Hold)),
            Err(_) => Some(other(&outcome)),
        };
        let lease = claim.claimant.lease_from(claim.now);
        let kept = kept.is_some_and(|kept| self.replays.keep_outcome(claim.key, lease, kept));
        Ok(Claimed::of(outcome, kept))
    }

    async fn release(
        &self,
        claim: &ReplayClaim<'_>,
        hold: HoldId,
        buyer: BuyerId,
    ) -> Result<Claimed<Result<Released, ArbiterError>>, StoreError> {
        ClaimThenHold::run_release(&*self.replays, &*self.arbiter, claim, hold, buyer).await
    }
}

fn other(outcome: &Result<HoldView, ArbiterError>) -> Kept {
    Kept::Other(Box::new(KeptOutcome::Hold(outcome.clone())))
}

/// The bytes before the seats: event, nonce, buyer, expiry, state, seat count.
const HEAD: usize = 8 + 16 + 16 + 8 + 1 + 1;

/// A hold's view in `HEAD` bytes and 12 a seat (its index, then its price), little-
/// endian: 62 bytes for one seat, where its JSON answer takes about 170. `None` for a
/// view this does not pack (an order or a key with it, more than 255 seats, prices not
/// one a seat), which is kept as it is.
pub(crate) fn pack(view: &HoldView) -> Option<Box<[u8]>> {
    let n = view.seats.len();
    if view.order.is_some() || view.key.is_some() || n > 255 || view.prices.len() != n {
        return None;
    }
    let state = HoldState::ALL.iter().position(|s| *s == view.state)?;
    let mut out = Vec::with_capacity(HEAD + 12 * n);
    out.extend_from_slice(&view.hold.event.0.to_le_bytes());
    out.extend_from_slice(&view.hold.nonce.to_le_bytes());
    out.extend_from_slice(view.buyer.0.as_bytes());
    out.extend_from_slice(&view.expires_at.0.to_le_bytes());
    out.push(state as u8);
    out.push(n as u8);
    for (seat, price) in view.seats.iter().zip(&view.prices) {
        out.extend_from_slice(&seat.to_le_bytes());
        out.extend_from_slice(&price.0.to_le_bytes());
    }
    Some(out.into_boxed_slice())
}

/// The view `pack` packed. Only this store's own packing reaches it.
pub(crate) fn unpack(packed: &[u8]) -> HoldView {
    let mut at = 0;
    let mut take = |len: usize| {
        let part = &packed[at..at + len];
        at += len;
        part
    };
    let event = EventId(i64::from_le_bytes(take(8).try_into().expect("8 bytes")));
    let nonce = u128::from_le_bytes(take(16).try_into().expect("16 bytes"));
    let buyer = BuyerId(Uuid::from_bytes(take(16).try_into().expect("16 bytes")));
    let expires_at = Millis(i64::from_le_bytes(take(8).try_into().expect("8 bytes")));
    let state = HoldState::ALL[take(1)[0] as usize];
    let n = take(1)[0] as usize;
    let (mut seats, mut prices) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        seats.push(SeatIndex::from_le_bytes(
            take(4).try_into().expect("4 bytes"),
        ));
        prices.push(Money(i64::from_le_bytes(
            take(8).try_into().expect("8 bytes"),
        )));
    }
    HoldView {
        hold: HoldId { event, nonce },
        buyer,
        seats,
        prices,
        state,
        expires_at,
        order: None,
        key: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(seats: Vec<SeatIndex>, state: HoldState) -> HoldView {
        let prices = seats.iter().map(|s| Money(5_000 + i64::from(*s))).collect();
        HoldView {
            hold: HoldId::random(EventId(-7)),
            buyer: BuyerId::random(),
            seats,
            prices,
            state,
            expires_at: Millis(1_796_463_142_826),
            order: None,
            key: None,
        }
    }

    #[test]
    fn a_packed_hold_unpacks_to_the_same_view_in_every_state() {
        for (i, state) in HoldState::ALL.into_iter().enumerate() {
            let seats: Vec<SeatIndex> = (0..i as u32).map(|s| s * 1_000_003).collect();
            let v = view(seats, state);
            let packed = pack(&v).expect("packs");
            assert_eq!(packed.len(), HEAD + 12 * v.seats.len());
            assert_eq!(unpack(&packed), v);
        }
        let wide = view((0..255).collect(), HoldState::Held);
        assert_eq!(unpack(&pack(&wide).expect("255 seats pack")), wide);
    }

    #[test]
    fn a_view_the_packing_cannot_carry_is_not_packed() {
        let many = view((0..256).collect(), HoldState::Held);
        assert_eq!(pack(&many), None);
        let mut ordered = view(vec![1], HoldState::Sold);
        ordered.order = Some(boxoffice_domain::OrderId::random());
        assert_eq!(pack(&ordered), None);
        let mut keyed = view(vec![1], HoldState::Held);
        keyed.key = Some(boxoffice_domain::possession::Thumbprint("k".into()));
        assert_eq!(pack(&keyed), None);
        let mut unpriced = view(vec![1, 2], HoldState::Held);
        unpriced.prices.pop();
        assert_eq!(pack(&unpriced), None);
    }
}
