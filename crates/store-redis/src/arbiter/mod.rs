//! `RedisArbiter`: the seat arbiter of the cluster deployment.
//!
//! Layout of one event, every key under the hash tag `{<prefix>:<event>}`:
//!
//! | key | type | holds |
//! |---|---|---|
//! | `meta` | hash | capacity, max per buyer, seated flag per section, held/sold/active counters, `loaded` (written last) |
//! | `layout` | string | 20 bytes per seat (section, row, rank, place in section, price), read with GETRANGE |
//! | `free` | bitmap | 1 = free, MSB first: `availability()` is this string as it is |
//! | `sold` | bitmap | 1 = sold, for `sold_seats()` and reconciliation |
//! | `freez` | sorted set | free seats, score `section·2²⁰ + place`: best N of a section is one range read |
//! | `holds` | hash | hold id → record `state|deadline|buyer|order|seats|prices[|key]` |
//! | `dl` | sorted set | live holds by deadline, for expiry |
//! | `taken` | hash | buyer → seats held + sold (the per-buyer cap) |
//! | `unrep`, `fin` | lists | expiries done inside hold/pin not yet reported; finished holds oldest first |
//! | `loading` | string | the token of the load in progress |
//! | `claim` | string | a node's claim to rebuild the event, lapsing on its own; deleted when a load ends |
//!
//! Per-seat state is the two bitmaps rather than a hash seat → hold: a hold record
//! already names its seats, and the only per-seat question a script asks is "free?",
//! which GETBIT answers in O(1) from 6 KB per 50,000 seats instead of a 50,000-field
//! hash (megabytes). Hold records share one hash instead of a key each so that
//! `unload`/`load` delete a fixed list of keys (no SCAN, which a cluster cannot do in
//! one call) and finished holds are trimmed like the in-memory arbiter's.

mod load;

use std::time::Duration;

use async_trait::async_trait;
use boxoffice_domain::hold::HoldMove;
use boxoffice_domain::{BuyerId, EventId, HoldId, Millis, OrderId, SeatIndex};
use boxoffice_engine::ports::{
    ArbiterError, ArbiterLayout, Expired, HoldRequest, HoldView, RebuildClaim, Retake, SeatArbiter,
    SeatChoice, SeatCounts, SoldSeat, StoreError,
};
use redis::{FromRedisValue, Script, ScriptInvocation};

use crate::conn::{RedisConn, store_err};
use crate::hold_states;
use crate::keys::{EventKeyTable, Prefix, hold_field, sweep_lease_key};
use crate::reply::{self, Reply, ok_or_arbiter_error, one_hold};
use crate::scripts::{
    CLAIM, EXPIRE_DUE, HOLD, LEASE, MOVE, PIN, READ, RETAKE, SEAT_GIVEN, SEATS_RETURNED,
    SEATS_SOLD, UNLOAD,
};

/// Tunables of the Redis arbiter; defaults (and their reasons) in [`crate::RedisOptions`].
#[derive(Clone, Copy, Debug)]
pub struct RedisArbiterConfig {
    /// Finished holds kept per event so `get` can still say what happened (and
    /// unreported expiries kept for the sweep); the oldest are forgotten beyond this.
    pub keep_finished: usize,
    /// Seats per load script: small enough not to stall Redis, large enough to be few.
    pub load_chunk: usize,
    /// How long an unfinished load's token lives, so a crashed loader blocks nothing.
    pub load_ttl: Duration,
    /// How long a claim to rebuild a lost event lives (`claim_rebuild`).
    pub rebuild_claim: Duration,
}

impl Default for RedisArbiterConfig {
    fn default() -> Self {
        crate::RedisOptions::default().arbiter()
    }
}

pub struct RedisArbiter {
    conn: RedisConn,
    /// The key names of the events in use, with the prefix they start with.
    keys: EventKeyTable,
    config: RedisArbiterConfig,
}

impl RedisArbiter {
    /// Connects to one Redis (`redis://…`) or a cluster (several URLs, comma-separated).
    pub async fn connect(urls: &str, prefix: &str) -> Result<Self, StoreError> {
        let conn = RedisConn::connect(urls).await?;
        Ok(Self::new(
            conn,
            Prefix::new(prefix)?,
            RedisArbiterConfig::default(),
        ))
    }

