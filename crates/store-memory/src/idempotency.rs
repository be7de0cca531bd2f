//! `MemoryIdempotency`: `Idempotency-Key` records for the embedded deployment.
//!
//! A key is claimed by `begin`, then finished with the response or abandoned. A claim
//! that is never finished lapses after its lease, so a crash mid-request cannot wedge
//! the key. Records are found by a keyed digest of (scope, key) (`Keyed`, secret keys
//! of this store): fixed-size, no string allocations on the hold path, and client text
//! reaches the map only through a digest a client cannot make collide. Nothing here
//! outlives the process, so neither the name nor the request's fingerprint need be the
//! SHA-256 that the stores on disk keep: both are `Keyed` digests, a small part of its
//! cost.
//!
//! A record keeps what a retry is answered with and no more: an 8-byte fingerprint (the
//! store's own is 64 bits; one of 32 bytes is folded to 8), the answer's bytes in
//! a boxed slice, or, for a hold taken under its claim by `MemoryClaimedHolds`, the
//! hold's outcome packed in a few dozen bytes (`crate::claimed`) rather than the JSON
//! answer the caller would otherwise keep. A record is kept for every hold of an
//! on-sale, so its size is the store's memory and the fresh memory each hold touches.
//!
//! Memory is bounded twice: every record is forgotten `retention_ms` after its claim
//! (by the `now` callers pass in), and no shard keeps more than its share of
//! `max_records`. At the cap the oldest record that is not running is forgotten to make
//! room. That keeps replays for the most recent requests, which are the ones clients
//! retry; refusing new keys instead would let whoever fills the store stop every
//! buyer's writes for a whole retention period. A running claim is never forgotten (a
//! retry would run alongside it): when a shard holds nothing but running claims the new
//! key is refused (`Begin::Full`) until one finishes.

use std::collections::VecDeque;

use async_trait::async_trait;
use boxoffice_domain::Millis;
use boxoffice_engine::ports::{
    Begin, Claimant, IdempotencyStore, Incarnation, KeptOutcome, Lease, ReplayKey, StoreError,
    StoredResponse,
};
use parking_lot::Mutex;

use crate::hash::{FxHashMap, Keyed};

/// How long a record is kept after its claim, unless configured otherwise.
pub const RETENTION_MS: i64 = 24 * 60 * 60 * 1000;
/// Most records kept, unless configured otherwise. A record with a 300-byte response
/// takes about 430 bytes (map entry, claim queue entry, the response), so about 215 MB;
/// a hold's kept outcome about 200.
pub const MAX_RECORDS: usize = 500_000;

/// The identity of a (scope, key) pair: `MemoryIdempotency::id`.
type Id = [u8; 16];

struct Record {
    fingerprint: u64,
    claimed_at: Millis,
    state: Claim,
}

enum Claim {
    Running {
        lease_until: Millis,
        holder: Incarnation,
    },
    Done {
        status: u16,
        body: Box<[u8]>,
    },
    /// An outcome a claimed step kept (`keep_outcome`).
    Kept(Kept),
}

/// A claimed step's outcome as a record keeps it.
pub(crate) enum Kept {
    /// A hold's view, packed (`crate::claimed::pack`): nearly every kept outcome.
    Hold(Box<[u8]>),
    /// Any other, as it is.
    Other(Box<KeptOutcome>),
}

impl Kept {
    fn outcome(&self) -> KeptOutcome {
        match self {
            Kept::Hold(packed) => KeptOutcome::Hold(Ok(crate::claimed::unpack(packed))),
            Kept::Other(outcome) => (**outcome).clone(),
        }
    }
}

/// A fingerprint given in 32 bytes as the record keeps it, in 8: this store's own carry
/// 64 bits, another's (a SHA-256) 256, folded word by word through an invertible mix,
/// so that two fingerprints that differ in one word still differ once folded, and
/// unrelated ones meet by a 1-in-2^64 chance.
fn folded(fingerprint: &[u8; 32]) -> u64 {
    fingerprint
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .fold(0, |h, word| {
            h.rotate_left(23).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ word
        })
}

impl Record {
    /// Only this process writes here, so a claim of another incarnation is a previous
    /// life's: dead.
    fn running(&self, now: Millis, me: Incarnation) -> bool {
        matches!(self.state, Claim::Running { lease_until, holder } if lease_until > now && holder == me)
    }

    /// Still running under the claim that took `lease`.
    fn holds(&self, lease: Lease) -> bool {
        matches!(self.state, Claim::Running { lease_until, holder } if lease_until == lease.until && holder == lease.holder)
    }
}

struct Inner {
    /// By a keyed digest, which a client cannot steer: the fast hasher is enough.
    records: FxHashMap<Id, Record>,
    /// Claims oldest first, for forgetting by age and at the cap. An entry whose record
    /// was claimed again since (or abandoned) is stale and skipped.
    claims: VecDeque<(Millis, Id)>,
}

