//! Names on tickets: the holder puts the attendee's name on a ticket (`PUT
//! /v1/tickets/{id}/attendee`). Naming a ticket that has none (an event that asks for
//! names before the doors, or a ticket just received by transfer) is always allowed
//! until it is scanned; changing a name already there is a name change, allowed by
//! the event's transfer policy (`free` or `name_change_only`) until its cutoff and at
//! most `max_name_changes` times per ticket. Either way the ledger issues the ticket's
//! next version in one conditional step, so the new barcode carries the name and the
//! old one is refused at the door.

use boxoffice_domain::attendees::{AttendeeNames, NamesRefusal, names_for_checkout};
use boxoffice_domain::ticket::{AttendeeName, TicketId};
use boxoffice_domain::transfers::{TransferClosed, name_change_allowed};
use boxoffice_domain::{Event, Millis};

use super::{TicketRefusal, TicketStatus, TicketView};
use crate::ports::{Rename, RenameRefusal, TicketFacts};
use crate::{BuyerSession, Engine, EngineError, Resource};

impl Engine {
    /// PUT /v1/tickets/{id}/attendee: the holder names the ticket's attendee. The same
    /// name again changes nothing.
    #[tracing::instrument(skip_all, fields(ticket = %id))]
    pub async fn set_attendee(
        &self,
        who: &BuyerSession,
        id: TicketId,
        name: AttendeeName,
    ) -> Result<TicketView, EngineError> {
        let facts = self.held_ticket(who, id).await?;
        let entry = self.event(facts.ticket.event).await?;
        if !entry.event.sale.attendee_names.is_on() {
            return Err(TicketRefusal::NamesNotTaken.into());
        }
        match super::holders::status(&facts) {
            TicketStatus::Valid => {}
            TicketStatus::CheckedIn => return Err(not_renamable("it was scanned at a gate")),
            TicketStatus::Revoked => return Err(not_renamable("its order was cancelled")),
        }
        if facts.ticket.attendee.as_ref() == Some(&name) {
            return self.view(&facts).await;
        }
        let now = self.now();
        let rename = Rename {
            ticket: id,
            by: who.buyer,
            version: facts.ticket.version,
            counted: change_limit(&entry.event, &facts, now)?,
            attendee: name,
            now,
        };
        let port = self.tickets_port()?;
        if let Err(no) = port.rename_ticket(&rename).await? {
            return Err(refused(no));
        }
        metrics::counter!("boxoffice_tickets_renamed_total").increment(1);
        let facts = (port.ticket(id).await?)
            .ok_or_else(|| EngineError::Internal("the renamed ticket vanished".into()))?;
        self.view(&facts).await
    }
}

/// The attendee names a checkout of `seats` seats records for `event`.
pub(crate) fn checkout_names(
    event: &Event,
    names: Vec<AttendeeName>,
    seats: usize,
) -> Result<Vec<Option<AttendeeName>>, EngineError> {
    let policy: AttendeeNames = event.sale.attendee_names;
    names_for_checkout(policy, names, seats)
        .map_err(|no: NamesRefusal| TicketRefusal::AttendeeNames(no).into())
}

/// `None` when the rename names an unnamed ticket (never counted); otherwise the limit
/// of changes the event allows, if it allows them at `now`.
fn change_limit(
    event: &Event,
    facts: &TicketFacts,
    now: Millis,
) -> Result<Option<u32>, EngineError> {
    if facts.ticket.attendee.is_none() {
        return Ok(None);
    }
    let limit = match name_change_allowed(event.sale.transfers.as_ref(), now) {
        Ok(limit) => limit,
        Err(TransferClosed::WindowClosed) => return Err(TicketRefusal::NameChangesClosed.into()),
        Err(TransferClosed::NotTransferable | TransferClosed::ExchangeOnly) => {
            return Err(TicketRefusal::NameChangesNotAllowed.into());
        }
    };
    if facts.name_changes >= limit {
        return Err(TicketRefusal::NameChangeLimit { limit }.into());
    }
    Ok(Some(limit))
}

fn not_renamable(why: &'static str) -> EngineError {
    TicketRefusal::NotRenamable(why).into()
}

fn refused(no: RenameRefusal) -> EngineError {
    match no {
        RenameRefusal::NotFound => EngineError::NotFound(Resource::Ticket),
        RenameRefusal::Superseded => TicketRefusal::TicketChanged.into(),
        RenameRefusal::CheckedIn => not_renamable("it was scanned at a gate"),
        RenameRefusal::NotPaid(_) => not_renamable("its order was cancelled"),
        RenameRefusal::LimitReached { limit } => TicketRefusal::NameChangeLimit { limit }.into(),
        RenameRefusal::Listed => TicketRefusal::TicketListed.into(),
    }
}
