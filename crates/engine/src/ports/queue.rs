//! The `QueueStore` port: the waiting room's shared state. Per event: the line (buyer
//! → position), the pre-opening pool, "serving up to N" and when each batch moved it
//! (so an admission expires a fixed time after it began), the sold-out flag, a counter of
//! shoppers who finished, and a few named settings every node must agree on (the
//! fairness seed, the operator's admission override). Losing it degrades fairness,
//! never correctness.

use std::collections::HashMap;

use async_trait::async_trait;
use boxoffice_domain::{BuyerId, EventId, Millis};
use serde::Serialize;

use super::StoreError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// 1-based, dense, unique per event. `None` while the buyer waits in the
    /// pre-opening pool, whose order is drawn at opening.
    pub position: Option<u64>,
    /// False when the buyer was already in line (a retried join).
    pub new: bool,
}

/// How far an event's line has come.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct QueueState {
    /// Every position at or below this is admitted.
    pub serving_up_to: u64,
    /// Positions handed out so far: the pool and the buyers placed after it.
    pub queue_length: u64,
    pub sold_out: bool,
    /// When `serving_up_to` last moved.
    pub advanced_at: Millis,
    /// Buyers who joined before opening (they hold positions 1..=pool_size once placed).
    pub pool_size: u64,
    /// The pool is sealed: later joins append after it.
    pub opened: bool,
    /// The sealed pool has its positions.
    pub placed: bool,
    /// Admitted buyers who finished shopping (each counted once).
    pub finished: u64,
}

/// An event's line as the ledger kept it, to put back into a queue store that lost it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestoredLine {
    /// Every journaled place, by position (gaps allowed: a place handed out whose
    /// journal write failed was never confirmed to its buyer).
    pub positions: Vec<(BuyerId, u64)>,
    /// The placed pool's members in arrival order (for the published verification).
    pub pool: Vec<BuyerId>,
    /// Every admission batch: (serving_up_to, when), ascending, none past the last
    /// position (a batch that reached a place never journaled is capped at the line).
    pub batches: Vec<(u64, Millis)>,
}

/// The waiting room's state: who is where in line, and how far admission has come.
#[async_trait]
pub trait QueueStore: Send + Sync {
    /// Before opening: adds the buyer to the pool (no position yet). After: places the
    /// buyer at the back of the line. A buyer already in line keeps their place.
    /// `sale_open` seals the pool first if nobody has yet (the sale opened meanwhile).
    async fn join(
        &self,
        event: EventId,
        buyer: BuyerId,
        sale_open: bool,
    ) -> Result<Place, StoreError>;
    /// After opening: the buyer's place at the back of the line (or their existing
    /// one), but only in a line this store has opened (sealed, placed or restored).
    /// `None` when it has not: the store lost the line, or nobody has opened it yet, and
    /// the caller brings it back first (`Engine::ensure_line`), so a line that was lost
    /// never hands out a position it had already given someone else.
    async fn join_line(&self, event: EventId, buyer: BuyerId) -> Result<Option<Place>, StoreError>;
    /// Takes the right to open or bring back an event's line for `holder` alone, across
    /// every task and every node sharing the store, until `release_line_claim` or
    /// `ttl_ms` passes without a renewal; whether it was taken (a lapsed claim is
    /// anyone's). A store only one process uses still has many callers: the admission
    /// ticker, joins and status reads all find an unopened line at once.
    async fn claim_line(
        &self,
        event: EventId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<bool, StoreError>;
    /// Gives `holder`'s claim another `ttl_ms` from now, if `holder` still has it. False
    /// once it lapsed, even if nobody took it since: the holder cannot tell that from
    /// another node having taken it, done the work and let go.
    async fn renew_line_claim(
        &self,
        event: EventId,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<bool, StoreError>;
    /// Gives the claim up if `holder` still has it: one that lapsed and went to another
    /// caller stays theirs.
    async fn release_line_claim(&self, event: EventId, holder: &str) -> Result<(), StoreError>;
    /// Replaces the event's line (positions, pool, batches; the settings stay) with
    /// `line`, opened and placed, `serving_up_to` at the last batch (capped at the
    /// line), `finished` back at zero. Until it returns, `join_line` answers `None`.
    async fn restore_line(&self, event: EventId, line: &RestoredLine) -> Result<(), StoreError>;
    /// The buyer's place: `None` if they never joined.
    async fn place(&self, event: EventId, buyer: BuyerId) -> Result<Option<Place>, StoreError>;
    async fn state(&self, event: EventId) -> Result<QueueState, StoreError>;
    /// Moves `serving_up_to` forward to `to` (never backwards, never past the line),
    /// and records `now` as the admission time of every position it admits.
    async fn advance(&self, event: EventId, to: u64, now: Millis)
    -> Result<QueueState, StoreError>;
    /// When `position` was admitted: the time of the advance that first reached it.
    /// `None` while it waits (or if the line has no record of it).
    async fn admitted_at(
        &self,
        event: EventId,
        position: u64,
    ) -> Result<Option<Millis>, StoreError>;
    async fn set_sold_out(&self, event: EventId, sold_out: bool) -> Result<(), StoreError>;
    /// Seals the pool (idempotent): later joins take positions after it. Returns the
    /// pool's members until `place_pool` has run, then nothing.
    async fn seal_pool(&self, event: EventId) -> Result<Vec<BuyerId>, StoreError>;
    /// Gives the sealed pool positions 1..=n in the order of `ordered` (its members,
    /// each once). Running it again with the same order changes nothing.
    async fn place_pool(&self, event: EventId, ordered: &[BuyerId]) -> Result<(), StoreError>;
    /// The pool's members in arrival order (kept after placing, for the published
    /// verification), `limit` from `offset`.
    async fn pool_members(
        &self,
        event: EventId,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<BuyerId>, StoreError>;
    /// Counts an admitted buyer as finished, once; returns whether this call counted.
    async fn finish(&self, event: EventId, buyer: BuyerId) -> Result<bool, StoreError>;
    /// Sets a named setting (`only_if_absent`: first writer wins) and returns the value
    /// now stored.
    async fn set_setting(
        &self,
        event: EventId,
        name: &str,
        value: &str,
        only_if_absent: bool,
    ) -> Result<String, StoreError>;
    async fn settings(&self, event: EventId) -> Result<HashMap<String, String>, StoreError>;
    /// Remembers that the human check whose token has this SHA-256 let `owner` in,
    /// until `until` (first writer wins), and returns the owner now remembered. An
    /// entry whose `until` is not after `now` counts as absent. Bounded: a store
    /// short of room forgets the entries nearest their end first.
    async fn remember_check(
        &self,
        event: EventId,
        digest: &[u8; 32],
        owner: BuyerId,
        until: Millis,
        now: Millis,
    ) -> Result<BuyerId, StoreError>;
    /// Whom the human check with this digest let in, while remembered.
    async fn remembered_check(
        &self,
        event: EventId,
        digest: &[u8; 32],
        now: Millis,
    ) -> Result<Option<BuyerId>, StoreError>;
    async fn drop_event(&self, event: EventId) -> Result<(), StoreError>;
}
