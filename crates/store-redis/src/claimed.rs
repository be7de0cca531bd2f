//! `RedisClaimedHolds`: a hold and its Idempotency-Key claim in one round trip.
//!
//! On a single Redis, `lua/hold_claimed.lua` takes the claim (as `begin` does) and,
//! when it is granted, holds (as `hold` does), in one EVALSHA: the event's keys and the
//! replay record's keys have different hash tags, which only a Redis Cluster forbids a
//! script to mix. On a Redis Cluster the claim and the hold are two calls
//! (`ClaimThenHold`): the record's slot is chosen by a hash of (scope, key), the
//! event's by the event, and a buyer's key must be one record whatever event it was
//! sent for (a key reused for another event is refused as a different request).

use std::sync::Arc;

use async_trait::async_trait;
use boxoffice_domain::Millis;
use boxoffice_engine::ports::{
    ArbiterError, Begin, ClaimThenHold, Claimed, ClaimedHolds, HoldRequest, HoldView,
    IdempotencyStore, ReplayClaim, StoreError,
};

use crate::arbiter::{RedisArbiter, hold_key};
use crate::idempotency::{RedisIdempotency, answer};
use crate::reply::{Reply, ok_or_arbiter_error, one_hold};
use crate::scripts::HOLD_CLAIMED;

pub struct RedisClaimedHolds {
    arbiter: Arc<RedisArbiter>,
    idempotency: Arc<RedisIdempotency>,
    replays: Arc<dyn IdempotencyStore>,
}

impl RedisClaimedHolds {
    /// Holds of `arbiter` under claims in `idempotency`; both must be on the same Redis.
    pub fn new(arbiter: Arc<RedisArbiter>, idempotency: Arc<RedisIdempotency>) -> Self {
        RedisClaimedHolds {
            replays: idempotency.clone(),
            arbiter,
            idempotency,
        }
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
                self.arbiter.hold_args(inv, req, key, now);
            })
            .await?;
        if reply.first().is_some_and(|code| code == b"claim") {
            return Ok(match answer(reply.into_iter().skip(1).collect())? {
                Begin::Proceed => {
                    return Err(StoreError("a granted claim came back refused".into()));
                }
                other => Claimed::Refused(other),
            });
        }
        Ok(Claimed::Ran(
            ok_or_arbiter_error(reply).and_then(|payload| one_hold(req.hold, payload)),
        ))
    }
}
