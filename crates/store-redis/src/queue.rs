//! `RedisQueue`: the waiting room's line on Redis, shared by every API node.
//!
//! Per event a hash buyer → position (0 while in the pre-opening pool), a small state
//! hash (`len`, `serving`, `sold_out`, `at`, `pool`, `opened`, `placed`, `finished`),
//! the pool as a list (kept for the published verification), a set of finished
//! shoppers, a settings hash, and a sorted set with one entry per admission batch (where
//! it ended and when), so an admission token expires a fixed time after its batch. Buyers are stored as their 16 raw bytes: at 2,000,000 buyers a Redis hash
//! costs roughly 70–90 bytes per entry, so a full line is well under 200 MB.

use std::collections::HashMap;

use async_trait::async_trait;
use boxoffice_domain::{BuyerId, EventId, Millis};
use boxoffice_engine::ports::{Place, QueueState, QueueStore, RestoredLine, StoreError};
use redis::{AsyncCommands, FromRedisValue, Script, ScriptInvocation};

use crate::conn::{RedisConn, store_err};
use crate::keys::{KeyTable, Prefix, check_key, line_claim_key, queue_keys};
use crate::scripts::{
    LEASE_RELEASE, LEASE_RENEW, QUEUE_ADVANCE, QUEUE_FINISH, QUEUE_JOIN, QUEUE_PLACE,
    QUEUE_REMEMBER_CHECK, QUEUE_RESTORE, QUEUE_SEAL,
};

/// State fields in the order `state()` reads them and `queue_advance.lua` replies them.
const FIELDS: [&str; 8] = [
    "len", "serving", "sold_out", "at", "pool", "opened", "placed", "finished",
];
/// Pool members placed per script call, so one call never blocks Redis for long.
const PLACE_CHUNK: usize = 10_000;

pub struct RedisQueue {
    conn: RedisConn,
    prefix: Prefix,
    /// The keys a join names (positions, state, pool) of each event, made once per
    /// event: a join is the whole crowd's request.
    join_keys: KeyTable<3>,
}

/// The keys `lua/queue_join.lua` takes: positions, state, pool.
fn join_keys_of(prefix: &Prefix, event: EventId) -> [String; 3] {
    let [pos, st, pool, ..] = queue_keys(prefix, event);
    [pos, st, pool]
}

fn num(raw: Option<&String>) -> Result<u64, StoreError> {
    match raw {
        None => Ok(0),
        Some(s) => s
            .parse::<f64>()
            .ok()
            .filter(|n| *n >= 0.0)
            .map(|n| n as u64)
            .ok_or_else(|| StoreError(format!("unreadable queue state in Redis: {s:?}"))),
    }
}

/// The `FIELDS` values as a `QueueState`.
fn state(f: &[Option<String>]) -> Result<QueueState, StoreError> {
    let get = |i: usize| f.get(i).and_then(Option::as_ref);
    let flag = |i: usize| get(i).is_some_and(|s| s == "1");
    let at = get(3).map(|s| s.parse::<i64>()).transpose();
    Ok(QueueState {
        queue_length: num(get(0))?,
        serving_up_to: num(get(1))?,
        sold_out: flag(2),
        advanced_at: Millis(at.map_err(StoreError::new)?.unwrap_or(0)),
        pool_size: num(get(4))?,
        opened: flag(5),
        placed: flag(6),
        finished: num(get(7))?,
    })
}

pub(crate) fn place_of(position: u64, new: bool) -> Place {
    Place {
        position: (position != 0).then_some(position),
        new,
    }
}

fn buyer_of(raw: &[u8]) -> Result<BuyerId, StoreError> {
    uuid::Uuid::from_slice(raw)
        .map(BuyerId)
        .map_err(|_| StoreError("unreadable buyer id in the Redis pool".into()))
}

impl RedisQueue {
    pub async fn connect(urls: &str, prefix: &str) -> Result<Self, StoreError> {
        Ok(Self::new(
            RedisConn::connect(urls).await?,
            Prefix::new(prefix)?,
        ))
    }

