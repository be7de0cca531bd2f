use async_trait::async_trait;
use boxoffice_domain::{BuyerId, Millis, OrderEvent, OrderId};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::sync::{Arc, OnceLock};

use super::{LedgerError, Order, StoreError};
use crate::OrderView;

/// One claim of `IdempotencyStore::begin_many`: `begin`'s key, fingerprint and time. Each
/// claim keeps its own time: the lease it takes ends its lease's length after it, and
/// its request finishes under that lease (`Claimant::lease_from`).
#[derive(Clone, Debug)]
pub struct KeyClaim {
    pub key: ReplayKey,
    pub fingerprint: [u8; 32],
    pub now: Millis,
}

/// One answer of `IdempotencyStore::finish_many`: `finish`'s arguments.
#[derive(Clone, Debug)]
pub struct Answer {
    pub key: ReplayKey,
    pub lease: Lease,
    pub response: StoredResponse,
}

/// A finished response kept for replays.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Begin {
    /// First time: the caller runs the request and then calls `finish` (or `abandon`).
    Proceed,
    /// Done before: send this again.
    Replay(StoredResponse),
    /// Done before by a claimed step whose store kept the step's own outcome as the
    /// key's answer (`Claimed::Kept`): the caller answers it as it answered it the first
    /// time. Only a store that keeps outcomes itself (`ClaimedHolds`) answers this.
    Kept(Box<super::KeptOutcome>),
    /// The same key was used for a different request.
    Mismatch,
    /// The first request with this key is still running.
    InFlight,
    /// A store with a count cap is full of requests still running: nothing could be
    /// forgotten to make room (finished records go first; running claims never do).
    Full,
}

/// A ledger write whose answer is known before it runs, which a replay store kept in the
/// ledger's own database can take with its key's claim and keep as the key's answer in
/// the same write (`IdempotencyStore::write_claimed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnownWrite {
    /// No ledger row: the kept answer is all the request leaves (an operator's grant of
    /// a buyer token), so claiming and keeping it are the one write.
    AnswerOnly,
    /// A buyer signed up at `at`, as `Ledger::create_buyer` records one.
    SignUp { buyer: BuyerId, at: Millis },
}

/// Renders the answer a route sends for an order a move left it in (`None`: no answer
/// to keep, the caller keeps its own), so a store can keep it in the move's own write
/// (`IdempotencyStore::apply_kept`). The route's rendering stays the route's: the store
/// only calls it.
pub type RenderKept = dyn Fn(&OrderView) -> Option<StoredResponse> + Send + Sync;

/// An order's move whose answer a replay store kept in the same write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptMove {
    /// The order as the move left it.
    pub order: Order,
    /// The answer kept as the key's, as `RenderKept` rendered it; `None` when it
    /// rendered none (the move alone was written).
    pub kept: Option<StoredResponse>,
}

/// One life of a process: a random id drawn at every start. A claim records the
/// incarnation that took it, so that a retry can tell a request still running from
/// one whose process died (kill -9, crash, restart).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Incarnation(pub [u8; 16]);

impl Incarnation {
    pub fn random() -> Incarnation {
        Incarnation(*uuid::Uuid::new_v4().as_bytes())
    }

    pub fn to_hex(self) -> String {
        format!("{:032x}", u128::from_be_bytes(self.0))
    }
}

impl std::fmt::Display for Incarnation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// Who claims a key and on what terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claimant {
    /// This process.
    pub node: Incarnation,
    /// How long an unfinished claim of a live holder blocks retries.
    pub lease_ms: i64,
    /// Stores shared by several nodes: a holder whose last heartbeat is older than this
    /// is dead, and its claims are taken over at once.
    pub dead_after_ms: i64,
}

impl Claimant {
    /// The lease a claim granted to this claimant at `now` holds (`Lease`).
    pub fn lease_from(&self, now: Millis) -> Lease {
        Lease {
            holder: self.node,
            until: now.plus_millis(self.lease_ms),
        }
    }
}

/// A granted claim as its store keeps it: the process that took it and the end of its
/// lease. `finish` and `abandon` are given the lease their request's claim took and act
/// only while that claim holds the key: once a retry has taken the key over (its
/// holder dead, or its lease lapsed), a request still running on the old claim can
/// neither overwrite the answer the retry will keep nor free the key under it. Two
/// claims of one key never share a lease: the same process takes a key over only once
/// the lease it holds has lapsed, so the new one ends later.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lease {
    pub holder: Incarnation,
    pub until: Millis,
}

/// An Idempotency-Key in its scope (`scope` separates callers: a buyer, the operator),
/// with the name of its record in stores that find records by a fixed-size id (Redis):
/// the first 16 bytes of SHA-256 of the scope's length, the scope and the key. The
/// length goes first so that scope "a:b" + key "c" and scope "a" + key "b:c" cannot
/// meet. Taken at most once per request, and only when a store asks for it: a store
/// that names records its own way (in memory) never pays for the digest.
#[derive(Clone, Debug)]
pub struct ReplayKey {
    scope: String,
    key: String,
    id: OnceLock<[u8; 16]>,
    /// A store's own name for the key and the tag of the store that made it
    /// (`named_by`).
    own: OnceLock<(u64, [u8; 16])>,
}

