//! `MemoryIdempotency`: `Idempotency-Key` records for the embedded deployment.
//!
//! A key is claimed by `begin`, then finished with the response or abandoned. A claim
//! that is never finished lapses after its lease, so a crash mid-request cannot wedge
//! the key. Every record is forgotten 24 h after it was claimed (by the `now` callers
//! pass in), which bounds memory to one day of writes. Records are found by a SHA-256
//! digest of (scope, key): fixed-size, no string allocations on the hold path, and
//! client text reaches the map only through a collision-resistant hash.

use std::collections::{HashMap, VecDeque};

use async_trait::async_trait;
use boxoffice_domain::Millis;
use boxoffice_engine::ports::{Begin, IdempotencyStore, StoreError, StoredResponse};
use parking_lot::Mutex;
use sha2::{Digest, Sha256};

/// How long a record is kept after its claim.
pub const RETENTION_MS: i64 = 24 * 60 * 60 * 1000;

/// The identity of a (scope, key) pair.
type Id = [u8; 16];

fn id_of(scope: &str, key: &str) -> Id {
    let mut h = Sha256::new();
    h.update((scope.len() as u64).to_le_bytes());
    h.update(scope.as_bytes());
    h.update(key.as_bytes());
    let digest = h.finalize();
    let mut id = [0; 16];
    id.copy_from_slice(&digest[..16]);
    id
}

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
    records: HashMap<Id, Record>,
    /// Claims oldest first, for forgetting records after `RETENTION_MS`.
    claims: VecDeque<(Millis, Id)>,
}

/// Independent shards, so that when one shard's map grows (and copies itself) only the
/// requests of that shard wait, not every write in the process.
const SHARDS: usize = 16;

pub struct MemoryIdempotency {
    shards: [Mutex<Inner>; SHARDS],
}

impl Default for MemoryIdempotency {
    fn default() -> Self {
        MemoryIdempotency {
            shards: std::array::from_fn(|_| Mutex::default()),
        }
    }
}

impl MemoryIdempotency {
    pub fn new() -> Self {
        Self::default()
    }

    fn shard(&self, id: &Id) -> &Mutex<Inner> {
        &self.shards[id[0] as usize % SHARDS]
    }
}

impl Inner {
    fn forget_before(&mut self, now: Millis) {
        while let Some((at, id)) = self.claims.front().copied() {
            if at.0.saturating_add(RETENTION_MS) > now.0 {
                break;
            }
            self.claims.pop_front();
            // The key may have been abandoned and claimed again since: keep the newer.
            if self.records.get(&id).is_some_and(|r| r.claimed_at == at) {
                self.records.remove(&id);
            }
        }
    }

    fn claim(&mut self, id: Id, fingerprint: [u8; 32], now: Millis, lease_ms: i64) {
        let state = Claim::Running {
            lease_until: now.plus_millis(lease_ms),
        };
        self.records.insert(
            id,
            Record {
                fingerprint,
                claimed_at: now,
                state,
            },
        );
        self.claims.push_back((now, id));
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
        let id = id_of(scope, key);
        let mut inner = self.shard(&id).lock();
        inner.forget_before(now);
        let found = inner.records.get(&id);
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
            }) if lease_until > &now => return Ok(Begin::InFlight),
            // The first attempt's lease lapsed (it crashed): this retry takes over.
            Some(_) => Begin::Proceed,
        };
        inner.claim(id, *fingerprint, now, lease_ms);
        Ok(answer)
    }

    async fn finish(
        &self,
        scope: &str,
        key: &str,
        response: &StoredResponse,
    ) -> Result<(), StoreError> {
        let id = id_of(scope, key);
        let mut inner = self.shard(&id).lock();
        // No record means it was forgotten or abandoned: nothing to replay it against.
        if let Some(rec) = inner.records.get_mut(&id) {
            rec.state = Claim::Done(response.clone());
        }
        Ok(())
    }

    async fn abandon(&self, scope: &str, key: &str) -> Result<(), StoreError> {
        let id = id_of(scope, key);
        let mut inner = self.shard(&id).lock();
        if inner
            .records
            .get(&id)
            .is_some_and(|r| matches!(r.state, Claim::Running { .. }))
        {
            inner.records.remove(&id);
        }
        Ok(())
    }
}
