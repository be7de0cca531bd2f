use async_trait::async_trait;
use boxoffice_domain::possession::Thumbprint;
use boxoffice_domain::{BuyerId, EventId, HoldId, HoldState, Millis, Money, OrderId, SeatIndex};
use serde::{Deserialize, Serialize};

use super::StoreError;

/// What the arbiter needs to know of an event: its seats in index order with their
/// section, row and rank, and the per-buyer limit. Built from the catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArbiterLayout {
    pub event: EventId,
    pub max_per_buyer: u32,
    pub seats: Vec<LayoutSeat>,
    /// For each section: whether adjacency means anything there (false for GA).
    pub sections: Vec<LayoutSection>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutSeat {
    pub section: u16,
    /// Seats with the same (section, row) and consecutive indices are side by side.
    pub row: u16,
    pub rank: u32,
    pub price: Money,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutSection {
    pub seated: bool,
}

/// A seat already sold in the ledger, with its buyer (for the per-buyer count).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SoldSeat {
    pub seat: SeatIndex,
    pub buyer: BuyerId,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeatChoice {
    /// These exact seats, all or none.
    Named(Vec<SeatIndex>),
    /// The best `quantity` free seats of a section, side by side in one row when
    /// `adjacent` and possible.
    BestAvailable {
        section: u16,
        quantity: u32,
        adjacent: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HoldRequest {
    pub hold: HoldId,
    pub buyer: BuyerId,
    pub choice: SeatChoice,
    pub expires_at: Millis,
    /// The proof-of-possession key the hold answers to (RFC 7638 thumbprint), kept on
    /// the hold for as long as the hold is kept: its checkout and release must be
    /// proven with it.
    pub key: Option<Thumbprint>,
}

/// A late payment an event honours: the order's exact seats, to be taken again under
/// its ended hold's id (so `mark_sold` and the audit find them where they expect).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retake {
    pub hold: HoldId,
    pub buyer: BuyerId,
    pub order: OrderId,
    pub seats: Vec<SeatIndex>,
    pub pinned_until: Millis,
    /// An order the ledger refused for this hold: a hold still live and pinned for it
    /// is pinned for `order` instead, in the same step (`HoldMove::Repin`), so its
    /// seats are never free in between.
    pub replacing: Option<OrderId>,
}

/// A hold as the hot store knows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldView {
    pub hold: HoldId,
    pub buyer: BuyerId,
    pub seats: Vec<SeatIndex>,
    /// The price of each seat at the moment of the hold, in `seats` order: the quote.
    pub prices: Vec<Money>,
    pub state: HoldState,
    pub expires_at: Millis,
    pub order: Option<OrderId>,
    /// The key the hold was taken with (`HoldRequest::key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<Thumbprint>,
}

impl HoldView {
    pub fn total(&self) -> Money {
        Money::sum(self.prices.iter().copied()).unwrap_or(Money(i64::MAX))
    }
}

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ArbiterError {
    #[error("the event is not loaded in the hot store")]
    UnknownEvent,
    #[error("seat {0} is not free")]
    SeatUnavailable(SeatIndex),
    #[error("no such seat: {0}")]
    NoSuchSeat(SeatIndex),
    #[error("no such section")]
    NoSuchSection,
    #[error("not enough free seats in that section")]
    SoldOut,
    #[error("the buyer would hold or own more than {limit} tickets")]
    LimitExceeded { limit: u32 },
    #[error("no such hold")]
    UnknownHold,
    #[error("the hold has expired")]
    Expired,
    #[error("the hold is {0:?}, which does not allow that")]
    WrongState(HoldState),
    #[error("the request names no seats or too many")]
    BadQuantity,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Per-event seat counts, for stats and inventory-aware admission.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct SeatCounts {
    pub capacity: u32,
    pub free: u32,
    pub held: u32,
    pub sold: u32,
    /// Holds currently live (held or in checkout).
    pub active_holds: u32,
}

/// A hold the TTL (or the grace period) ended, its seats already back in stock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expired {
    pub hold: HoldId,
    pub buyer: BuyerId,
    pub seats: Vec<SeatIndex>,
    pub order: Option<OrderId>,
}

/// Who rebuilds an event the hot store has lost (`SeatArbiter::claim_rebuild`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RebuildClaim {
    /// The caller rebuilds it: `load` from the ledger.
    Mine,
    /// Loaded already (another node's rebuild finished): nothing to do.
    Loaded,
    /// Another caller claimed the rebuild and has not finished: wait for it.
    Busy,
}

