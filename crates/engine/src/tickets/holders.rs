//! Tickets as their holders see them: written by the ledger for each seat of an order
//! when its capture is recorded, shown with their barcode while they are valid.

use boxoffice_domain::ticket::{AttendeeName, EventKeys, SeatLabel, Ticket, TicketId};
use boxoffice_domain::{EventId, Millis, OrderState};
use serde::Serialize;

use crate::ports::{FirstScan, Order, TicketFacts, TicketRow};
use crate::{BuyerSession, Engine, EngineError, Resource};

/// Where a ticket stands, derived from its order and its check-in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TicketStatus {
    /// Paid for, not scanned yet.
    Valid,
    /// Admitted at a gate.
    CheckedIn,
    /// Its order was refunded or cancelled: the door refuses it.
    Revoked,
}

/// A ticket as its holder sees it. The barcode is shown only while the ticket is valid
/// or checked in; for rotating barcodes it is the signed part, to which the holder's
/// device appends the code of the moment, made with `ticket_secret`.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct TicketView {
    pub ticket_id: TicketId,
    pub event_id: EventId,
    #[schema(value_type = String)]
    pub seat: SeatLabel,
    /// Raised by every change of holder or attendee; older versions' barcodes are
    /// revoked.
    #[schema(minimum = 1)]
    pub version: u32,
    pub status: TicketStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub attendee: Option<AttendeeName>,
    /// The QR code's text (base45); absent when revoked. Rotating: the signed part, to
    /// which the holder appends the code of the moment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub barcode: Option<String>,
    pub rotating: bool,
    /// Rotating barcodes: the secret the holder's device makes codes with (unpadded
    /// base64url).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ticket_secret: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked_in_at: Option<Millis>,
}

pub(crate) fn status(facts: &TicketFacts) -> TicketStatus {
    match (facts.order_state, &facts.checked_in) {
        (OrderState::Confirmed, None) => TicketStatus::Valid,
        (OrderState::Confirmed, Some(_)) => TicketStatus::CheckedIn,
        _ => TicketStatus::Revoked,
    }
}

fn domain_ticket(row: &TicketRow) -> Ticket {
    Ticket {
        id: row.id,
        event: row.event,
        seat: row.seat.clone(),
        holder: row.holder,
        version: row.version,
        attendee: row.attendee.clone(),
    }
}

impl Engine {
    /// GET /v1/me/tickets: the caller's tickets (writing those of orders paid before the
    /// ledger wrote tickets at capture).
    pub async fn my_tickets(&self, who: &BuyerSession) -> Result<Vec<TicketView>, EngineError> {
        let shown = crate::checkout::BUYER_ORDERS_SHOWN;
        let orders = self.ports.ledger.orders_of_buyer(who.buyer, shown).await?;
        for order in orders.iter().filter(|o| o.state == OrderState::Confirmed) {
            self.issue_tickets(order).await?;
        }
        let held = self.tickets_port()?.tickets_of_holder(who.buyer).await?;
        let mut out = Vec::with_capacity(held.len());
        for facts in held {
            out.push(self.view(&facts).await?);
        }
        Ok(out)
    }

    /// Writes the tickets of a paid order that are not written yet: the ledger writes
    /// them when it records the capture, so only orders captured before it did find
    /// any missing here.
    async fn issue_tickets(&self, order: &Order) -> Result<(), EngineError> {
        let port = self.tickets_port()?;
        let existing = port.tickets_of_order(order.id).await?;
        if existing.len() >= order.seats.len() {
            return Ok(());
        }
        let rows = TicketRow::first_of(order, self.now())?;
        Ok(port.insert_tickets(&rows).await?)
    }

    /// GET /v1/tickets/{id}: the holder's ticket. Another buyer's ticket is not found,
    /// as an unknown one is: a ticket id tells nobody else anything.
    pub async fn ticket_for(
        &self,
        who: &BuyerSession,
        id: TicketId,
    ) -> Result<TicketView, EngineError> {
        let facts = self.held_ticket(who, id).await?;
        self.view(&facts).await
    }

    /// The text to put in the QR code now: a rotating barcode with the code of this
    /// moment. `None` when the ticket is revoked.
    pub async fn barcode_now(
        &self,
        who: &BuyerSession,
        id: TicketId,
    ) -> Result<Option<String>, EngineError> {
        let facts = self.held_ticket(who, id).await?;
        if status(&facts) == TicketStatus::Revoked {
            return Ok(None);
        }
        let keys = self.event_keys(facts.ticket.event).await?;
        let (barcode, secret) = issue(&keys, &facts.ticket)?;
        Ok(Some(match secret {
            Some(secret) => barcode.text_at(&secret, self.now()),
            None => barcode.text(),
        }))
    }

    pub(crate) async fn held_ticket(
        &self,
        who: &BuyerSession,
        id: TicketId,
    ) -> Result<TicketFacts, EngineError> {
        let facts = self.tickets_port()?.ticket(id).await?;
        facts
            .filter(|f| f.ticket.holder == who.buyer)
            .ok_or(EngineError::NotFound(Resource::Ticket))
    }

    pub(super) async fn view(&self, facts: &TicketFacts) -> Result<TicketView, EngineError> {
        let t = &facts.ticket;
        let status = status(facts);
        let keys = self.event_keys(t.event).await?;
        let (barcode, secret) = match status {
            TicketStatus::Revoked => (None, None),
            _ => {
                let (b, s) = issue(&keys, t)?;
                (Some(b.text()), s.map(|s| s.to_base64()))
            }
        };
        Ok(TicketView {
            ticket_id: t.id,
            event_id: t.event,
            seat: t.seat.clone(),
            version: t.version,
            status,
            attendee: t.attendee.clone(),
            barcode,
            rotating: keys.rotation().is_some(),
            ticket_secret: secret,
            checked_in_at: facts.checked_in.as_ref().map(|c: &FirstScan| c.at),
        })
    }
}

/// The barcode of the ticket's current version, as issued when the version was made.
fn issue(
    keys: &EventKeys,
    row: &TicketRow,
) -> Result<
    (
        boxoffice_domain::ticket::Barcode,
        Option<boxoffice_domain::ticket::TicketSecret>,
    ),
    EngineError,
> {
    keys.issue(&domain_ticket(row), row.issued_at)
        .map_err(|e| EngineError::Internal(format!("issuing a barcode: {e}")))
}
