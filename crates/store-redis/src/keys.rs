//! Key names. Every key of one event starts with the configured prefix and carries the
//! hash tag `{<prefix>:<event>}`, so the whole event lives in one Redis Cluster slot and
//! a script may touch any of its keys atomically.

use boxoffice_domain::{EventId, HoldId};
use boxoffice_engine::ports::StoreError;

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
pub(crate) const EVENT_KEYS: [&str; 11] = [
    "meta", "free", "sold", "layout", "freez", "holds", "dl", "taken", "unrep", "fin", "loading",
];

pub(crate) fn event_keys(prefix: &Prefix, event: EventId) -> Vec<String> {
    EVENT_KEYS
        .iter()
        .map(|k| format!("{{{}:{}}}:{k}", prefix.0, event))
        .collect()
}

/// A hold's field in its event's `holds` hash.
pub(crate) fn hold_field(hold: HoldId) -> String {
    format!("{:032x}", hold.nonce)
}

/// The waiting room's keys of an event: `[positions, state, pool, finished, settings]`.
/// Their own tag, so a cluster may place an event's line and its seats on different
/// nodes (the seeds keep admission and seats on separate Redis primaries).
pub(crate) fn queue_keys(prefix: &Prefix, event: EventId) -> [String; 5] {
    let tag = format!("{{{}:q:{}}}", prefix.0, event);
    ["pos", "state", "pool", "fin", "settings"].map(|k| format!("{tag}:{k}"))
}

/// An idempotency record. The scope's length goes first so that scope "a:b" + key "c"
/// and scope "a" + key "b:c" cannot meet; each script touches this one key only.
pub(crate) fn idempotency_key(prefix: &Prefix, scope: &str, key: &str) -> String {
    format!("{}:idem:{}:{scope}:{key}", prefix.0, scope.len())
}