impl PartialEq for ReplayKey {
    fn eq(&self, other: &Self) -> bool {
        (&self.scope, &self.key) == (&other.scope, &other.key)
    }
}

impl Eq for ReplayKey {}

impl ReplayKey {
    pub fn new(scope: impl Into<String>, key: impl Into<String>) -> ReplayKey {
        ReplayKey {
            scope: scope.into(),
            key: key.into(),
            id: OnceLock::new(),
            own: OnceLock::new(),
        }
    }

    pub fn scope(&self) -> &str {
        &self.scope
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// The record's fixed-size name: client text reaches a store's map or key names
    /// only through this collision-resistant digest.
    pub fn id(&self) -> &[u8; 16] {
        self.id.get_or_init(|| {
            let mut h = Sha256::new();
            h.update((self.scope.len() as u64).to_le_bytes());
            h.update(self.scope.as_bytes());
            h.update(self.key.as_bytes());
            let digest = h.finalize();
            let mut id = [0; 16];
            id.copy_from_slice(&digest[..16]);
            id
        })
    }

    /// The name a store that names records its own way gives this key, made by `name`
    /// once per key and store: a request's `begin` and `finish` ask for it in turn. A
    /// store passes a `tag` of its own (drawn at random), so a name made by another
    /// store is never taken for its own.
    pub fn named_by(&self, tag: u64, name: impl FnOnce(&ReplayKey) -> [u8; 16]) -> [u8; 16] {
        if let Some(&(by, id)) = self.own.get()
            && by == tag
        {
            return id;
        }
        let id = name(self);
        // Kept by the first store to ask only.
        let _ = self.own.set((tag, id));
        id
    }
}

/// What identifies a request for its replays, by default: SHA-256 of `parts`, one
/// after the other (method, NUL, path, NUL, body), which a retry must send again.
pub fn fingerprint(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in parts {
        h.update(part);
    }
    h.finalize().into()
}

/// Remembers `Idempotency-Key`s, each in its scope (`ReplayKey`).
///
/// A running claim answers `InFlight` while its lease lasts and its holder lives. The
/// caller's own incarnation lives. Stores that only one process opens at a time (in
/// memory, the SQLite file) hold every other incarnation dead: it is an earlier life of
/// this process. Stores shared by several nodes (PostgreSQL, Redis) hold a node alive
/// while its `heartbeat` is fresher than `dead_after_ms`. Claims of dead holders, and
/// claims whose lease lapsed, are taken over by the retry.
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// The fingerprint `begin` is given for the request made of `parts` (method, NUL,
    /// path, NUL, body): SHA-256 of them (`fingerprint`), as kept in stores that outlive
    /// the process. A store whose records die with the process may take a cheaper
    /// digest of its own, as long as different requests cannot be made to meet.
    fn fingerprint(&self, parts: &[&[u8]]) -> [u8; 32] {
        fingerprint(parts)
    }

    async fn begin(
        &self,
        key: &ReplayKey,
        fingerprint: &[u8; 32],
        now: Millis,
        claimant: &Claimant,
    ) -> Result<Begin, StoreError>;
    /// Keeps `response` as the key's answer, while the claim that took `lease` still
    /// holds the key; otherwise (finished, forgotten, or taken over by a retry) it
    /// changes nothing, and a store may say so as an error.
    async fn finish(
        &self,
        key: &ReplayKey,
        lease: Lease,
        response: &StoredResponse,
    ) -> Result<(), StoreError>;
    /// Forgets an unfinished claim so a retry runs again (used when the request failed
    /// in a way that changed nothing, e.g. the store was unavailable), while the claim
    /// that took `lease` still holds the key; otherwise it changes nothing.
    async fn abandon(&self, key: &ReplayKey, lease: Lease) -> Result<(), StoreError>;
    /// Records that `node` is alive at `now`. Only stores shared by several nodes keep
    /// it; the others need no heartbeat to know who is alive.
    async fn heartbeat(&self, node: Incarnation, now: Millis) -> Result<(), StoreError>;
    /// Forgets at most `limit` records claimed before `before` (their retention is
    /// over), and heartbeats older than that; returns how many records went.
    async fn prune(&self, before: Millis, limit: u32) -> Result<u64, StoreError>;

    /// `begin` for each of `claims` (each key with its request's fingerprint and time),
    /// answered in their order, as if begun one after the other: a key that comes twice
    /// is claimed by its first and told what a second `begin` would be. A store kept in
    /// the ledger's database claims them in one write, set-based where it can; the
    /// default begins them in turn. Each claim has its own answer: one that failed
    /// claimed nothing, and says so alone.
    async fn begin_many(
        &self,
        claims: &[KeyClaim],
        claimant: &Claimant,
    ) -> Vec<Result<Begin, StoreError>> {
        let mut begun = Vec::with_capacity(claims.len());
        for c in claims {
            begun.push(self.begin(&c.key, &c.fingerprint, c.now, claimant).await);
        }
        begun
    }