/// Independent shards, so that when one shard's map grows (and copies itself) only the
/// requests of that shard wait, not every write in the process.
const SHARDS: usize = 16;

pub struct MemoryIdempotency {
    shards: [Mutex<Inner>; SHARDS],
    per_shard: usize,
    retention_ms: i64,
    /// Names records and fingerprints requests.
    digests: Keyed,
    /// This store's tag on the names it gives keys (`ReplayKey::named_by`).
    tag: u64,
}

impl Default for MemoryIdempotency {
    fn default() -> Self {
        Self::with_limits(MAX_RECORDS, RETENTION_MS)
    }
}

impl MemoryIdempotency {
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `max_records` (rounded down to a multiple of 16, at least 16), each for
    /// at most `retention_ms` after its claim.
    pub fn with_limits(max_records: usize, retention_ms: i64) -> Self {
        let empty = || Inner {
            records: FxHashMap::default(),
            claims: VecDeque::new(),
        };
        MemoryIdempotency {
            shards: std::array::from_fn(|_| Mutex::new(empty())),
            per_shard: (max_records / SHARDS).max(1),
            retention_ms,
            digests: Keyed::random(),
            tag: rand::random(),
        }
    }

    /// The record's name: the scope's length goes first, so that scope "a:b" + key
    /// "c" and scope "a" + key "b:c" cannot meet.
    fn id(&self, key: &ReplayKey) -> Id {
        key.named_by(self.tag, |key| {
            let scope = key.scope().as_bytes();
            let len = (scope.len() as u64).to_le_bytes();
            self.digests.digest(&[&len, scope, key.key().as_bytes()])
        })
    }

    fn shard(&self, id: &Id) -> &Mutex<Inner> {
        &self.shards[id[0] as usize % SHARDS]
    }

    /// Keeps `kept` as the answer of `key`'s claim that took `lease`, which is running:
    /// a retry is then refused with `Begin::Kept`. False, keeping nothing, when that
    /// claim no longer holds the key (forgotten at the cap, abandoned, or taken over by
    /// a retry): the caller keeps its answer itself, as `finish` would keep it.
    pub(crate) fn keep_outcome(&self, key: &ReplayKey, lease: Lease, kept: Kept) -> bool {
        let id = &self.id(key);
        let mut inner = self.shard(id).lock();
        match inner.records.get_mut(id) {
            Some(rec) if rec.holds(lease) => {
                rec.state = Claim::Kept(kept);
                true
            }
            _ => false,
        }
    }
}

impl Inner {
    /// Whether the claims entry (at, id) still names its record's current claim.
    fn current(&self, at: Millis, id: &Id) -> bool {
        self.records.get(id).is_some_and(|r| r.claimed_at == at)
    }

    fn forget_before(&mut self, cutoff: Millis, limit: usize) -> usize {
        let mut forgotten = 0;
        while let Some((at, id)) = self.claims.front().copied() {
            if at >= cutoff || forgotten >= limit {
                break;
            }
            self.claims.pop_front();
            if self.current(at, &id) {
                self.records.remove(&id);
                forgotten += 1;
            }
        }
        forgotten
    }

    /// Forgets the oldest record that is not running; false if every one is.
    fn evict_oldest(&mut self, now: Millis, me: Incarnation) -> bool {
        let mut i = 0;
        while let Some(&(at, id)) = self.claims.get(i) {
            if !self.current(at, &id) {
                self.claims.remove(i);
                continue;
            }
            if self.records[&id].running(now, me) {
                i += 1;
                continue;
            }
            self.records.remove(&id);
            self.claims.remove(i);
            return true;
        }
        false
    }

    fn claim(&mut self, id: Id, fingerprint: u64, now: Millis, claimant: &Claimant) {
        let lease = claimant.lease_from(now);
        let state = Claim::Running {
            lease_until: lease.until,
            holder: lease.holder,
        };
        let record = Record {
            fingerprint,
            claimed_at: now,
            state,
        };
        self.records.insert(id, record);
        self.claims.push_back((now, id));
        // Takeovers and abandons leave stale entries behind; keep the queue in step.
        if self.claims.len() > 2 * self.records.len() + 64 {
            let records = &self.records;
            self.claims
                .retain(|(at, id)| records.get(id).is_some_and(|r| r.claimed_at == *at));
        }
    }
}

#[async_trait]
impl IdempotencyStore for MemoryIdempotency {
    /// A 64-bit keyed digest of the parts, in the first 8 bytes (the rest are zero): a
    /// fingerprint is only compared with the retries of its own key, of its own caller,
    /// who without the store's keys cannot make two requests meet.
    fn fingerprint(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut fingerprint = [0u8; 32];
        fingerprint[..8].copy_from_slice(&self.digests.digest64(parts));
        fingerprint
    }

