//! Sliding-window counters and buyer clusters of an event, shared by every node of a
//! cluster: what payment velocity limits and buyer signals read and write. Keys are
//! opaque, short and chosen by the engine (hashes of buyers, payment methods, networks
//! and device keys), never text a client wrote.

use async_trait::async_trait;
use boxoffice_domain::{EventId, Millis};
use serde::Serialize;

use super::StoreError;

/// The longest key a store is asked to keep (the engine sends 34 characters).
pub const MAX_KEY_LEN: usize = 64;
/// The most clusters one dimension of an event ranks; smaller ones drop out first.
pub const MAX_RANKED_CLUSTERS: usize = 1_000;

/// One counter of a check: the entries of `key` in the last `window_ms` must be fewer
/// than `limit`. With `add`, an admitted check adds an entry at `now`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counter {
    pub key: String,
    pub limit: u32,
    pub window_ms: u64,
    pub add: bool,
}

/// What a check answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Every counter was under its limit; those with `add` have one more entry.
    Admitted,
    /// The counter at this index of the check was at its limit, until `until`;
    /// nothing was added anywhere.
    Refused { index: usize, until: Millis },
}

/// What a buyer joining a cluster answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// The buyer is in the cluster, which has this many distinct buyers.
    Joined(u32),
    /// The buyer was not in it and it already had the most buyers allowed: nothing
    /// changed.
    Refused(u32),
}

/// What a buyer joining several clusters at once answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Links {
    /// The buyer is in every cluster; each has this many distinct buyers, in the order
    /// of the joins.
    Joined(Vec<u32>),
    /// The join at `index` was refused: its cluster already had `buyers` (its most)
    /// without the buyer. Nothing changed in any cluster.
    Refused { index: usize, buyers: u32 },
}

/// The longest value `stash` keeps.
pub const MAX_STASH_LEN: usize = 256;

/// A buyer joining a cluster. A cluster counts at most `cap` members (no threshold
/// needs more; `cap` is at least `most`) and is forgotten `ttl_ms` after its last join.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Join<'a> {
    pub dimension: Dimension,
    pub key: &'a str,
    pub member: &'a str,
    pub most: Option<u32>,
    pub cap: u32,
    pub ttl_ms: u64,
}

/// Where a cluster was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    /// A device key (the thumbprint of the buyer app's key pair).
    Device,
    /// A client network (an IPv4 /24 or IPv6 /56 unless the event says otherwise).
    Network,
    /// A payment method's fingerprint.
    Card,
}

impl Dimension {
    pub const ALL: [Dimension; 3] = [Dimension::Device, Dimension::Network, Dimension::Card];

    pub fn as_str(self) -> &'static str {
        match self {
            Dimension::Device => "device",
            Dimension::Network => "network",
            Dimension::Card => "card",
        }
    }
}

/// One cluster: the distinct buyers one key of a dimension served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    pub key: String,
    pub buyers: u32,
}

#[async_trait]
pub trait VelocityStore: Send + Sync {
    /// Checks every counter of `counters` at `now` and, only if each is under its
    /// limit, adds an entry to those with `add`; all in one atomic step, so of N
    /// concurrent checks against a limit K with room for K, exactly K are admitted.
    async fn check(
        &self,
        event: EventId,
        counters: &[Counter],
        now: Millis,
    ) -> Result<Admission, StoreError>;

    /// Adds an entry at `now` to every counter (whatever its limit) and answers how
    /// many entries each has in its window, at most its limit (a count that has
    /// reached the limit is not counted further).
    async fn record(
        &self,
        event: EventId,
        counters: &[Counter],
        now: Millis,
    ) -> Result<Vec<u32>, StoreError>;

    /// Adds `join.member` to the cluster `join.key` of `join.dimension` unless the
    /// cluster already has `join.most` members without it; atomic, so of N concurrent
    /// new members with room for K, exactly K join.
    async fn link(&self, event: EventId, join: &Join<'_>, now: Millis) -> Result<Link, StoreError>;

    /// `link` for every join of `joins` in one atomic step: if any would be refused,
    /// none is made (the first refused answers); otherwise the buyer joins them all.
    /// Of N concurrent callers whose joins share a cluster with room for K, exactly K
    /// join, and a refused caller joined none of its other clusters either.
    async fn link_all(
        &self,
        event: EventId,
        joins: &[Join<'_>],
        now: Millis,
    ) -> Result<Links, StoreError>;

    /// Keeps `value` (at most `MAX_STASH_LEN` bytes) under `key` for `ttl_ms`,
    /// replacing what was kept there.
    async fn stash(
        &self,
        event: EventId,
        key: &str,
        value: &str,
        ttl_ms: u64,
        now: Millis,
    ) -> Result<(), StoreError>;

    /// Takes what `stash` kept under `key` unless it lapsed: atomic, so of concurrent
    /// takes (from any node) exactly one gets it, and a later take gets nothing.
    async fn take(
        &self,
        event: EventId,
        key: &str,
        now: Millis,
    ) -> Result<Option<String>, StoreError>;

    /// The `limit` largest clusters of `dimension` (of at most `MAX_RANKED_CLUSTERS`
    /// ranked), largest first, ties by key. A cluster stays listed while its dimension
    /// has joins within the cluster's time to live.
    async fn clusters(
        &self,
        event: EventId,
        dimension: Dimension,
        limit: usize,
    ) -> Result<Vec<Cluster>, StoreError>;
}