    /// `finish` for each of `answers`, in one write where the store can; each with its
    /// own outcome (a key with no claim of its lease to finish is refused alone).
    async fn finish_many(&self, answers: &[Answer]) -> Vec<Result<(), StoreError>> {
        let mut done = Vec::with_capacity(answers.len());
        for a in answers {
            done.push(self.finish(&a.key, a.lease, &a.response).await);
        }
        done
    }

    /// Claims the key and, only when the claim is granted, makes `write` and keeps
    /// `answer` as the key's answer, all in one write of the ledger's database: three
    /// writes (`begin`, the write, `finish`) become one, for a store kept beside the
    /// ledger in its database. `Some(Begin::Proceed)`: all of it is written, nothing is
    /// left to finish. `Some` of any other answer: the claim was refused (`begin`'s
    /// answers) and nothing was written. An error: nothing was written. `None` (the
    /// default): this store keeps no ledger rows; the caller claims, writes and
    /// finishes in turn.
    async fn write_claimed(
        &self,
        _key: &ReplayKey,
        _fingerprint: &[u8; 32],
        _now: Millis,
        _claimant: &Claimant,
        _write: KnownWrite,
        _answer: &StoredResponse,
    ) -> Result<Option<Begin>, StoreError> {
        Ok(None)
    }

    /// Moves `order` by `event` at `now` as `Ledger::apply` does (no payment reference)
    /// and, only when it moved, keeps `render`'s answer for the order it moved to as the
    /// answer of `key` (claimed by the caller's request, whose claim took `lease`; a
    /// key that claim no longer holds keeps no answer), in one write of the ledger's
    /// database: the move's write and `finish` become one, for a store kept beside the
    /// ledger in its database. `Ok(Some(_))`: the move and the kept answer (if any) are
    /// written. `Err(LedgerError::Conflict(_))` (the order was not in a state the move
    /// applies to) and any other error: nothing was written, nothing kept. `Ok(None)`
    /// (the default): this store keeps no ledger rows; the caller moves and finishes in
    /// turn.
    async fn apply_kept(
        &self,
        _key: &ReplayKey,
        _lease: Lease,
        _order: OrderId,
        _event: OrderEvent,
        _now: Millis,
        _render: Arc<RenderKept>,
    ) -> Result<Option<KeptMove>, LedgerError> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keys_id_is_the_digest_its_records_were_named_by_before() {
        let key = ReplayKey::new("buyer:1", "k-1");
        let mut h = Sha256::new();
        h.update(7u64.to_le_bytes());
        h.update(b"buyer:1k-1");
        assert_eq!(key.id()[..], h.finalize()[..16]);
        assert_eq!((key.scope(), key.key()), ("buyer:1", "k-1"));
    }

    #[test]
    fn a_stores_own_name_for_a_key_is_made_once_and_never_handed_to_another_store() {
        let key = ReplayKey::new("buyer:1", "k-1");
        let made = std::cell::Cell::new(0);
        let name = |byte: u8| {
            let made = &made;
            move |_: &ReplayKey| {
                made.set(made.get() + 1);
                [byte; 16]
            }
        };
        assert_eq!(key.named_by(7, name(1)), [1; 16]);
        assert_eq!(
            key.named_by(7, name(2)),
            [1; 16],
            "kept for the store that made it"
        );
        assert_eq!(made.get(), 1);
        assert_eq!(
            key.named_by(8, name(3)),
            [3; 16],
            "another store names it its own way"
        );
        assert_eq!(key.named_by(8, name(4)), [4; 16]);
        assert_eq!(made.get(), 3);
    }

    #[test]
    fn the_default_fingerprint_is_the_digest_of_the_parts_as_stored_before() {
        let expected: [u8; 32] = Sha256::digest(b"POST\0/v1/events/7/open\0{}").into();
        let parts: [&[u8]; 5] = [b"POST", b"\0", b"/v1/events/7/open", b"\0", b"{}"];
        assert_eq!(fingerprint(&parts), expected);
    }

    #[test]
    fn keys_are_equal_by_scope_and_key_whether_or_not_their_id_was_taken() {
        let (a, b) = (
            ReplayKey::new("buyer:1", "k-1"),
            ReplayKey::new("buyer:1", "k-1"),
        );
        a.id();
        assert_eq!(a, b);
        assert_eq!(a.id(), b.id());
        assert_ne!(a, ReplayKey::new("buyer:1", "k-2"));
    }

    #[test]
    fn a_scope_and_key_cannot_pass_for_another_split_of_the_same_text() {
        let (a, b) = (ReplayKey::new("a:b", "c"), ReplayKey::new("a", "b:c"));
        assert_ne!(a.id(), b.id());
    }
}
