//! Ticket transfers as the `Tickets` port keeps them: an offer from the holder to
//! another buyer, and its end (accepted, cancelled by the holder, or lapsed).
//!
//! The store keeps three rules whatever the number of nodes: a ticket has at most one
//! open offer (a unique index on the open offers, so of two offers racing one wins);
//! an offer ends once (every move is conditional on `offered`, so of an accept and a
//! cancel racing, or two accepts, one wins); and an accepted offer moves the ticket in
//! one ledger transaction with everything that goes with it: the holder and a new
//! version (the old barcode is superseded), the sold seat's buyer, both buyers'
//! ticket counts (the recipient's under the event's limit, by the same CHECK as a
//! commit) and a `transferred` line in the order's history (so it goes out as an order
//! event). A refusal writes nothing.

use boxoffice_domain::ticket::TicketId;
pub use boxoffice_domain::transfers::TransferState;
use boxoffice_domain::{BuyerId, EventId, Millis, OrderState, TransferId};
use serde::Serialize;

use super::TicketRow;

/// One offer of a ticket, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TransferOffer {
    pub id: TransferId,
    pub ticket: TicketId,
    pub event: EventId,
    pub from: BuyerId,
    pub to: BuyerId,
    /// The ticket's version when offered: the offer is good for that version only.
    pub version: u32,
    pub state: TransferState,
    pub created_at: Millis,
    pub expires_at: Millis,
    /// When it was accepted, cancelled or found lapsed.
    pub ended_at: Option<Millis>,
}

impl TransferOffer {
    /// The state as of `now`: an open offer past its time is expired, whether or not
    /// the store has written so yet.
    pub fn state_at(&self, now: Millis) -> TransferState {
        match self.state {
            TransferState::Offered if self.expires_at <= now => TransferState::Expired,
            s => s,
        }
    }
}

/// Why the store refused to open, accept or cancel an offer. Nothing was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransferRefusal {
    /// No such ticket or offer, or not the caller's to act on.
    NotFound,
    /// The ticket already has an open offer.
    AlreadyOffered,
    /// The ticket is not at the offer's version or no longer with the offer's holder.
    Superseded,
    /// The ticket was admitted at a gate.
    CheckedIn,
    /// The ticket's order is not (or no longer) paid for.
    NotPaid(OrderState),
    /// The offer was accepted, cancelled or lapsed before.
    Ended(TransferState),
    /// The recipient would hold more tickets of the event than its limit allows.
    LimitExceeded,
    /// The ticket is listed on the exchange (open, or reserved by a swap): an offer
    /// beside the listing would leave one of them stale, so the holder withdraws the
    /// listing first.
    Listed,
}

/// What an accept hands back: the offer as ended and the ticket at its new version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    pub offer: TransferOffer,
    pub ticket: TicketRow,
}

/// An acceptance, as the engine asks the store for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accept {
    pub transfer: TransferId,
    pub by: BuyerId,
    /// The event's per-buyer limit now (as for a commit).
    pub max_per_buyer: u32,
    pub now: Millis,
}
