//! `RedisProofs`: the proof-of-possession memory shared by every node of a cluster (the
//! port is `ProofMemory`). Under the event's hash tag, beside its seats and holds:
//!
//! - a proof id is a key `{<prefix>:<event>}:pop:<digest>` set with NX and a lifetime
//!   (the replay window), the digest a SHA-256 of (key thumbprint, id), so no client
//!   text reaches a key name; one script checks it and the event's count, so of two
//!   nodes that see one proof at once exactly one accepts it;
//! - the count `{<prefix>:<event>}:popn` starts with a window and lapses with it: at
//!   most `max_per_window` ids are remembered per window (at most twice that at once);
//!   beyond it the answer is `Full` and nothing is remembered.
//!
//! A hold's key is on the hold's own record (the arbiter's), not here.

use std::time::Duration;

use async_trait::async_trait;
use boxoffice_domain::EventId;
use boxoffice_domain::possession::Thumbprint;
use boxoffice_engine::ports::{FirstUse, ProofMemory, StoreError};
use sha2::{Digest, Sha256};

use crate::conn::{RedisConn, store_err};
use crate::keys::Prefix;
use crate::scripts::PROOF_FIRST_USE;

/// Most proof ids per event and window unless configured otherwise.
pub const MAX_PER_WINDOW: u64 = 1_000_000;

pub struct RedisProofs {
    conn: RedisConn,
    prefix: Prefix,
    max_per_window: u64,
}

impl RedisProofs {
    pub fn new(conn: RedisConn, prefix: Prefix) -> Self {
        RedisProofs {
            conn,
            prefix,
            max_per_window: MAX_PER_WINDOW,
        }
    }

    pub fn with_limit(mut self, max_per_window: u64) -> Self {
        self.max_per_window = max_per_window.max(1);
        self
    }

    fn tag(&self, event: EventId) -> String {
        format!("{{{}:{}}}", self.prefix.as_str(), event)
    }
}

fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

#[async_trait]
impl ProofMemory for RedisProofs {
    async fn first_use(
        &self,
        event: EventId,
        jkt: &Thumbprint,
        jti: &str,
        ttl: Duration,
    ) -> Result<FirstUse, StoreError> {
        let mut h = Sha256::new();
        h.update(jkt.as_str().as_bytes());
        h.update([0]);
        h.update(jti.as_bytes());
        let digest: String = h.finalize()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let tag = self.tag(event);
        let reply: String = PROOF_FIRST_USE
            .key(format!("{tag}:pop:{digest}"))
            .key(format!("{tag}:popn"))
            .arg(millis(ttl))
            .arg(self.max_per_window)
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(store_err)?;
        match reply.as_str() {
            "fresh" => Ok(FirstUse::Fresh),
            "replayed" => Ok(FirstUse::Replayed),
            "full" => Ok(FirstUse::Full),
            other => Err(StoreError(format!("unexpected proof reply {other:?}"))),
        }
    }
}
