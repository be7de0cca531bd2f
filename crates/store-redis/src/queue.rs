//! `RedisQueue`: the waiting room's line on Redis, shared by every API node.
//!
//! Per event a hash buyer → position and a small state hash (`len`, `serving`,
//! `sold_out`, `at`). Buyers are stored as their 16 raw bytes: at 2,000,000 buyers a
//! Redis hash costs roughly 70–90 bytes per entry, so a full line is well under 200 MB.

use async_trait::async_trait;
use boxoffice_domain::{BuyerId, EventId, Millis};
use boxoffice_engine::ports::{Place, QueueState, QueueStore, StoreError};
use redis::{AsyncCommands, FromRedisValue, Script, ScriptInvocation};

use crate::conn::{RedisConn, store_err};
use crate::keys::{Prefix, queue_keys};
use crate::scripts::{QUEUE_ADVANCE, QUEUE_JOIN};

pub struct RedisQueue {
    conn: RedisConn,
    prefix: Prefix,
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

/// `[len, serving, sold_out, at]` as a `QueueState`.
fn state(f: &[Option<String>]) -> Result<QueueState, StoreError> {
    let get = |i: usize| f.get(i).and_then(Option::as_ref);
    let at = get(3).map(|s| s.parse::<i64>()).transpose();
    Ok(QueueState {
        queue_length: num(get(0))?,
        serving_up_to: num(get(1))?,
        sold_out: get(2).is_some_and(|s| s == "1"),
        advanced_at: Millis(at.map_err(StoreError::new)?.unwrap_or(0)),
    })
}

impl RedisQueue {
    pub async fn connect(urls: &str, prefix: &str) -> Result<Self, StoreError> {
        Ok(Self::new(
            RedisConn::connect(urls).await?,
            Prefix::new(prefix)?,
        ))
    }

    pub fn new(conn: RedisConn, prefix: Prefix) -> Self {
        RedisQueue { conn, prefix }
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
}

#[async_trait]
impl QueueStore for RedisQueue {
    async fn join(&self, event: EventId, buyer: BuyerId) -> Result<Place, StoreError> {
        let keys = queue_keys(&self.prefix, event);
        let (position, new): (u64, u8) = self
            .eval(&QUEUE_JOIN, &keys, |inv| {
                inv.arg(buyer.0.as_bytes().as_slice());
            })
            .await?;
        Ok(Place {
            position,
            new: new == 1,
        })
    }

    async fn state(&self, event: EventId) -> Result<QueueState, StoreError> {
        let [_, st] = queue_keys(&self.prefix, event);
        let fields: Vec<Option<String>> = self
            .conn
            .clone()
            .hmget(st, &["len", "serving", "sold_out", "at"])
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
        let [_, st] = queue_keys(&self.prefix, event);
        let fields: Vec<Option<String>> = self
            .eval(&QUEUE_ADVANCE, std::slice::from_ref(&st), |inv| {
                inv.arg(to).arg(now.0);
            })
            .await?;
        state(&fields)
    }

    async fn set_sold_out(&self, event: EventId, sold_out: bool) -> Result<(), StoreError> {
        let [_, st] = queue_keys(&self.prefix, event);
        self.conn
            .clone()
            .hset::<_, _, _, ()>(st, "sold_out", u8::from(sold_out))
            .await
            .map_err(store_err)
    }

    async fn drop_event(&self, event: EventId) -> Result<(), StoreError> {
        let keys = queue_keys(&self.prefix, event);
        // Both keys share the event's tag, so one DEL works on a cluster too.
        self.conn
            .clone()
            .del::<_, ()>(&keys)
            .await
            .map_err(store_err)
    }
}
