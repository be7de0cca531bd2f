//! The after-sale: tickets a door can trust, and check-in.
//!
//! - **Keys** (`keys.rs`): each event's Ed25519 barcode keys live in the ledger, made
//!   on first use (the first ticket shown, the first key set read); the operator
//!   rotates and retires them and turns rotating barcodes on or off.
//! - **Tickets** (`holders.rs`): a ticket exists for each seat of a `confirmed` order,
//!   the money captured: no ticket without money. A committed order whose capture is
//!   still pending (`committed`, `pending_capture`) owns its seats but has no tickets
//!   yet; its buyer sees them once the capture lands. The ledger writes the ticket rows
//!   in the transaction that records the capture (`TicketRow::first_of`), with ids
//!   derived from (order, seat), so writing them twice is harmless and the sale's commit
//!   path is untouched; a listing writes only those of orders captured before that.
//! - **Validity is derived, never stored**: a ticket admits only while its order is
//!   `confirmed`. A refund or a cancellation moves the order to another state, and from
//!   that moment the door refuses the ticket and the gate bundle lists it as revoked;
//!   the refund code makes no call of its own.
//! - **The door** (`door.rs`): gate devices hold a credential (stored as a digest);
//!   a scan verifies the barcode, then the ledger admits the ticket once, in one
//!   conditional step (`Tickets::check_in`), however many gates and nodes scan at once.
//!   Offline scans uploaded later are reconciled by scan time: the earliest wins.
//! - **Transfers** (`transfers.rs`): a holder offers a ticket to another buyer, who
//!   accepts; the ledger moves the ticket to a new version in one transaction, so the
//!   old barcode is refused at the door. The event's transfer policy says whether
//!   tickets move freely, only by a change of name, not at all, or only through the
//!   exchange.
//! - **Names** (`names.rs`): events that name attendees take the names at checkout
//!   or later from the holder; a name is signed into the barcode, and a change of name
//!   issues the next version, counted against the event's limit.

mod cancel;
mod door;
mod holders;
mod keys;
mod names;
mod transfers;

use std::sync::Arc;

use boxoffice_domain::ticket::BarcodeRefusal;

pub use cancel::TicketCancellation;
pub use door::{BatchItem, BatchOutcome, GateCreated, MAX_GATE_NAME, ScanRef, ScanVerdict};
pub(crate) use holders::status as ticket_status;
pub use holders::{TicketStatus, TicketView};
pub use keys::KeySetView;
pub(crate) use names::checkout_names;
pub use transfers::{AcceptedView, MAX_LISTED, MyTransfers, TransferView};

use crate::ports::{FirstScan, Tickets};
use crate::{Engine, EngineError};

/// Why a ticket, gate or key request is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TicketRefusal {
    #[error("that gate credential is not known")]
    GateUnknown,
    #[error("this gate device was revoked")]
    GateRevoked,
    #[error("this gate device is for another event")]
    GateWrongEvent,
    #[error("{0}")]
    Barcode(BarcodeRefusal),
    #[error("this ticket was cancelled: its order was refunded or cancelled")]
    NotPaid,
    #[error("already scanned at gate {} at {} ms", .0.gate_name, .0.at.0)]
    AlreadyScanned(FirstScan),
    #[error("the event has no such key, or it is already retired")]
    KeyNotFound,
    #[error("the current key cannot be retired; rotate first")]
    CurrentKey,
    #[error("the event already has the most keys it may have; retire one first")]
    TooManyKeys,
    #[error("this event's tickets cannot be transferred")]
    TransfersNotAllowed,
    #[error("transfers for this event have closed")]
    TransferWindowClosed,
    #[error("this ticket cannot be transferred: {0}")]
    NotTransferable(&'static str),
    #[error("this ticket is already offered to someone; cancel that offer first")]
    TransferPending,
    #[error("this offer is {} already", .0.as_str())]
    TransferEnded(crate::ports::TransferState),
    #[error("a ticket cannot be transferred to its own holder")]
    TransferToSelf,
    #[error(
        "this event's tickets change hands only through its face-value exchange: list the ticket there"
    )]
    TransfersExchangeOnly,
    #[error("{0}")]
    AttendeeNames(boxoffice_domain::attendees::NamesRefusal),
    #[error("this event's tickets carry no attendee names")]
    NamesNotTaken,
    #[error("the attendee's name on this event's tickets cannot be changed")]
    NameChangesNotAllowed,
    #[error("name changes for this event have closed")]
    NameChangesClosed,
    #[error("this ticket's name was changed {limit} times, as many as the event allows")]
    NameChangeLimit { limit: u32 },
    #[error("this ticket's name cannot be changed: {0}")]
    NotRenamable(&'static str),
    #[error("this ticket changed meanwhile (renamed or transferred); read it again")]
    TicketChanged,
    #[error("this ticket was already cancelled")]
    AlreadyCancelled,
    #[error("this ticket cannot be cancelled on its own: {0}")]
    NotCancellable(&'static str),
    #[error("this is the last ticket of its order: cancel the order instead")]
    LastTicketOfOrder,
    #[error("this ticket is listed on the exchange; withdraw the listing first")]
    TicketListed,
}

impl From<TicketRefusal> for EngineError {
    fn from(r: TicketRefusal) -> EngineError {
        EngineError::Ticket(r)
    }
}

impl Engine {
    /// Adds the after-sale record: without it, the ticket and gate calls answer
    /// `Unavailable`.
    pub fn with_tickets(mut self, tickets: Arc<dyn Tickets>) -> Engine {
        self.tickets = Some(tickets);
        self
    }

    pub(crate) fn tickets_port(&self) -> Result<&Arc<dyn Tickets>, EngineError> {
        self.tickets
            .as_ref()
            .ok_or_else(|| EngineError::Unavailable("this node keeps no ticket record".into()))
    }
}

/// 32 bytes from the operating system's generator, by way of the thread's CSPRNG.
fn random32() -> [u8; 32] {
    rand::random()
}
