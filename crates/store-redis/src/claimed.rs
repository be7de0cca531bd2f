//! `RedisClaimedHolds`: a hold, or a release, and its Idempotency-Key claim in one round
//! trip.
//!
//! On a single Redis, `lua/hold_claimed.lua` takes the claim (as `begin` does) and,
//! when it is granted, holds (as `hold` does) and keeps the hold's outcome as the key's
//! answer (`Claimed::Kept`, read back as `Begin::Kept` by [`kept_outcome`]), in one
//! EVALSHA, so a hold costs one command and one round trip: the event's keys and the
//! replay record's keys have different hash tags, which only a Redis Cluster forbids a
//! script to mix. `lua/release_claimed.lua` does the same for a buyer's release, and
//! counts the buyer's shopping finished in the waiting room's keys (a third tag) in the
//! same script. On a Redis Cluster the claim and the hold are two calls
//! (`ClaimThenHold`): the record's slot is chosen by a hash of (scope, key), the
//! event's by the event, and a buyer's key must be one record whatever event it was
//! sent for (a key reused for another event is refused as a different request).

use std::sync::Arc;

use async_trait::async_trait;
use boxoffice_domain::{BuyerId, EventId, HoldId, Millis};
use boxoffice_engine::ports::{
    ArbiterError, Begin, ClaimThenHold, ClaimThenJoin, Claimed, ClaimedHolds, ClaimedJoins,
    HoldRequest, HoldView, IdempotencyStore, KeptOutcome, Place, Released, ReplayClaim, StoreError,
};

use crate::arbiter::{RedisArbiter, hold_key};
use crate::idempotency::{RedisIdempotency, answer};
use crate::keys::{KeyTable, hold_field, line_finish_keys};
use crate::queue::{RedisQueue, place_of};
use crate::reply::{Reply, ok_or_arbiter_error, one_hold};
use crate::scripts::{HOLD_CLAIMED, JOIN_CLAIMED, RELEASE_CLAIMED};

pub struct RedisClaimedHolds {
    arbiter: Arc<RedisArbiter>,
    idempotency: Arc<RedisIdempotency>,
    replays: Arc<dyn IdempotencyStore>,
    /// The keys of the waiting room whose finished shoppers a release counts, when it
    /// is on the same Redis, made once per event.
    line: Option<KeyTable<2>>,
}

impl RedisClaimedHolds {
    /// Holds of `arbiter` under claims in `idempotency`; both must be on the same Redis.
    pub fn new(arbiter: Arc<RedisArbiter>, idempotency: Arc<RedisIdempotency>) -> Self {
        RedisClaimedHolds {
            replays: idempotency.clone(),
            arbiter,
            idempotency,
            line: None,
        }
    }

    /// A release also counts the buyer's shopping finished in `queue` (on the same
    /// Redis), in the same script: without it the engine counts them with a call of
    /// its own.
    pub fn counting_finished_in(self, queue: &RedisQueue) -> Self {
        RedisClaimedHolds {
            line: Some(KeyTable::with(queue.prefix().clone(), line_finish_keys)),
            ..self
        }
    }
}

/// `release_claimed.lua`'s `ok` payload: record, released now, counted.
fn released(hold: HoldId, payload: Vec<Vec<u8>>) -> Result<Released, ArbiterError> {
    let mut parts = payload.into_iter();
    let record = parts.next().unwrap_or_default();
    let flag = |raw: Option<Vec<u8>>| raw.is_some_and(|f| f == b"1");
    let (now, counted) = (flag(parts.next()), flag(parts.next()));
    Ok(Released {
        hold: one_hold(hold, vec![record])?,
        now,
        finish_counted: counted,
    })
}

/// A step's outcome as `keep_outcome.lua` kept it (status `kind`; body: the hold's id,
/// then the step's reply, a line each), in the ports' terms.
pub(crate) fn kept_outcome(kind: &[u8], body: &[u8]) -> Result<KeptOutcome, StoreError> {
    if kind == b"joined" {
        return Ok(KeptOutcome::Joined);
    }
    let unreadable = || {
        let body = String::from_utf8_lossy(body);
        StoreError(format!("unreadable kept outcome in Redis: {body:?}"))
    };
    let mut lines = body.split(|&b| b == b'\n');
    let hold: HoldId = lines
        .next()
        .and_then(|h| std::str::from_utf8(h).ok())
        .and_then(|h| h.parse().ok())
        .ok_or_else(unreadable)?;
    let reply = ok_or_arbiter_error(lines.map(<[u8]>::to_vec).collect());
    let outcome = match kind {
        b"hold" => KeptOutcome::Hold(reply.and_then(|payload| one_hold(hold, payload))),
        b"release" => KeptOutcome::Release(reply.and_then(|payload| released(hold, payload))),
        _ => return Err(unreadable()),
    };
    match outcome {
        KeptOutcome::Hold(Err(ArbiterError::Store(e)))
        | KeptOutcome::Release(Err(ArbiterError::Store(e))) => Err(e),
        outcome => Ok(outcome),
    }
}

/// The claim's answer when a claimed script refused it (`claim`, then `begin`'s reply),
/// or `None` when the claim was granted and the reply is the step's.
fn refused_claim(reply: &Reply) -> Result<Option<Begin>, StoreError> {
    match reply.split_first() {
        Some((code, rest)) if code == b"claim" => match answer(rest.to_vec())? {
            Begin::Proceed => Err(StoreError("a granted claim came back refused".into())),
            refused => Ok(Some(refused)),
        },
        _ => Ok(None),
    }
}

#[async_trait]
impl ClaimedHolds for RedisClaimedHolds {
    fn replays(&self) -> &Arc<dyn IdempotencyStore> {
        &self.replays
    }

