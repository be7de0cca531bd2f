//! The face-value exchange as the ledger keeps it: listings, and the swaps that take
//! them (domain: `boxoffice_domain::exchange`).
//!
//! The store keeps these rules whatever the number of nodes:
//! - a ticket has at most one live listing (open or reserved; a unique index), and a
//!   listing is good only for the ticket's version when listed;
//! - a listing is reserved by exactly one swap (the move `open → reserved` is
//!   conditional, so of N buyers racing one wins), and the swap row is written in the
//!   same transaction, before any money moves;
//! - every swap move is conditional on the state it leaves, so a step repeated after a
//!   crash, or by two workers, happens once;
//! - the ticket moves in one transaction with everything that goes with it (as a
//!   transfer's accept: holder and version, the sold seat's buyer, both ticket counts
//!   under the event's limit, an `exchanged` history line), together with the swap's
//!   move to `moved` and the listing's to `sold`; or, when the ticket cannot move, the
//!   swap goes to `refunding` and nothing else changes.

use async_trait::async_trait;
use boxoffice_domain::exchange::{ListingState, SwapState};
use boxoffice_domain::ticket::TicketId;
use boxoffice_domain::{BuyerId, EventId, ListingId, Millis, Money, OrderId, OrderState, SwapId};

use super::{StoreError, TicketRow};

/// One ticket on offer, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    pub id: ListingId,
    pub ticket: TicketId,
    pub event: EventId,
    /// The seat's label, for the seat map.
    pub seat: String,
    pub seller: BuyerId,
    /// The ticket's version when listed: the listing is good for that version only.
    pub version: u32,
    /// What a buyer pays: at most the seat's face value.
    pub price: Money,
    pub state: ListingState,
    pub created_at: Millis,
    pub ended_at: Option<Millis>,
}

/// One buyer taking one listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Swap {
    pub id: SwapId,
    pub listing: ListingId,
    pub ticket: TicketId,
    pub event: EventId,
    pub seller: BuyerId,
    pub buyer: BuyerId,
    /// The seller's order, which the seller's refund comes out of.
    pub seller_order: OrderId,
    /// The buyer's charge at the provider: its idempotency key, derived from nothing
    /// else so a repeated authorization finds the first.
    pub charge: OrderId,
    /// The provider's reference of the charge, once known.
    pub charge_ref: Option<String>,
    pub price: Money,
    pub currency: String,
    /// What the seller gets back: the price less the event's fee.
    pub payout: Money,
    pub payment_method: String,
    pub state: SwapState,
    pub created_at: Millis,
    pub updated_at: Millis,
}

/// Why the store refused a listing write or a reservation. Nothing was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListingRefusal {
    /// No such ticket or listing, or not the caller's to act on.
    NotFound,
    /// The ticket already has a live listing (or an open transfer offer).
    AlreadyListed,
    /// The ticket is not at the listing's version, or no longer with its seller.
    Superseded,
    /// The ticket was admitted at a gate.
    CheckedIn,
    /// The ticket's order is not (or no longer) paid for.
    NotPaid(OrderState),
    /// The listing is reserved, sold or withdrawn.
    NotOpen(ListingState),
    /// The buyer already holds (or is buying) as many tickets as the event allows.
    LimitExceeded,
    /// A buyer cannot take their own listing.
    OwnListing,
    /// The ticket was sold on through the exchange once (it stands apart from its
    /// order): its order's payment, which pays a seller back, paid out for it already.
    SoldOn,
}

/// A reservation, as the engine asks the store for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reserve {
    pub swap: Swap,
    /// The event's per-buyer limit now: the buyer's tickets plus their swaps in flight
    /// must stay under it.
    pub max_per_buyer: u32,
}

/// What moving the ticket of a charged swap came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Moved {
    /// The ticket is the buyer's at this new version; the swap is `moved`.
    Moved(TicketRow),
    /// The ticket could not move; the swap is `refunding` (or was already past
    /// `charged`: the answer then is the swap's state).
    Refused(ListingRefusal),
    /// The swap was not `charged` (another worker moved it first).
    NotCharged(SwapState),
}

