//! `RedisVelocity`: the velocity counters and buyer clusters shared by every node.
//!
//! A counter is a sorted set of entry times (score and a member unique to the call),
//! trimmed to its window and to its limit, expiring with its window; a cluster is a set
//! of hashed buyers capped by the caller, and each dimension of an event ranks its
//! clusters in a sorted set of at most `MAX_RANKED_CLUSTERS`; a checkout's stash is a
//! plain key with a time to live, taken by a script that reads and deletes it. Every
//! key of an event carries the event's velocity hash tag, so each operation is one
//! command or script in one slot.

use async_trait::async_trait;
use boxoffice_domain::{EventId, Millis};
use boxoffice_engine::ports::{
    Admission, Cluster, Counter, Dimension, Join, Link, Links, MAX_RANKED_CLUSTERS, MAX_STASH_LEN,
    StoreError, VelocityStore,
};

use crate::conn::{RedisConn, store_err};
use crate::keys::{Prefix, velocity_tag};
use crate::scripts::{
    VELOCITY_CHECK, VELOCITY_LINK, VELOCITY_LINK_ALL, VELOCITY_RECORD, VELOCITY_TAKE,
};

pub struct RedisVelocity {
    conn: RedisConn,
    prefix: Prefix,
}

impl RedisVelocity {
    pub fn new(conn: RedisConn, prefix: Prefix) -> Self {
        RedisVelocity { conn, prefix }
    }

    fn counter_key(&self, event: EventId, c: &Counter) -> String {
        format!("{}:c:{}", velocity_tag(&self.prefix, event), c.key)
    }

    fn stash_key(&self, event: EventId, key: &str) -> String {
        format!("{}:p:{key}", velocity_tag(&self.prefix, event))
    }

    fn cluster_keys(&self, event: EventId, dimension: Dimension, key: &str) -> [String; 2] {
        let tag = velocity_tag(&self.prefix, event);
        let d = dimension.as_str();
        [format!("{tag}:s:{d}:{key}"), format!("{tag}:r:{d}")]
    }
}

fn unique() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

#[async_trait]
impl VelocityStore for RedisVelocity {
    async fn check(
        &self,
        event: EventId,
        counters: &[Counter],
        now: Millis,
    ) -> Result<Admission, StoreError> {
        if counters.is_empty() {
            return Ok(Admission::Admitted);
        }
        let mut call = VELOCITY_CHECK.prepare_invoke();
        call.arg(now.0).arg(unique());
        for c in counters {
            call.key(self.counter_key(event, c));
            call.arg(c.limit.max(1))
                .arg(c.window_ms)
                .arg(u8::from(c.add));
        }
        let reply: Vec<i64> = call
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        match reply.as_slice() {
            [-1] => Ok(Admission::Admitted),
            &[index, until] => Ok(Admission::Refused {
                index: usize::try_from(index).map_err(StoreError::new)?,
                until: Millis(until),
            }),
            other => Err(StoreError(format!("velocity check answered {other:?}"))),
        }
    }

    async fn record(
        &self,
        event: EventId,
        counters: &[Counter],
        now: Millis,
    ) -> Result<Vec<u32>, StoreError> {
        if counters.is_empty() {
            return Ok(Vec::new());
        }
        let mut call = VELOCITY_RECORD.prepare_invoke();
        call.arg(now.0).arg(unique());
        for c in counters {
            call.key(self.counter_key(event, c));
            call.arg(c.limit.max(1)).arg(c.window_ms);
        }
        call.invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)
    }

    async fn link(
        &self,
        event: EventId,
        join: &Join<'_>,
        _now: Millis,
    ) -> Result<Link, StoreError> {
        let [set, ranking] = self.cluster_keys(event, join.dimension, join.key);
        let most = join.most.map_or(-1, i64::from);
        let (joined, n): (i64, u32) = VELOCITY_LINK
            .key(set)
            .key(ranking)
            .arg(join.member)
            .arg(most)
            .arg(join.cap)
            .arg(join.ttl_ms.max(1))
            .arg(join.key)
            .arg(MAX_RANKED_CLUSTERS)
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        Ok(if joined == 1 {
            Link::Joined(n)
        } else {
            Link::Refused(n)
        })
    }

    async fn link_all(
        &self,
        event: EventId,
        joins: &[Join<'_>],
        _now: Millis,
    ) -> Result<Links, StoreError> {
        if joins.is_empty() {
            return Ok(Links::Joined(Vec::new()));
        }
        let mut call = VELOCITY_LINK_ALL.prepare_invoke();
        call.arg(MAX_RANKED_CLUSTERS);
        for join in joins {
            let [set, ranking] = self.cluster_keys(event, join.dimension, join.key);
            call.key(set).key(ranking);
            call.arg(join.member)
                .arg(join.most.map_or(-1, i64::from))
                .arg(join.cap)
                .arg(join.ttl_ms.max(1))
                .arg(join.key);
        }
        let reply: Vec<i64> = call
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        let count = |n: i64| u32::try_from(n).map_err(StoreError::new);
        match reply.split_first() {
            Some((1, counts)) if counts.len() == joins.len() => Ok(Links::Joined(
                counts.iter().map(|&n| count(n)).collect::<Result<_, _>>()?,
            )),
            Some((0, &[index, n])) => Ok(Links::Refused {
                index: usize::try_from(index).map_err(StoreError::new)?,
                buyers: count(n)?,
            }),
            _ => Err(StoreError(format!("velocity link answered {reply:?}"))),
        }
    }

    async fn stash(
        &self,
        event: EventId,
        key: &str,
        value: &str,
        ttl_ms: u64,
        _now: Millis,
    ) -> Result<(), StoreError> {
        if value.len() > MAX_STASH_LEN {
            return Err(StoreError::new("a stashed value is too long"));
        }
        redis::cmd("SET")
            .arg(self.stash_key(event, key))
            .arg(value)
            .arg("PX")
            .arg(ttl_ms.max(1))
            .query_async::<()>(&mut self.conn.clone())
            .await
            .map_err(store_err)
    }

    async fn take(
        &self,
        event: EventId,
        key: &str,
        _now: Millis,
    ) -> Result<Option<String>, StoreError> {
        // One script, so of two nodes taking at once one gets the value.
        VELOCITY_TAKE
            .key(self.stash_key(event, key))
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)
    }

    async fn clusters(
        &self,
        event: EventId,
        dimension: Dimension,
        limit: usize,
    ) -> Result<Vec<Cluster>, StoreError> {
        let [_, ranking] = self.cluster_keys(event, dimension, "");
        let ranked: Vec<(String, u32)> = redis::cmd("ZRANGE")
            .arg(ranking)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        let mut out: Vec<Cluster> = ranked
            .into_iter()
            .map(|(key, buyers)| Cluster { key, buyers })
            .collect();
        out.sort_by(|a, b| b.buyers.cmp(&a.buyers).then_with(|| a.key.cmp(&b.key)));
        out.truncate(limit.min(MAX_RANKED_CLUSTERS));
        Ok(out)
    }
}