    #[tracing::instrument(level = "debug", skip_all, fields(hold = %req.hold))]
    async fn hold(
        &self,
        claim: &ReplayClaim<'_>,
        req: &HoldRequest,
        now: Millis,
    ) -> Result<Claimed<Result<HoldView, ArbiterError>>, StoreError> {
        if !self.arbiter.is_single() {
            let (replays, arbiter) = (&*self.idempotency, &*self.arbiter);
            return ClaimThenHold::run(replays, arbiter, claim, req, now).await;
        }
        let key = hold_key(req)?;
        let reply: Reply = self
            .arbiter
            .eval(&HOLD_CLAIMED, req.hold.event, |inv| {
                self.idempotency.claim(inv, claim);
                inv.arg(req.hold.text().as_str());
                self.arbiter.hold_args(inv, req, key, now);
            })
            .await?;
        if let Some(refused) = refused_claim(&reply)? {
            return Ok(Claimed::Refused(refused));
        }
        let outcome = ok_or_arbiter_error(reply).and_then(|payload| one_hold(req.hold, payload));
        // The script kept every outcome but a lost event as the key's answer; a reply
        // this node cannot read is its failure, answered as a store error (the port's
        // `Kept` never carries one: the caller abandons, which leaves the record alone).
        let kept = !matches!(
            outcome,
            Err(ArbiterError::UnknownEvent | ArbiterError::Store(_))
        );
        Ok(Claimed::of(outcome, kept))
    }

    #[tracing::instrument(level = "debug", skip_all, fields(hold = %hold))]
    async fn release(
        &self,
        claim: &ReplayClaim<'_>,
        hold: HoldId,
        buyer: BuyerId,
    ) -> Result<Claimed<Result<Released, ArbiterError>>, StoreError> {
        if !self.arbiter.is_single() {
            let (replays, arbiter) = (&*self.idempotency, &*self.arbiter);
            return ClaimThenHold::run_release(replays, arbiter, claim, hold, buyer).await;
        }
        let line = self.line.as_ref().map(|t| t.get(hold.event));
        let reply: Reply = self
            .arbiter
            .eval(&RELEASE_CLAIMED, hold.event, |inv| {
                self.idempotency.claim(inv, claim);
                if let Some(keys) = &line {
                    let [finished, state] = &**keys;
                    inv.key(finished).key(state);
                }
                inv.arg(hold.text().as_str())
                    .arg(hold_field(hold))
                    .arg(buyer.to_string())
                    .arg(self.arbiter.keep_finished())
                    .arg(buyer.0.as_bytes().as_slice());
            })
            .await?;
        if let Some(refused) = refused_claim(&reply)? {
            return Ok(Claimed::Refused(refused));
        }
        // The script kept every outcome as the key's answer (a reply this node cannot
        // read is answered as a store error, as for a hold).
        let outcome = ok_or_arbiter_error(reply).and_then(|payload| released(hold, payload));
        let kept = !matches!(outcome, Err(ArbiterError::Store(_)));
        Ok(Claimed::of(outcome, kept))
    }
}

/// `RedisClaimedJoins`: a queue join after opening and its Idempotency-Key claim in one
/// round trip. On a single Redis, `lua/join_claimed.lua` takes the claim (as `begin`
/// does) and, when it is granted, keeps `joined` as the key's answer and takes the place
/// (as `join_line` does), in one EVALSHA. On a Redis Cluster (or behind a failover
/// connection) the claim and the place are two calls (`ClaimThenJoin`), for the same
/// reason as for holds.
pub struct RedisClaimedJoins {
    queue: Arc<RedisQueue>,
    idempotency: Arc<RedisIdempotency>,
    replays: Arc<dyn IdempotencyStore>,
}

impl RedisClaimedJoins {
    /// Joins of `queue` under claims in `idempotency`; both must be on the same Redis.
    pub fn new(queue: Arc<RedisQueue>, idempotency: Arc<RedisIdempotency>) -> Self {
        RedisClaimedJoins {
            replays: idempotency.clone(),
            queue,
            idempotency,
        }
    }
}

#[async_trait]
impl ClaimedJoins for RedisClaimedJoins {
    fn replays(&self) -> &Arc<dyn IdempotencyStore> {
        &self.replays
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn join_line(
        &self,
        claim: &ReplayClaim<'_>,
        event: EventId,
        buyer: BuyerId,
    ) -> Result<Claimed<Result<Option<Place>, StoreError>>, StoreError> {
        if !self.queue.is_single() {
            let (replays, queue) = (&*self.idempotency, &*self.queue);
            return ClaimThenJoin::run(replays, queue, claim, event, buyer).await;
        }
        let reply: Reply = self
            .queue
            .eval_line(&JOIN_CLAIMED, &self.queue.join_keys(event)[..], |inv| {
                self.idempotency.claim(inv, claim);
                inv.arg(buyer.0.as_bytes().as_slice());
            })
            .await?;
        if let Some(refused) = refused_claim(&reply)? {
            return Ok(Claimed::Refused(refused));
        }
        let field = |i: usize| {
            let raw = reply.get(i).and_then(|f| std::str::from_utf8(f).ok());
            raw.and_then(|f| f.parse::<i64>().ok())
        };
        let place = match (field(0), field(1)) {
            (Some(position), Some(new)) => Ok(u64::try_from(position)
                .ok()
                .map(|position| place_of(position, new == 1))),
            _ => Err(StoreError("unreadable join reply from Redis".into())),
        };
        // The script kept `joined` as the key's answer whatever the line said.
        Ok(Claimed::Kept(place))
    }
}
