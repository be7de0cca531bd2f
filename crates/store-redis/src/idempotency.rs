//! `RedisIdempotency`: `Idempotency-Key` records shared by every API node.
//!
//! One hash per (scope, key) holding the request's fingerprint, the claim's lease and
//! holder and, once finished, the response. Records are spread over `IDEM_SHARDS`
//! shards (see `keys`); each shard keeps an index of its records by claim time and the
//! heartbeats of the nodes, in the same slot, so every step is one script on one shard.
//!
//! Memory is bounded twice. Redis forgets a record `retention` after its last claim
//! (server time), and no shard keeps more than its share of `max_records`: at the cap
//! the oldest record that is not running is forgotten to make room, for the same
//! reasons as in the in-process store (recent requests are the ones retried; refusing
//! new keys would let whoever fills the store stop everyone's writes). A shard holding
//! only running claims answers `Full`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use boxoffice_domain::Millis;
use boxoffice_engine::ports::{
    Begin, Claimant, IdempotencyStore, Incarnation, Lease, ReplayClaim, ReplayKey, StoreError,
    StoredResponse,
};
use futures::future::try_join_all;
use redis::ScriptInvocation;

use crate::claimed::kept_outcome;
use crate::conn::{RedisConn, store_err};
use crate::keys::{IDEM_SHARDS, IdemRecord, IdemShard, Prefix, idem_shards, idempotency_record};
use crate::scripts::{IDEM_ABANDON, IDEM_BEGIN, IDEM_FINISH, IDEM_PRUNE};

/// How long a record is kept after its claim, unless configured otherwise.
pub const RETENTION: Duration = Duration::from_secs(24 * 60 * 60);
/// Most records kept, unless configured otherwise.
pub const MAX_RECORDS: u64 = 500_000;

pub struct RedisIdempotency {
    conn: RedisConn,
    /// Each shard's shared key names, made once.
    shards: Arc<[IdemShard]>,
    per_shard: u64,
    retention: Duration,
}

impl RedisIdempotency {
    pub async fn connect(urls: &str, prefix: &str) -> Result<Self, StoreError> {
        Ok(Self::new(
            RedisConn::connect(urls).await?,
            Prefix::new(prefix)?,
        ))
    }

    pub fn new(conn: RedisConn, prefix: Prefix) -> Self {
        RedisIdempotency {
            conn,
            shards: idem_shards(&prefix),
            per_shard: MAX_RECORDS / u64::from(IDEM_SHARDS),
            retention: RETENTION,
        }
    }

    /// At most `max_records` (rounded down to a multiple of 16, at least 16), each
    /// kept at most `retention` after its claim.
    pub fn with_limits(mut self, max_records: u64, retention: Duration) -> Self {
        self.per_shard = (max_records / u64::from(IDEM_SHARDS)).max(1);
        self.retention = retention;
        self
    }
}

impl RedisIdempotency {
    fn record(&self, key: &ReplayKey) -> (IdemRecord, &IdemShard) {
        let r = idempotency_record(&self.shards, key);
        let shard = &self.shards[usize::from(r.shard)];
        (r, shard)
    }

    /// The keys (record, shard index, shard heartbeats) and arguments of
    /// `lua/idem_claim.lua` for `claim`, added to `inv`.
    pub(crate) fn claim(&self, inv: &mut ScriptInvocation<'_>, claim: &ReplayClaim<'_>) {
        let (r, shard) = self.record(claim.key);
        inv.key(&r.record)
            .key(&shard.index)
            .key(&shard.nodes)
            .arg(&r.id)
            .arg(claim.fingerprint.as_slice())
            .arg(claim.now.0)
            .arg(claim.claimant.lease_ms)
            .arg(self.retention.as_millis() as u64)
            .arg(claim.claimant.node.to_hex())
            .arg(claim.claimant.dead_after_ms)
            .arg(self.per_shard)
            .arg(&shard.record_prefix);
    }
}

/// `idem_claim.lua`'s reply as `begin` answers it.
pub(crate) fn answer(reply: Vec<Vec<u8>>) -> Result<Begin, StoreError> {
    let mut parts = reply.into_iter();
    let code = parts.next().unwrap_or_default();
    Ok(match code.as_slice() {
        b"proceed" => Begin::Proceed,
        b"mismatch" => Begin::Mismatch,
        b"in_flight" => Begin::InFlight,
        b"full" => Begin::Full,
        b"replay" => {
            let status = parts.next().unwrap_or_default();
            // A claimed step's outcome kept by its own script (`keep_outcome.lua`).
            if matches!(status.as_slice(), b"hold" | b"release" | b"joined") {
                let body = parts.next().unwrap_or_default();
                return Ok(Begin::Kept(Box::new(kept_outcome(&status, &body)?)));
            }
            let status = std::str::from_utf8(&status)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| StoreError("unreadable stored status in Redis".into()))?;
            Begin::Replay(StoredResponse {
                status,
                body: parts.next().unwrap_or_default(),
            })
        }
        other => {
            let other = String::from_utf8_lossy(other);
            return Err(StoreError(format!(
                "unexpected idempotency reply {other:?}"
            )));
        }
    })
}

#[async_trait]
impl IdempotencyStore for RedisIdempotency {
    async fn begin(
        &self,
        key: &ReplayKey,
        fingerprint: &[u8; 32],
        now: Millis,
        claimant: &Claimant,
    ) -> Result<Begin, StoreError> {
        let claim = ReplayClaim {
            key,
            fingerprint,
            now,
            claimant,
        };
        let mut inv = IDEM_BEGIN.prepare_invoke();
        self.claim(&mut inv, &claim);
        let reply: Vec<Vec<u8>> = inv
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        answer(reply)
    }

    async fn finish(
        &self,
        key: &ReplayKey,
        lease: Lease,
        response: &StoredResponse,
    ) -> Result<(), StoreError> {
        let (r, _) = self.record(key);
        let _: i64 = IDEM_FINISH
            .key(&r.record)
            .arg(response.status)
            .arg(response.body.as_slice())
            .arg(lease.until.0)
            .arg(lease.holder.to_hex())
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        Ok(())
    }

    async fn abandon(&self, key: &ReplayKey, lease: Lease) -> Result<(), StoreError> {
        let (r, shard) = self.record(key);
        let _: i64 = IDEM_ABANDON
            .key(&r.record)
            .key(&shard.index)
            .arg(&r.id)
            .arg(lease.until.0)
            .arg(lease.holder.to_hex())
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        Ok(())
    }

    /// Every shard keeps the beat, so the begin script reads it from its own slot.
    async fn heartbeat(&self, node: Incarnation, now: Millis) -> Result<(), StoreError> {
        let node = node.to_hex();
        try_join_all(self.shards.iter().map(|shard| {
            let (nodes, node, mut conn) = (&shard.nodes, node.clone(), self.conn.clone());
            async move {
                redis::cmd("HSET")
                    .arg(nodes)
                    .arg(node)
                    .arg(now.0)
                    .query_async::<i64>(&mut conn)
                    .await
                    .map_err(store_err)
            }
        }))
        .await?;
        Ok(())
    }

    async fn prune(&self, before: Millis, limit: u32) -> Result<u64, StoreError> {
        let mut forgotten = 0u64;
        for s in self.shards.iter() {
            let left = u64::from(limit) - forgotten;
            if left == 0 {
                break;
            }
            let n: u64 = IDEM_PRUNE
                .key(&s.index)
                .key(&s.nodes)
                .arg(before.0)
                .arg(left)
                .arg(&s.record_prefix)
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(store_err)?;
            forgotten += n;
        }
        Ok(forgotten)
    }
}