    async fn begin(
        &self,
        key: &ReplayKey,
        fingerprint: &[u8; 32],
        now: Millis,
        claimant: &Claimant,
    ) -> Result<Begin, StoreError> {
        let id = self.id(key);
        let mut inner = self.shard(&id).lock();
        // A record claimed `retention_ms` ago or earlier is gone.
        inner.forget_before(now.plus_millis(1 - self.retention_ms), usize::MAX);
        match inner.records.get(&id) {
            None => {
                if inner.records.len() >= self.per_shard && !inner.evict_oldest(now, claimant.node)
                {
                    return Ok(Begin::Full);
                }
            }
            Some(r) if r.fingerprint != folded(fingerprint) => return Ok(Begin::Mismatch),
            Some(Record {
                state: Claim::Done { status, body },
                ..
            }) => {
                let stored = StoredResponse {
                    status: *status,
                    body: body.to_vec(),
                };
                return Ok(Begin::Replay(stored));
            }
            Some(Record {
                state: Claim::Kept(kept),
                ..
            }) => return Ok(Begin::Kept(Box::new(kept.outcome()))),
            Some(r) if r.running(now, claimant.node) => return Ok(Begin::InFlight),
            // The first attempt's lease lapsed or its process died: this retry takes over.
            Some(_) => {}
        }
        inner.claim(id, folded(fingerprint), now, claimant);
        Ok(Begin::Proceed)
    }

    async fn finish(
        &self,
        key: &ReplayKey,
        lease: Lease,
        response: &StoredResponse,
    ) -> Result<(), StoreError> {
        let id = &self.id(key);
        let mut inner = self.shard(id).lock();
        // No record of this claim means it was forgotten, abandoned or taken over:
        // nothing to replay it against, or another request's answer to come.
        if let Some(rec) = inner.records.get_mut(id).filter(|r| r.holds(lease)) {
            rec.state = Claim::Done {
                status: response.status,
                body: response.body.as_slice().into(),
            };
        }
        Ok(())
    }

    async fn abandon(&self, key: &ReplayKey, lease: Lease) -> Result<(), StoreError> {
        let id = &self.id(key);
        let mut inner = self.shard(id).lock();
        if inner.records.get(id).is_some_and(|r| r.holds(lease)) {
            inner.records.remove(id);
        }
        Ok(())
    }

    async fn heartbeat(&self, _node: Incarnation, _now: Millis) -> Result<(), StoreError> {
        Ok(())
    }

    async fn prune(&self, before: Millis, limit: u32) -> Result<u64, StoreError> {
        let mut left = limit as usize;
        for shard in &self.shards {
            left -= shard.lock().forget_before(before, left);
        }
        Ok((limit as usize - left) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record is kept for every hold of an on-sale: its map entry stays small.
    #[test]
    fn a_record_takes_64_bytes_of_its_map() {
        assert_eq!(std::mem::size_of::<(Id, Record)>(), 64);
    }

    /// A claimed step's outcome is kept only under the claim that took the step's
    /// lease: once a retry took the key over, the first step's late outcome keeps
    /// nothing, and the key waits for the retry's.
    #[tokio::test]
    async fn an_outcome_is_kept_only_under_the_lease_of_the_claim_that_ran_the_step() {
        let store = MemoryIdempotency::new();
        let me = Claimant {
            node: Incarnation::random(),
            lease_ms: 1_000,
            dead_after_ms: 1_000,
        };
        let (key, fp, t0) = (ReplayKey::new("buyer:1", "k"), [1u8; 32], Millis(5_000));
        assert_eq!(store.begin(&key, &fp, t0, &me).await, Ok(Begin::Proceed));
        let lapsed = t0.plus_millis(1_001);
        assert_eq!(
            store.begin(&key, &fp, lapsed, &me).await,
            Ok(Begin::Proceed)
        );
        let late = Kept::Hold(vec![1, 2, 3].into_boxed_slice());
        assert!(!store.keep_outcome(&key, me.lease_from(t0), late));
        let soon = lapsed.plus_millis(1);
        assert_eq!(store.begin(&key, &fp, soon, &me).await, Ok(Begin::InFlight));
        let own = Kept::Hold(vec![4, 5, 6].into_boxed_slice());
        assert!(store.keep_outcome(&key, me.lease_from(lapsed), own));
    }

    #[test]
    fn fingerprints_that_differ_in_any_word_differ_once_folded() {
        let base = [3u8; 32];
        let mut seen = vec![folded(&base)];
        for byte in [0, 7, 8, 15, 16, 31] {
            let mut other = base;
            other[byte] ^= 1;
            seen.push(folded(&other));
        }
        seen.push(folded(&[4; 32]));
        let mut unique = seen.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), seen.len(), "{seen:?}");
    }
}
