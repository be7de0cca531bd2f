//! `RedisIdempotency`: `Idempotency-Key` records shared by every API node.
//!
//! One hash per (scope, key) holding the request's fingerprint, the claim's lease and,
//! once finished, the response. Each step is one script on that one key. Records are
//! forgotten 24 h after their last claim through Redis's own expiry (server time),
//! which bounds memory to a day of writes like the in-memory store.

use std::time::Duration;

use async_trait::async_trait;
use boxoffice_domain::Millis;
use boxoffice_engine::ports::{Begin, IdempotencyStore, StoreError, StoredResponse};

use crate::conn::{RedisConn, store_err};
use crate::keys::{Prefix, idempotency_key};
use crate::scripts::{IDEM_ABANDON, IDEM_BEGIN, IDEM_FINISH};

/// How long a record is kept after its claim.
pub const RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

pub struct RedisIdempotency {
    conn: RedisConn,
    prefix: Prefix,
}

impl RedisIdempotency {
    pub async fn connect(urls: &str, prefix: &str) -> Result<Self, StoreError> {
        Ok(Self::new(
            RedisConn::connect(urls).await?,
            Prefix::new(prefix)?,
        ))
    }

    pub fn new(conn: RedisConn, prefix: Prefix) -> Self {
        RedisIdempotency { conn, prefix }
    }
}

fn answer(reply: Vec<Vec<u8>>) -> Result<Begin, StoreError> {
    let mut parts = reply.into_iter();
    let code = parts.next().unwrap_or_default();
    Ok(match code.as_slice() {
        b"proceed" => Begin::Proceed,
        b"mismatch" => Begin::Mismatch,
        b"in_flight" => Begin::InFlight,
        b"replay" => {
            let status = parts.next().unwrap_or_default();
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
        scope: &str,
        key: &str,
        fingerprint: &[u8; 32],
        now: Millis,
        lease_ms: i64,
    ) -> Result<Begin, StoreError> {
        let reply: Vec<Vec<u8>> = IDEM_BEGIN
            .key(idempotency_key(&self.prefix, scope, key))
            .arg(fingerprint.as_slice())
            .arg(now.0)
            .arg(lease_ms)
            .arg(RETENTION.as_millis() as u64)
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        answer(reply)
    }

    async fn finish(
        &self,
        scope: &str,
        key: &str,
        response: &StoredResponse,
    ) -> Result<(), StoreError> {
        let _: i64 = IDEM_FINISH
            .key(idempotency_key(&self.prefix, scope, key))
            .arg(response.status)
            .arg(response.body.as_slice())
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        Ok(())
    }

    async fn abandon(&self, scope: &str, key: &str) -> Result<(), StoreError> {
        let _: i64 = IDEM_ABANDON
            .key(idempotency_key(&self.prefix, scope, key))
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        Ok(())
    }
}
