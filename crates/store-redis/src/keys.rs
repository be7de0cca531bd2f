//! Key names. Every key of one event starts with the configured prefix and carries the
//! hash tag `{<prefix>:<event>}`, so the whole event lives in one Redis Cluster slot and
//! a script may touch any of its keys atomically. No text a client chose ever reaches a
//! key name: an `Idempotency-Key` is hashed first, so it can neither pick a slot with
//! braces nor make a key long.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use boxoffice_domain::{EventId, HoldId};
use boxoffice_engine::ports::{ReplayKey, StoreError};

/// What every key of the store starts with; tests use a fresh one per run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prefix(String);

impl Prefix {
    /// Braces would move the hash tag, so they are refused.
    pub fn new(prefix: impl Into<String>) -> Result<Self, StoreError> {
        let prefix = prefix.into();
        if prefix.is_empty() || prefix.contains(['{', '}']) {
            return Err(StoreError(format!(
                "the Redis key prefix {prefix:?} must be non-empty and contain no braces"
            )));
        }
        Ok(Prefix(prefix))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Names of an event's arbiter keys, in the order `lua/common.lua` reads `KEYS`.
pub(crate) const EVENT_KEYS: [&str; 12] = [
    "meta", "free", "sold", "layout", "freez", "holds", "dl", "taken", "unrep", "fin", "loading",
    "claim",
];

/// An event's arbiter key names, in `EVENT_KEYS` order.
pub(crate) fn event_keys(prefix: &Prefix, event: EventId) -> [String; EVENT_KEYS.len()] {
    EVENT_KEYS.map(|k| format!("{{{}:{}}}:{k}", prefix.0, event))
}

/// Events whose key names are kept; beyond this the table starts again empty (event ids
/// in a request, such as a hold id's, are the client's, so the table must not grow with
/// them).
const KEPT_EVENTS: usize = 4_096;

/// The key names of the events in use, made once per event by `make` rather than
/// formatted per script call: every arbiter script names all of its event's keys, and
/// every queue script its line's.
pub(crate) struct KeyTable<const N: usize> {
    prefix: Prefix,
    make: fn(&Prefix, EventId) -> [String; N],
    kept: RwLock<HashMap<EventId, Arc<[String; N]>>>,
}

/// The arbiter's keys of each event (`EVENT_KEYS`).
pub(crate) type EventKeyTable = KeyTable<{ EVENT_KEYS.len() }>;

impl EventKeyTable {
    pub(crate) fn new(prefix: Prefix) -> Self {
        KeyTable::with(prefix, event_keys)
    }
}

impl<const N: usize> KeyTable<N> {
    pub(crate) fn with(prefix: Prefix, make: fn(&Prefix, EventId) -> [String; N]) -> Self {
        KeyTable {
            prefix,
            make,
            kept: RwLock::new(HashMap::new()),
        }
    }

    pub(crate) fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    pub(crate) fn get(&self, event: EventId) -> Arc<[String; N]> {
        let kept = self.kept.read().unwrap_or_else(|e| e.into_inner());
        if let Some(keys) = kept.get(&event) {
            return keys.clone();
        }
        drop(kept);
        let keys = Arc::new((self.make)(&self.prefix, event));
        let mut kept = self.kept.write().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= KEPT_EVENTS {
            kept.clear();
        }
        kept.insert(event, keys.clone());
        keys
    }
}

/// The lease of one sweep of an event (`SeatArbiter::sweep_lease`), under the event's
/// tag; `sweep` is one of the engine's fixed names.
pub(crate) fn sweep_lease_key(prefix: &Prefix, event: EventId, sweep: &str) -> String {
    format!("{{{}:{}}}:lease:{sweep}", prefix.0, event)
}

/// A hold's field in its event's `holds` hash.
pub(crate) fn hold_field(hold: HoldId) -> String {
    format!("{:032x}", hold.nonce)
}

/// The waiting room's keys of an event: `[positions, state, pool, finished, settings,
/// admissions]`. Their own tag, so a cluster may place an event's line and its seats on
/// different nodes (the seeds keep admission and seats on separate Redis primaries).
pub(crate) fn queue_keys(prefix: &Prefix, event: EventId) -> [String; 6] {
    let tag = format!("{{{}:q:{}}}", prefix.0, event);
    ["pos", "state", "pool", "fin", "settings", "adm"].map(|k| format!("{tag}:{k}"))
}

/// The waiting room's keys a release counts a finished shopper in: `[finished,
/// state]`, as `queue_keys` names them.
pub(crate) fn line_finish_keys(prefix: &Prefix, event: EventId) -> [String; 2] {
    let tag = format!("{{{}:q:{}}}", prefix.0, event);
    [format!("{tag}:fin"), format!("{tag}:state")]
}

/// Held by the one node opening or restoring an event's line (`QueueStore::claim_line`),
/// its value the holder's name.
pub(crate) fn line_claim_key(prefix: &Prefix, event: EventId) -> String {
    format!("{{{}:q:{}}}:claim", prefix.0, event)
}

/// The velocity keys of an event share a tag of their own, `{<prefix>:v:<event>}`, so
/// one script checks all the counters of a checkout. The engine's keys are hashes of
/// fixed length, so no client text reaches a name.
pub(crate) fn velocity_tag(prefix: &Prefix, event: EventId) -> String {
    format!("{{{}:v:{}}}", prefix.0, event)
}

/// Where a used human check of an event is remembered: under the event's queue tag,
/// by the hex SHA-256 of its token, expiring on its own (no index to bound).
pub(crate) fn check_key(prefix: &Prefix, event: EventId, digest: &[u8; 32]) -> String {
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{{{}:q:{}}}:hc:{hex}", prefix.0, event)
}

/// Idempotency records are spread over this many shards, each under its own hash tag:
/// a shard's records, its index and its node heartbeats share a slot, so one script can
/// count and evict within the shard, and the shards spread over a cluster's nodes.
pub(crate) const IDEM_SHARDS: u8 = 16;

/// Where one idempotency record lives.
pub(crate) struct IdemRecord {
    /// The record's key: `{<prefix>:idem:<shard>}:r:<id>`.
    pub record: String,
    /// The id within its shard: 32 hex digits of a SHA-256 of (scope, key).
    pub id: String,
    /// Its shard, below `IDEM_SHARDS` (`idem_shards` names each shard's keys).
    pub shard: u8,
}

/// The shared keys of one shard.
pub(crate) struct IdemShard {
    /// Sorted set of record ids by claim time, for counting, eviction and pruning.
    pub index: String,
    /// Hash of node incarnation → last heartbeat (ms).
    pub nodes: String,
    /// What a record's key is made of: this plus its id.
    pub record_prefix: String,
}

pub(crate) fn idem_shard(prefix: &Prefix, shard: u8) -> IdemShard {
    let tag = format!("{{{}:idem:{shard}}}", prefix.0);
    IdemShard {
        index: format!("{tag}:ix"),
        nodes: format!("{tag}:nodes"),
        record_prefix: format!("{tag}:r:"),
    }
}

/// The shared keys of every shard, by shard number: made once per store.
pub(crate) fn idem_shards(prefix: &Prefix) -> Arc<[IdemShard]> {
    (0..IDEM_SHARDS).map(|n| idem_shard(prefix, n)).collect()
}

/// An idempotency record's place, named by the key's digest (`ReplayKey::id`), in
/// `shards` (`idem_shards` of the store's prefix): two strings a record, the only key
/// names a claim makes.
pub(crate) fn idempotency_record(shards: &[IdemShard], key: &ReplayKey) -> IdemRecord {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = key.id();
    let mut id = String::with_capacity(digest.len() * 2);
    for b in digest {
        id.push(char::from(HEX[usize::from(b >> 4)]));
        id.push(char::from(HEX[usize::from(b & 15)]));
    }
    let shard = digest[0] % IDEM_SHARDS;
    let prefix = &shards[usize::from(shard)].record_prefix;
    let mut record = String::with_capacity(prefix.len() + id.len());
    record.push_str(prefix);
    record.push_str(&id);
    IdemRecord { record, id, shard }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_table_names_an_events_keys_as_made_afresh_and_stays_bounded() {
        let p = Prefix::new("bo").unwrap();
        let table = EventKeyTable::new(p.clone());
        let (a, b) = (EventId(7), EventId(8));
        assert_eq!(*table.get(a), event_keys(&p, a));
        assert_eq!(table.get(a)[0], "{bo:7}:meta");
        assert!(Arc::ptr_eq(&table.get(a), &table.get(a)), "made once");
        assert_eq!(table.get(b)[11], "{bo:8}:claim");
        for e in 0..(KEPT_EVENTS as i64 * 2) {
            table.get(EventId(100 + e));
        }
        assert!(table.kept.read().unwrap().len() <= KEPT_EVENTS);
    }

    #[test]
    fn client_text_never_reaches_an_idempotency_key_name() {
        let p = idem_shards(&Prefix::new("bo").unwrap());
        let r = idempotency_record(&p, &ReplayKey::new("buyer:1", "{evil}-and-a-very-long-key"));
        assert!(
            !r.record.contains("evil") && r.record.len() < 64,
            "{}",
            r.record
        );
        // The hash tag is the first {…}: the prefix and the shard, nothing else.
        let tag = &r.record[r.record.find('{').unwrap()..=r.record.find('}').unwrap()];
        assert!(tag.starts_with("{bo:idem:"), "{tag}");
        let other = idempotency_record(&p, &ReplayKey::new("buyer:1", "{evil}-2"));
        assert_ne!(r.id, other.id);
        // Named as records always were: the digest's hex under its shard's tag.
        let key = ReplayKey::new("buyer:1", "{evil}-2");
        let hex: String = key.id().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(other.id, hex);
        let shard = key.id()[0] % IDEM_SHARDS;
        assert_eq!(other.shard, shard);
        assert_eq!(other.record, format!("{{bo:idem:{shard}}}:r:{hex}"));
        let (a, b) = (
            idempotency_record(&p, &ReplayKey::new("a:b", "c")),
            idempotency_record(&p, &ReplayKey::new("a", "b:c")),
        );
        assert_ne!(a.id, b.id);
    }
}