/// The hot store: decides, in one atomic step per call, who holds which seat. It keeps
/// no durable state of its own; `load` rebuilds an event from the ledger's sold seats.
#[async_trait]
pub trait SeatArbiter: Send + Sync {
    /// (Re)builds an event: sold seats sold, every other seat free, no holds.
    async fn load(&self, layout: &ArbiterLayout, sold: &[SoldSeat]) -> Result<(), StoreError>;
    /// `load` for an event the hot store lost: when the event is loaded by then,
    /// nothing changes and the answer is `false`, decided in the load's first step, so
    /// a rebuild whose claim lapsed cannot wipe the event another rebuild loaded
    /// meanwhile, with every hold taken in it since. Of loads that begin before any
    /// has finished, one loads; a store whose load takes several steps may fail the
    /// others (`StoreError`: a later one took over, before the event held anything).
    async fn load_lost(
        &self,
        layout: &ArbiterLayout,
        sold: &[SoldSeat],
    ) -> Result<bool, StoreError>;
    async fn is_loaded(&self, event: EventId) -> Result<bool, StoreError>;
    /// For an event found missing: of the callers (on any node) that ask at once, one is
    /// told to rebuild it and the others to wait, so a lost event is rebuilt once, not
    /// by each in turn (each rebuild would drop the holds granted since the one
    /// before). A claim lapses if its holder never finishes the load. An in-process
    /// store, which one node owns, only says whether the event is loaded.
    async fn claim_rebuild(&self, event: EventId) -> Result<RebuildClaim, StoreError> {
        Ok(match self.is_loaded(event).await? {
            true => RebuildClaim::Loaded,
            false => RebuildClaim::Mine,
        })
    }
    /// Asks to run the periodic `sweep` (a fixed name: "expiry", "drift") of `event` as
    /// `node` for the next `ttl_ms`: `None` when granted or renewed, `Some(ms)` while
    /// another node holds it for that much longer. So however many nodes share the
    /// store, one sweeps each event and the others ask again only when the lease may
    /// have lapsed. A store one process owns grants it always.
    async fn sweep_lease(
        &self,
        event: EventId,
        sweep: &str,
        node: &str,
        ttl_ms: u64,
    ) -> Result<Option<u64>, StoreError> {
        let _ = (event, sweep, node, ttl_ms);
        Ok(None)
    }
    /// Drops an event's state entirely.
    async fn unload(&self, event: EventId) -> Result<(), StoreError>;