/// The exchange's durable record.
#[async_trait]
pub trait Exchange: Send + Sync {
    /// Opens the listing if its seller holds the ticket at its version, unscanned, with
    /// its order confirmed, and the ticket has no live listing and no open transfer offer.
    async fn list(&self, listing: &Listing) -> Result<Result<(), ListingRefusal>, StoreError>;
    /// Withdraws an open listing of `by` (its seller).
    async fn withdraw(
        &self,
        id: ListingId,
        by: BuyerId,
        now: Millis,
    ) -> Result<Result<Listing, ListingRefusal>, StoreError>;
    async fn listing(&self, id: ListingId) -> Result<Option<Listing>, StoreError>;
    /// The event's open listings whose ticket is still at the listed version with its
    /// seller, in id order after `after`, at most `limit`.
    async fn open_listings(
        &self,
        event: EventId,
        after: Option<ListingId>,
        limit: u32,
    ) -> Result<Vec<Listing>, StoreError>;

    /// Reserves the listing for the swap's buyer and writes the swap (`reserved`) in one
    /// step: the listing must be open and its ticket still movable, and the buyer's
    /// tickets plus swaps in flight below the limit.
    async fn reserve(&self, reserve: &Reserve) -> Result<Result<(), ListingRefusal>, StoreError>;
    /// Moves a swap from `from` to `to` (a move `SwapState::can_move_to` allows),
    /// recording the charge's reference when given; `false` when the swap was not in
    /// `from`. Moving to `undone` from `reserved` reopens the listing; `reserved` to
    /// `reserved` only records the reference (a payment waiting for the buyer); `undone`
    /// to `refunding` (a charge captured after the swap was undone) leaves the listing
    /// as it is, open to others.
    async fn advance(
        &self,
        id: SwapId,
        from: SwapState,
        to: SwapState,
        charge_ref: Option<&str>,
        now: Millis,
    ) -> Result<bool, StoreError>;
    /// Moves the ticket of a `charged` swap to its buyer (see the module's rules).
    async fn move_ticket(
        &self,
        id: SwapId,
        max_per_buyer: u32,
        now: Millis,
    ) -> Result<Moved, StoreError>;
    async fn swap(&self, id: SwapId) -> Result<Option<Swap>, StoreError>;
    /// The swap whose buyer's charge is `charge` (a provider's webhook names the
    /// charge, not the swap).
    async fn swap_by_charge(&self, charge: OrderId) -> Result<Option<Swap>, StoreError>;
    /// Unfinished swaps last moved before `before`, oldest first, at most `limit`.
    async fn unfinished_swaps(&self, before: Millis, limit: u32) -> Result<Vec<Swap>, StoreError>;
    /// Every swap's charge and state, for the audit's reconciliation with the provider.
    async fn swap_charges(&self) -> Result<Vec<(OrderId, SwapState)>, StoreError>;

    /// What the exchange gives back of `order`'s payment in parts: the payouts of the
    /// swaps that moved one of its tickets (`moved` or `done`, or claimed by the event's
    /// cancellation after they were done). The order's own refund is only the rest.
    async fn payouts_of(&self, order: OrderId) -> Result<Money, StoreError>;
    /// The event's swaps that sold a ticket or are still under way (all but `undone`),
    /// oldest first.
    async fn live_swaps(&self, event: EventId) -> Result<Vec<Swap>, StoreError>;
    /// The event is cancelled: claims the refund of a `done` swap's buyer before any
    /// money moves. In one step the swap goes `done → refunding` (stamped
    /// `cancelled_at`), its ticket stands `refunded` on its own (refused at the door),
    /// and its sold seat is deleted with its holder's count lowered. `false` when the
    /// swap was not `done` (claimed before, or not finished).
    async fn claim_cancelled_swap(&self, id: SwapId, now: Millis) -> Result<bool, StoreError>;
}