    pub fn new(conn: RedisConn, prefix: Prefix, config: RedisArbiterConfig) -> Self {
        let config = RedisArbiterConfig {
            keep_finished: config.keep_finished.max(1),
            ..config
        };
        RedisArbiter {
            conn,
            keys: EventKeyTable::new(prefix),
            config,
        }
    }

    /// Runs `script` (EVALSHA, loading it on NOSCRIPT) with the event's keys and the
    /// arguments `args` adds.
    pub(crate) async fn eval<T: FromRedisValue>(
        &self,
        script: &Script,
        event: EventId,
        args: impl FnOnce(&mut ScriptInvocation<'_>),
    ) -> Result<T, StoreError> {
        let mut inv = script.prepare_invoke();
        for key in self.keys.get(event).iter() {
            inv.key(key);
        }
        args(&mut inv);
        let mut conn = self.conn.clone();
        inv.invoke_async(&mut conn).await.map_err(store_err)
    }

    async fn read(&self, event: EventId, what: &str) -> Result<Vec<Vec<u8>>, ArbiterError> {
        let reply: Reply = self
            .eval(&READ, event, |inv| {
                inv.arg(what);
            })
            .await?;
        ok_or_arbiter_error(reply)
    }

    /// mark_seats_sold / return_sold_seats: `args` first, then seat/buyer pairs; the
    /// reply is a count.
    async fn seats(
        &self,
        script: &redis::Script,
        event: EventId,
        seats: &[SoldSeat],
        args: impl FnOnce(&mut ScriptInvocation<'_>),
    ) -> Result<u32, ArbiterError> {
        let reply: Reply = self
            .eval(script, event, |inv| {
                args(inv);
                for s in seats {
                    inv.arg(s.seat).arg(s.buyer.to_string());
                }
            })
            .await?;
        Ok(count(&first(ok_or_arbiter_error(reply)?))?)
    }

    /// uncertain / sold / release: one script, the move named as in its `MOVE_LIST`.
    async fn move_hold(&self, hold: HoldId, by: HoldMove) -> Result<HoldView, ArbiterError> {
        let reply: Reply = self
            .eval(&MOVE, hold.event, |inv| {
                inv.arg(hold_field(hold))
                    .arg(hold_states::move_name(by))
                    .arg(self.config.keep_finished);
            })
            .await?;
        one_hold(hold, ok_or_arbiter_error(reply)?)
    }
}

impl RedisArbiter {
    /// The arguments of `lua/hold.lua`.
    /// The hold script's arguments after its keys; `key` is the hold's [`hold_key`].
    pub(crate) fn hold_args(
        &self,
        inv: &mut ScriptInvocation<'_>,
        req: &HoldRequest,
        key: &str,
        now: Millis,
    ) {
        inv.arg(hold_field(req.hold))
            .arg(req.buyer.to_string())
            .arg(req.expires_at.0)
            .arg(now.0)
            .arg(self.config.keep_finished)
            .arg(key);
        match &req.choice {
            SeatChoice::Named(seats) => {
                inv.arg("N").arg(seats.as_slice());
            }
            SeatChoice::BestAvailable {
                section,
                quantity,
                adjacent,
            } => {
                inv.arg("B")
                    .arg(section)
                    .arg(quantity)
                    .arg(u8::from(*adjacent));
            }
        }
    }

    /// Finished holds kept per event (the `keep` argument of the scripts that end one).
    pub(crate) fn keep_finished(&self) -> usize {
        self.config.keep_finished
    }

    /// Whether this is one Redis, where a script may touch keys of several hash tags.
    pub(crate) fn is_single(&self) -> bool {
        matches!(self.conn, RedisConn::Single(_))
    }
}

/// The key a hold answers to as the hold script takes it: `""` for none. The record's
/// fields are `|`-separated; a thumbprint is base64url.
pub(crate) fn hold_key(req: &HoldRequest) -> Result<&str, StoreError> {
    let key = req.key.as_ref().map_or("", |k| k.as_str());
    if key.contains('|') {
        return Err(StoreError(
            "a hold key must be a base64url thumbprint".into(),
        ));
    }
    Ok(key)
}

fn first(payload: Vec<Vec<u8>>) -> Vec<u8> {
    payload.into_iter().next().unwrap_or_default()
}

fn count(raw: &[u8]) -> Result<u32, StoreError> {
    std::str::from_utf8(raw)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| StoreError(format!("unreadable counter in Redis: {raw:?}")))
}

#[async_trait]
impl SeatArbiter for RedisArbiter {
    #[tracing::instrument(level = "debug", skip_all)]
    async fn load(&self, layout: &ArbiterLayout, sold: &[SoldSeat]) -> Result<(), StoreError> {
        load::load(self, layout, sold, false).await.map(drop)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %layout.event))]
    async fn load_lost(
        &self,
        layout: &ArbiterLayout,
        sold: &[SoldSeat],
    ) -> Result<bool, StoreError> {
        load::load(self, layout, sold, true).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn is_loaded(&self, event: EventId) -> Result<bool, StoreError> {
        match self.read(event, "loaded").await {
            Ok(_) => Ok(true),
            Err(ArbiterError::Store(e)) => Err(e),
            Err(_) => Ok(false),
        }
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn sweep_lease(
        &self,
        event: EventId,
        sweep: &str,
        node: &str,
        ttl_ms: u64,
    ) -> Result<Option<u64>, StoreError> {
        let mut inv = LEASE.prepare_invoke();
        inv.key(sweep_lease_key(self.keys.prefix(), event, sweep))
            .arg(node)
            .arg(ttl_ms.max(1));
        let left: i64 = inv
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        Ok(u64::try_from(left).ok())
    }

    async fn claim_rebuild(&self, event: EventId) -> Result<RebuildClaim, StoreError> {
        let ttl_ms = self.config.rebuild_claim.as_millis().max(1) as u64;
        let claim: String = self
            .eval(&CLAIM, event, |inv| {
                inv.arg(ttl_ms);
            })
            .await?;
        match claim.as_str() {
            "mine" => Ok(RebuildClaim::Mine),
            "loaded" => Ok(RebuildClaim::Loaded),
            "busy" => Ok(RebuildClaim::Busy),
            other => Err(StoreError(format!(
                "claim_rebuild: unexpected reply {other:?}"
            ))),
        }
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn unload(&self, event: EventId) -> Result<(), StoreError> {
        let _: String = self.eval(&UNLOAD, event, |_| {}).await?;
        Ok(())
    }

    #[tracing::instrument(level = "debug", skip_all, fields(hold = %req.hold))]
    async fn hold(&self, req: &HoldRequest, now: Millis) -> Result<HoldView, ArbiterError> {
        let key = hold_key(req)?;
        let reply: Reply = self
            .eval(&HOLD, req.hold.event, |inv| {
                self.hold_args(inv, req, key, now)
            })
            .await?;
        one_hold(req.hold, ok_or_arbiter_error(reply)?)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(hold = %hold))]
    async fn get(&self, hold: HoldId) -> Result<Option<HoldView>, StoreError> {
        let reply: Reply = self
            .eval(&READ, hold.event, |inv| {
                inv.arg("hold").arg(hold_field(hold));
            })
            .await?;
        match ok_or_arbiter_error(reply) {
            Ok(payload) => {
                let rec = first(payload);
                if rec.is_empty() {
                    return Ok(None);
                }
                reply::hold_view(hold, &rec).map(Some)
            }
            Err(ArbiterError::Store(e)) => Err(e),
            // The event is gone, and its holds with it.
            Err(_) => Ok(None),
        }
    }

    #[tracing::instrument(level = "debug", skip_all, fields(hold = %hold, order = %order))]
    async fn pin(
        &self,
        hold: HoldId,
        order: OrderId,
        pinned_until: Millis,
        now: Millis,
    ) -> Result<HoldView, ArbiterError> {
        let reply: Reply = self
            .eval(&PIN, hold.event, |inv| {
                inv.arg(hold_field(hold))
                    .arg(order.to_string())
                    .arg(pinned_until.0)
                    .arg(now.0)
                    .arg(self.config.keep_finished);
            })
            .await?;
        one_hold(hold, ok_or_arbiter_error(reply)?)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn retake(&self, req: &Retake, now: Millis) -> Result<HoldView, ArbiterError> {
        let reply: Reply = self
            .eval(&RETAKE, req.hold.event, |inv| {
                inv.arg(hold_field(req.hold))
                    .arg(req.buyer.to_string())
                    .arg(req.order.to_string())
                    .arg(req.pinned_until.0)
                    .arg(now.0)
                    .arg(self.config.keep_finished)
                    .arg(req.replacing.map(|o| o.to_string()).unwrap_or_default())
                    .arg(req.seats.as_slice());
            })
            .await?;
        one_hold(req.hold, ok_or_arbiter_error(reply)?)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(hold = %hold))]
    async fn mark_uncertain(&self, hold: HoldId) -> Result<HoldView, ArbiterError> {
        self.move_hold(hold, HoldMove::PaymentUncertain).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(hold = %hold))]
    async fn mark_sold(&self, hold: HoldId) -> Result<HoldView, ArbiterError> {
        self.move_hold(hold, HoldMove::Commit).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(hold = %hold))]
    async fn release(&self, hold: HoldId) -> Result<HoldView, ArbiterError> {
        self.move_hold(hold, HoldMove::Release).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(hold = %hold))]
    async fn release_held(
        &self,
        hold: HoldId,
        buyer: BuyerId,
    ) -> Result<(HoldView, bool), ArbiterError> {
        let reply: Reply = self
            .eval(&MOVE, hold.event, |inv| {
                inv.arg(hold_field(hold))
                    .arg("release_held")
                    .arg(self.config.keep_finished)
                    .arg(buyer.to_string());
            })
            .await?;
        let payload = ok_or_arbiter_error(reply)?;
        let now = payload.get(1).is_some_and(|flag| flag.as_slice() == b"1");
        Ok((one_hold(hold, payload)?, now))
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn expire_due(
        &self,
        event: EventId,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<Expired>, StoreError> {
        let reports: Reply = self
            .eval(&EXPIRE_DUE, event, |inv| {
                inv.arg(now.0).arg(limit).arg(self.config.keep_finished);
            })
            .await?;
        reports.iter().map(|r| reply::expired(event, r)).collect()
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn mark_seats_sold(
        &self,
        event: EventId,
        seats: &[SoldSeat],
    ) -> Result<u32, ArbiterError> {
        let keep = self.config.keep_finished;
        self.seats(&SEATS_SOLD, event, seats, |inv| {
            inv.arg(keep);
        })
        .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn return_sold_seats(
        &self,
        event: EventId,
        seats: &[SoldSeat],
    ) -> Result<u32, ArbiterError> {
        self.seats(&SEATS_RETURNED, event, seats, |_| {}).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn give_sold_seat(
        &self,
        event: EventId,
        seat: SeatIndex,
        from: BuyerId,
        to: BuyerId,
    ) -> Result<bool, ArbiterError> {
        let reply: Reply = self
            .eval(&SEAT_GIVEN, event, |inv| {
                inv.arg(to.to_string()).arg(seat).arg(from.to_string());
            })
            .await?;
        Ok(count(&first(ok_or_arbiter_error(reply)?))? == 1)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn availability(&self, event: EventId) -> Result<Vec<u8>, ArbiterError> {
        Ok(first(self.read(event, "avail").await?))
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn counts(&self, event: EventId) -> Result<SeatCounts, ArbiterError> {
        let c = self.read(event, "counts").await?;
        let [capacity, held, sold, active_holds] = c.as_slice() else {
            return Err(StoreError("unreadable counts in Redis".into()).into());
        };
        let (capacity, held, sold) = (count(capacity)?, count(held)?, count(sold)?);
        Ok(SeatCounts {
            capacity,
            free: capacity.saturating_sub(held + sold),
            held,
            sold,
            active_holds: count(active_holds)?,
        })
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn sold_seats(&self, event: EventId) -> Result<Vec<SeatIndex>, ArbiterError> {
        Ok(reply::set_bits(&first(self.read(event, "sold").await?)))
    }
}