    pub fn new(conn: RedisConn, prefix: Prefix) -> Self {
        RedisQueue {
            conn,
            join_keys: KeyTable::with(prefix.clone(), join_keys_of),
            prefix,
        }
    }

    async fn eval<T: FromRedisValue>(
        &self,
        script: &Script,
        keys: &[String],
        args: impl FnOnce(&mut ScriptInvocation<'_>),
    ) -> Result<T, StoreError> {
        let mut inv = script.prepare_invoke();
        inv.key(keys);
        args(&mut inv);
        inv.invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)
    }

    /// Whether this is one Redis, where a script may touch keys of several hash tags.
    pub(crate) fn is_single(&self) -> bool {
        matches!(self.conn, RedisConn::Single(_))
    }

    /// The keys `lua/queue_join.lua` takes for `event`: positions, state, pool.
    pub(crate) fn join_keys(&self, event: EventId) -> std::sync::Arc<[String; 3]> {
        self.join_keys.get(event)
    }

    /// Runs `script` on this waiting room's connection (`eval`, for the scripts of
    /// other modules that touch the line).
    pub(crate) async fn eval_line<T: FromRedisValue>(
        &self,
        script: &Script,
        keys: &[String],
        args: impl FnOnce(&mut ScriptInvocation<'_>),
    ) -> Result<T, StoreError> {
        self.eval(script, keys, args).await
    }

    /// The key prefix of this waiting room.
    pub(crate) fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    fn keys(&self, event: EventId) -> [String; 6] {
        queue_keys(&self.prefix, event)
    }

    /// One step of `queue_restore.lua`.
    async fn restore_step(
        &self,
        keys: &[String],
        step: &str,
        args: impl FnOnce(&mut ScriptInvocation<'_>),
    ) -> Result<(), StoreError> {
        let _: i64 = self
            .eval(&QUEUE_RESTORE, keys, |inv| {
                inv.arg(step);
                args(inv);
            })
            .await?;
        Ok(())
    }
}

#[async_trait]
impl QueueStore for RedisQueue {
    async fn join(
        &self,
        event: EventId,
        buyer: BuyerId,
        sale_open: bool,
    ) -> Result<Place, StoreError> {
        let keys = self.join_keys(event);
        let (position, new): (i64, u8) = self
            .eval(&QUEUE_JOIN, &keys[..], |inv| {
                inv.arg(buyer.0.as_bytes().as_slice())
                    .arg(u8::from(sale_open));
            })
            .await?;
        match u64::try_from(position) {
            Ok(position) => Ok(place_of(position, new == 1)),
            Err(_) => Err(StoreError(
                "the line is being brought back; join again in a moment".into(),
            )),
        }
    }

    async fn join_line(&self, event: EventId, buyer: BuyerId) -> Result<Option<Place>, StoreError> {
        let keys = self.join_keys(event);
        let (position, new): (i64, u8) = self
            .eval(&QUEUE_JOIN, &keys[..], |inv| {
                inv.arg(buyer.0.as_bytes().as_slice()).arg(2);
            })
            .await?;
        Ok(u64::try_from(position)
            .ok()
            .map(|position| place_of(position, new == 1)))
    }

    async fn claim_line(
        &self,
        event: EventId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<bool, StoreError> {
        let claimed: Option<String> = redis::cmd("SET")
            .arg(line_claim_key(&self.prefix, event))
            .arg(holder)
            .arg("NX")
            .arg("PX")
            .arg(ttl_ms.max(1))
            .query_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        Ok(claimed.is_some())
    }

    async fn renew_line_claim(
        &self,
        event: EventId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<bool, StoreError> {
        let key = [line_claim_key(&self.prefix, event)];
        let renewed: i64 = (self.eval(&LEASE_RENEW, &key, |inv| {
            inv.arg(holder).arg(ttl_ms.max(1));
        }))
        .await?;
        Ok(renewed == 1)
    }

    async fn release_line_claim(&self, event: EventId, holder: &str) -> Result<(), StoreError> {
        let key = [line_claim_key(&self.prefix, event)];
        (self.eval::<i64>(&LEASE_RELEASE, &key, |inv| {
            inv.arg(holder);
        }))
        .await
        .map(drop)
    }

    async fn restore_line(&self, event: EventId, line: &RestoredLine) -> Result<(), StoreError> {
        let [pos, st, pool, fin, _, adm] = self.keys(event);
        let keys = [pos, st, pool, fin, adm];
        self.restore_step(&keys, "begin", |_| {}).await?;
        for chunk in line.positions.chunks(PLACE_CHUNK) {
            self.restore_step(&keys, "places", |inv| {
                for (buyer, position) in chunk {
                    inv.arg(buyer.0.as_bytes().as_slice()).arg(*position);
                }
            })
            .await?;
        }
        for chunk in line.pool.chunks(PLACE_CHUNK) {
            self.restore_step(&keys, "pool", |inv| {
                for buyer in chunk {
                    inv.arg(buyer.0.as_bytes().as_slice());
                }
            })
            .await?;
        }
        for chunk in line.batches.chunks(PLACE_CHUNK) {
            self.restore_step(&keys, "batches", |inv| {
                for (to, at) in chunk {
                    inv.arg(*to).arg(at.0);
                }
            })
            .await?;
        }
        let len = line.positions.iter().map(|&(_, p)| p).max().unwrap_or(0);
        let (serving, at) = line
            .batches
            .last()
            .map_or((0, 0), |&(to, at)| (to.min(len), at.0));
        self.restore_step(&keys, "done", |inv| {
            inv.arg(len).arg(line.pool.len()).arg(serving).arg(at);
        })
        .await
    }

    async fn place(&self, event: EventId, buyer: BuyerId) -> Result<Option<Place>, StoreError> {
        let [pos, ..] = self.keys(event);
        let position: Option<u64> = self
            .conn
            .clone()
            .hget(pos, buyer.0.as_bytes().as_slice())
            .await
            .map_err(store_err)?;
        Ok(position.map(|p| place_of(p, false)))
    }

    async fn state(&self, event: EventId) -> Result<QueueState, StoreError> {
        let [_, st, ..] = self.keys(event);
        let fields: Vec<Option<String>> = self
            .conn
            .clone()
            .hmget(st, &FIELDS)
            .await
            .map_err(store_err)?;
        state(&fields)
    }

    async fn advance(
        &self,
        event: EventId,
        to: u64,
        now: Millis,
    ) -> Result<QueueState, StoreError> {
        let [_, st, .., adm] = self.keys(event);
        let fields: Vec<Option<String>> = self
            .eval(&QUEUE_ADVANCE, &[st, adm], |inv| {
                inv.arg(to).arg(now.0);
            })
            .await?;
        state(&fields)
    }

    async fn admitted_at(
        &self,
        event: EventId,
        position: u64,
    ) -> Result<Option<Millis>, StoreError> {
        if position == 0 {
            return Ok(None);
        }
        let [.., adm] = self.keys(event);
        // The first batch whose end reached the position admitted it.
        let first: Vec<String> = redis::cmd("ZRANGEBYSCORE")
            .arg(adm)
            .arg(position)
            .arg("+inf")
            .arg("LIMIT")
            .arg(0)
            .arg(1)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        first
            .first()
            .map(|mark| {
                mark.split_once(':')
                    .and_then(|(_, at)| at.parse().ok())
                    .map(Millis)
                    .ok_or_else(|| StoreError(format!("unreadable admission mark {mark:?}")))
            })
            .transpose()
    }

    async fn set_sold_out(&self, event: EventId, sold_out: bool) -> Result<(), StoreError> {
        let [_, st, ..] = self.keys(event);
        self.conn
            .clone()
            .hset::<_, _, _, ()>(st, "sold_out", u8::from(sold_out))
            .await
            .map_err(store_err)
    }

    async fn seal_pool(&self, event: EventId) -> Result<Vec<BuyerId>, StoreError> {
        let [_, st, pool, ..] = self.keys(event);
        let raw: Vec<Vec<u8>> = self.eval(&QUEUE_SEAL, &[st, pool], |_| {}).await?;
        raw.iter().map(|b| buyer_of(b)).collect()
    }

    async fn place_pool(&self, event: EventId, ordered: &[BuyerId]) -> Result<(), StoreError> {
        let [pos, st, pool, ..] = self.keys(event);
        let keys = [pos, st, pool];
        let chunks: Vec<&[BuyerId]> = ordered.chunks(PLACE_CHUNK).collect();
        let last = chunks.len().saturating_sub(1);
        if chunks.is_empty() {
            let _: i64 = self
                .eval(&QUEUE_PLACE, &keys, |inv| {
                    inv.arg(1).arg(1);
                })
                .await?;
        }
        for (i, chunk) in chunks.iter().enumerate() {
            let _: i64 = self
                .eval(&QUEUE_PLACE, &keys, |inv| {
                    inv.arg(i * PLACE_CHUNK + 1).arg(u8::from(i == last));
                    for b in chunk.iter() {
                        inv.arg(b.0.as_bytes().as_slice());
                    }
                })
                .await?;
        }
        Ok(())
    }

    async fn pool_members(
        &self,
        event: EventId,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<BuyerId>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let [_, _, pool, ..] = self.keys(event);
        let (start, stop) = (offset as isize, (offset + limit - 1) as isize);
        let raw: Vec<Vec<u8>> = self
            .conn
            .clone()
            .lrange(pool, start, stop)
            .await
            .map_err(store_err)?;
        raw.iter().map(|b| buyer_of(b)).collect()
    }

    async fn finish(&self, event: EventId, buyer: BuyerId) -> Result<bool, StoreError> {
        let [_, st, _, fin, ..] = self.keys(event);
        let counted: i64 = self
            .eval(&QUEUE_FINISH, &[fin, st], |inv| {
                inv.arg(buyer.0.as_bytes().as_slice());
            })
            .await?;
        Ok(counted == 1)
    }

    async fn set_setting(
        &self,
        event: EventId,
        name: &str,
        value: &str,
        only_if_absent: bool,
    ) -> Result<String, StoreError> {
        let [.., settings, _] = self.keys(event);
        let mut conn = self.conn.clone();
        if !only_if_absent {
            let () = conn.hset(&settings, name, value).await.map_err(store_err)?;
            return Ok(value.to_owned());
        }
        // HSETNX then HGET: whoever set it first, every caller reads the same value.
        let _: bool = conn
            .hset_nx(&settings, name, value)
            .await
            .map_err(store_err)?;
        let stored: Option<String> = conn.hget(&settings, name).await.map_err(store_err)?;
        Ok(stored.unwrap_or_else(|| value.to_owned()))
    }

    async fn settings(&self, event: EventId) -> Result<HashMap<String, String>, StoreError> {
        let [.., settings, _] = self.keys(event);
        self.conn.clone().hgetall(settings).await.map_err(store_err)
    }

    async fn remember_check(
        &self,
        event: EventId,
        digest: &[u8; 32],
        owner: BuyerId,
        until: Millis,
        now: Millis,
    ) -> Result<BuyerId, StoreError> {
        // Redis keeps the time itself: the entry lives as long as it has left now.
        let ttl_ms = (until.0 - now.0).max(1);
        let key = check_key(&self.prefix, event, digest);
        let stored: Vec<u8> = self
            .eval(&QUEUE_REMEMBER_CHECK, &[key], |inv| {
                inv.arg(owner.0.as_bytes().as_slice()).arg(ttl_ms);
            })
            .await?;
        buyer_of(&stored)
    }

    async fn remembered_check(
        &self,
        event: EventId,
        digest: &[u8; 32],
        _now: Millis,
    ) -> Result<Option<BuyerId>, StoreError> {
        let key = check_key(&self.prefix, event, digest);
        let stored: Option<Vec<u8>> = self.conn.clone().get(key).await.map_err(store_err)?;
        stored.as_deref().map(buyer_of).transpose()
    }

    async fn drop_event(&self, event: EventId) -> Result<(), StoreError> {
        let keys = self.keys(event);
        // Every key shares the event's tag, so one DEL works on a cluster too.
        self.conn
            .clone()
            .del::<_, ()>(&keys)
            .await
            .map_err(store_err)
    }
}