    /// Holds all the seats asked for or none. Holds whose deadline is at or before
    /// `now` are expired first (their seats return to stock exactly once).
    async fn hold(&self, req: &HoldRequest, now: Millis) -> Result<HoldView, ArbiterError>;
    async fn get(&self, hold: HoldId) -> Result<Option<HoldView>, StoreError>;
    /// Held → checking_out, moving the deadline to `pinned_until` and recording the
    /// order. Fails with `Expired` if the hold's deadline passed at `now`.
    async fn pin(
        &self,
        hold: HoldId,
        order: OrderId,
        pinned_until: Millis,
        now: Millis,
    ) -> Result<HoldView, ArbiterError>;
    /// Takes `req.seats` again, all or none, as hold `req.hold` checking out for
    /// `req.order` until `req.pinned_until`: for a payment that arrived after its hold
    /// ended. Allowed when that hold is released, expired or forgotten; a hold still
    /// live or sold for the same order answers as it is (a retry), a hold live for
    /// `req.replacing` is pinned for `req.order` in place (its own seats, kept), any
    /// other live hold is `WrongState`. Holds due at `now` are expired first; the seats
    /// must be free and within the buyer's limit, as for `hold`.
    async fn retake(&self, req: &Retake, now: Millis) -> Result<HoldView, ArbiterError>;
    /// checking_out → payment_pending, keeping the pin.
    async fn mark_uncertain(&self, hold: HoldId) -> Result<HoldView, ArbiterError>;
    /// The ledger committed: the hold's seats become sold for good.
    async fn mark_sold(&self, hold: HoldId) -> Result<HoldView, ArbiterError>;
    /// Returns the seats of a live hold to stock. Releasing a released hold is a no-op
    /// that returns the hold as it is.
    async fn release(&self, hold: HoldId) -> Result<HoldView, ArbiterError>;
    /// A buyer's release of their own hold, in one step: released while it is held
    /// (`true`: by this call); answered as it is once it ended (`false`); `UnknownHold`
    /// when it is another buyer's; `WrongState` once a checkout pinned it. A read and
    /// a `release` apart would free a hold a checkout pinned between them.
    async fn release_held(
        &self,
        hold: HoldId,
        buyer: BuyerId,
    ) -> Result<(HoldView, bool), ArbiterError>;
    /// Expires every live hold of `event` whose deadline is at or before `now`, up to
    /// `limit`, returning each one's seats to stock in the same step.
    async fn expire_due(
        &self,
        event: EventId,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<Expired>, StoreError>;

    /// The ledger sold these seats (to these buyers); afterwards the hot store agrees.
    /// A free seat becomes sold and counts against its buyer. A live hold on a listed
    /// seat ends: sold as a whole when it is checking out (or payment pending) for that
    /// seat's buyer and every one of its seats is listed for that buyer (a sale whose
    /// `mark_sold` has not arrived yet), released otherwise (its unlisted seats back
    /// in stock). A seat already sold stays as it is. Every seat must exist, or nothing
    /// changes. Returns how many listed seats were not sold before. For drift repair
    /// and for a commit that lost at the ledger's primary key.
    async fn mark_seats_sold(
        &self,
        event: EventId,
        seats: &[SoldSeat],
    ) -> Result<u32, ArbiterError>;
    /// The ledger cancelled the sale of these seats (to these buyers): each one still
    /// sold goes back to stock and out of its buyer's count; any other seat is left as
    /// it is, so a repeat changes nothing. Every seat must exist, or nothing changes.
    /// Returns how many came back.
    async fn return_sold_seats(
        &self,
        event: EventId,
        seats: &[SoldSeat],
    ) -> Result<u32, ArbiterError>;

    /// The ledger gave sold seat `seat` from `from` to `to` (a transfer, a resale on
    /// the exchange): from now on it counts against `to` and no longer against `from`,
    /// so each buyer's held plus owned seats stay what the ledger's count says (P6).
    /// Only a seat the hot store has sold moves a count (`true`); for any other nothing
    /// changes (`false`). Called once per change of hands, by whoever made it in the
    /// ledger: the store keeps no owner per seat to tell a repeat.
    async fn give_sold_seat(
        &self,
        event: EventId,
        seat: SeatIndex,
        from: BuyerId,
        to: BuyerId,
    ) -> Result<bool, ArbiterError>;

    /// One bit per seat in index order, most significant bit first: 1 = free.
    async fn availability(&self, event: EventId) -> Result<Vec<u8>, ArbiterError>;
    async fn counts(&self, event: EventId) -> Result<SeatCounts, ArbiterError>;
    /// Index of every seat marked sold, for reconciliation with the ledger.
    async fn sold_seats(&self, event: EventId) -> Result<Vec<SeatIndex>, ArbiterError>;
}
