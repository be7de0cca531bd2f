//! Attendee names as the `Tickets` port keeps them: the holder puts a name on a ticket,
//! which issues the ticket's next version (so a new barcode carrying the name, and the
//! old one is refused at the door).
//!
//! The store keeps two rules whatever the number of nodes: a rename is conditional on
//! the version the holder saw, so of renames racing over one version exactly one wins;
//! and a counted rename (a change of an existing name) is conditional on the ticket's
//! count of changes being under the limit, so racing changes cannot pass it. A refusal
//! writes nothing.

use boxoffice_domain::ticket::{AttendeeName, TicketId};
use boxoffice_domain::{BuyerId, Millis, OrderState};

use super::TicketFacts;

/// A rename, as the engine asks the store for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rename {
    pub ticket: TicketId,
    /// The holder: nobody else renames a ticket.
    pub by: BuyerId,
    /// The version the holder renames; the ticket must still be at it.
    pub version: u32,
    pub attendee: AttendeeName,
    /// `Some(limit)` when the rename changes a name already on the ticket: it counts
    /// against the limit of changes per ticket. `None` for naming an unnamed ticket.
    pub counted: Option<u32>,
    pub now: Millis,
}

/// Why the store refused a rename. Nothing was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RenameRefusal {
    /// No such ticket, or not the caller's.
    NotFound,
    /// The ticket is no longer at the version renamed (another rename or a transfer
    /// came first), or its name was set since the version was read.
    Superseded,
    /// The ticket was admitted at a gate.
    CheckedIn,
    /// The ticket's order is not (or no longer) paid for.
    NotPaid(OrderState),
    /// The ticket's name was changed as many times as the event allows.
    LimitReached { limit: u32 },
    /// The ticket has a live listing on the exchange (open, or reserved by a buyer who
    /// is paying): a new version would leave the listing stale and its buyer refunded.
    Listed,
}

impl Rename {
    /// Why the store refuses this rename of the ticket as it stands (read in the same
    /// transaction as the write); `None`: it may go ahead.
    pub fn refusal(&self, facts: &TicketFacts) -> Option<RenameRefusal> {
        let t = &facts.ticket;
        if t.holder != self.by {
            Some(RenameRefusal::NotFound)
        } else if t.version != self.version || t.attendee.is_some() != self.counted.is_some() {
            Some(RenameRefusal::Superseded)
        } else if facts.checked_in.is_some() {
            Some(RenameRefusal::CheckedIn)
        } else if facts.order_state != OrderState::Confirmed {
            Some(RenameRefusal::NotPaid(facts.order_state))
        } else {
            match self.counted {
                Some(limit) if facts.name_changes >= limit => {
                    Some(RenameRefusal::LimitReached { limit })
                }
                _ => None,
            }
        }
    }
}
