//! `MemoryIdempotency`: `Idempotency-Key` records for the embedded deployment.
//!
//! A key is claimed by `begin`, then finished with the response or abandoned. A claim
//! that is never finished lapses after its lease, so a crash mid-request cannot wedge
//! the key. Every record is forgotten 24 h after it was claimed (by the `now` callers
//! pass in), which bounds memory to one day of writes. Keys are client text, so the maps
//! keep std's SipHash rather than the fast hasher.

use std::collections::{HashMap, VecDeque};

use async_trait::async_trait;
use boxoffice_domain::Millis;
use boxoffice_engine::ports::{Begin, IdempotencyStore, StoreError, StoredResponse};
use parking_lot::Mutex;

/// How long a record is kept after its claim.
pub const RETENTION_MS: i64 = 24 * 60 * 60 * 1000;

struct Record {
    fingerprint: [u8; 32],
    claimed_at: Millis,
    state: Claim,
}

enum Claim {
    Running { lease_until: Millis },
    Done(StoredResponse),
}

#[derive(Default)]
struct Inner {
    /// scope → key → record; two levels so lookups borrow `&str` without allocating.
    scopes: HashMap<String, HashMap<String, Record>>,
    /// Claims oldest first, for forgetting records after `RETENTION_MS`.
    claims: VecDeque<(Millis, String, String)>,
}

#[derive(Default)]
pub struct MemoryIdempotency {
    inner: Mutex<Inner>,
}

impl MemoryIdempotency {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Inner {
    fn forget_before(&mut self, now: Millis) {
        while let Some((at, _, _)) = self.claims.front() {
            if at.0.saturating_add(RETENTION_MS) > now.0 {
                break;
            }
            let Some((at, scope, key)) = self.claims.pop_front() else {
                break;
            };
            let Some(keys) = self.scopes.get_mut(&scope) else {
                continue;
            };
            // The key may have been abandoned and claimed again since: keep the newer.
            if keys.get(&key).is_some_and(|r| r.claimed_at == at) {
                keys.remove(&key);
            }
            if keys.is_empty() {
                self.scopes.remove(&scope);
            }
        }
    }

    fn claim(&mut self, scope: &str, key: &str, fingerprint: [u8; 32], now: Millis, lease_ms: i64) {
        let state = Claim::Running {
            lease_until: now.plus_millis(lease_ms),
        };
        let keys = self.scopes.entry(scope.to_owned()).or_default();
        keys.insert(
            key.to_owned(),
            Record {
                fingerprint,
                claimed_at: now,
                state,
            },
        );
        self.claims
            .push_back((now, scope.to_owned(), key.to_owned()));
    }
}

#[async_trait]
impl IdempotencyStore for MemoryIdempotency {
    async fn begin(
        &self,
        scope: &str,
        key: &str,
        fingerprint: &[u8; 32],
        now: Millis,
        lease_ms: i64,
    ) -> Result<Begin, StoreError> {
        let mut inner = self.inner.lock();
        inner.forget_before(now);
        let found = inner.scopes.get(scope).and_then(|keys| keys.get(key));
        let answer = match found {
            None => Begin::Proceed,
            Some(r) if &r.fingerprint != fingerprint => return Ok(Begin::Mismatch),
            Some(Record {
                state: Claim::Done(resp),
                ..
            }) => return Ok(Begin::Replay(resp.clone())),
            Some(Record {
                state: Claim::Running { lease_until },
                ..
            }) if *lease_until > now => return Ok(Begin::InFlight),
            // The first attempt's lease lapsed (it crashed): this retry takes over.
            Some(_) => Begin::Proceed,
        };
        inner.claim(scope, key, *fingerprint, now, lease_ms);
        Ok(answer)
    }

    async fn finish(
        &self,
        scope: &str,
        key: &str,
        response: &StoredResponse,
    ) -> Result<(), StoreError> {
        let mut inner = self.inner.lock();
        // No record means it was forgotten or abandoned: nothing to replay it against.
        if let Some(rec) = inner
            .scopes
            .get_mut(scope)
            .and_then(|keys| keys.get_mut(key))
        {
            rec.state = Claim::Done(response.clone());
        }
        Ok(())
    }

    async fn abandon(&self, scope: &str, key: &str) -> Result<(), StoreError> {
        let mut inner = self.inner.lock();
        if let Some(keys) = inner.scopes.get_mut(scope) {
            if keys
                .get(key)
                .is_some_and(|r| matches!(r.state, Claim::Running { .. }))
            {
                keys.remove(key);
            }
        }
        Ok(())
    }
}
