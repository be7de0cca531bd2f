//! Transfers: a holder offers a ticket to another buyer, who accepts (or the holder
//! withdraws the offer, or it lapses). The event's rules decide whether and until when
//! (`sale.transfers`); the ledger moves the ticket in one transaction on accept: new
//! holder, new version (so a new barcode, and the old one is refused at the door and
//! listed as superseded in every gate bundle), the sold seat's buyer, both buyers'
//! ticket counts under the event's limit, and a `transferred` line in the order's
//! history that goes out as an order event.

use boxoffice_domain::ticket::TicketId;
use boxoffice_domain::transfers::{TransferClosed, transfer_allowed};
use boxoffice_domain::{BuyerId, EventId, Millis, TransferId};
use serde::Serialize;

use super::{TicketRefusal, TicketStatus, TicketView};
use crate::ports::{Accept, TransferOffer, TransferRefusal, TransferState};
use crate::waiting::Refusal;
use crate::waiting::limits::Key;
use crate::{BuyerSession, Engine, EngineError, Resource};

/// Most offers listed on each side of `GET /v1/me/transfers`.
pub const MAX_LISTED: u32 = 100;

/// An offer as its two parties see it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct TransferView {
    pub transfer_id: TransferId,
    pub ticket_id: TicketId,
    pub event_id: EventId,
    pub from_buyer_id: BuyerId,
    pub to_buyer_id: BuyerId,
    /// As of the answer: an open offer past its time shows `expired`.
    pub state: TransferState,
    pub created_at: Millis,
    pub expires_at: Millis,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Millis>,
}

/// An accepted offer and the ticket as its new holder now has it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = AcceptedTransfer)]
pub struct AcceptedView {
    pub transfer: TransferView,
    pub ticket: TicketView,
}

/// The caller's offers, newest first.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct MyTransfers {
    pub incoming: Vec<TransferView>,
    pub outgoing: Vec<TransferView>,
}

impl TransferView {
    fn of(o: &TransferOffer, now: Millis) -> TransferView {
        TransferView {
            transfer_id: o.id,
            ticket_id: o.ticket,
            event_id: o.event,
            from_buyer_id: o.from,
            to_buyer_id: o.to,
            state: o.state_at(now),
            created_at: o.created_at,
            expires_at: o.expires_at,
            ended_at: o.ended_at,
        }
    }
}

impl Engine {
    /// Takes one transfer write from the buyer's allowance, or refuses with how long to
    /// wait; checked before the replay store, as a hold attempt is.
    pub fn limit_transfer(&self, who: &BuyerSession) -> Result<(), Refusal> {
        let limit = self.config.waiting.transfer_per_buyer;
        let key = Key::TransferBuyer(who.buyer);
        self.waiting.limits.check(key, limit, self.now())
    }

    /// POST /v1/tickets/{id}/transfers: the holder offers the ticket to `to`.
    #[tracing::instrument(skip_all, fields(ticket = %id))]
    pub async fn offer_transfer(
        &self,
        who: &BuyerSession,
        id: TicketId,
        to: BuyerId,
    ) -> Result<TransferView, EngineError> {
        let facts = self.held_ticket(who, id).await?;
        if to == who.buyer {
            return Err(TicketRefusal::TransferToSelf.into());
        }
        match super::holders::status(&facts) {
            TicketStatus::Valid => {}
            TicketStatus::CheckedIn => return Err(not_transferable("it was scanned at a gate")),
            TicketStatus::Revoked => return Err(not_transferable("its order was cancelled")),
        }
        let now = self.now();
        let rules = self.transfer_rules(facts.ticket.event, now).await?;
        let offer = TransferOffer {
            id: TransferId::random(),
            ticket: id,
            event: facts.ticket.event,
            from: who.buyer,
            to,
            version: facts.ticket.version,
            state: TransferState::Offered,
            created_at: now,
            expires_at: rules.offer_expires_at(now),
            ended_at: None,
        };
        match self.tickets_port()?.offer_transfer(&offer).await? {
            Ok(()) => Ok(TransferView::of(&offer, now)),
            Err(no) => Err(refused(no, Resource::Ticket, 0)),
        }
    }

    /// POST /v1/transfers/{id}/accept: the recipient takes the ticket.
    #[tracing::instrument(skip_all, fields(transfer = %id))]
    pub async fn accept_transfer(
        &self,
        who: &BuyerSession,
        id: TransferId,
    ) -> Result<AcceptedView, EngineError> {
        let port = self.tickets_port()?;
        let offer = (port.transfer(id).await?)
            .filter(|o| o.to == who.buyer)
            .ok_or(EngineError::NotFound(Resource::Transfer))?;
        let now = self.now();
        self.transfer_rules(offer.event, now).await?;
        let limit = self
            .event(offer.event)
            .await?
            .event
            .sale
            .max_tickets_per_buyer;
        let accept = Accept {
            transfer: id,
            by: who.buyer,
            max_per_buyer: limit,
            now,
        };
        let done = match port.accept_transfer(&accept).await? {
            Ok(done) => done,
            Err(no) => return Err(refused(no, Resource::Transfer, limit)),
        };
        metrics::counter!("boxoffice_tickets_transferred_total").increment(1);
        let (event, seat) = (done.ticket.event, done.ticket.seat.as_str());
        self.hot_store_gives(event, seat, done.offer.from, done.offer.to)
            .await;
        let facts = (port.ticket(done.ticket.id).await?)
            .ok_or_else(|| EngineError::Internal("the transferred ticket vanished".into()))?;
        Ok(AcceptedView {
            transfer: TransferView::of(&done.offer, now),
            ticket: self.view(&facts).await?,
        })
    }

    /// DELETE /v1/transfers/{id}: the holder withdraws an open offer.
    #[tracing::instrument(skip_all, fields(transfer = %id))]
    pub async fn cancel_transfer(
        &self,
        who: &BuyerSession,
        id: TransferId,
    ) -> Result<TransferView, EngineError> {
        let now = self.now();
        match (self.tickets_port()?)
            .cancel_transfer(id, who.buyer, now)
            .await?
        {
            Ok(ended) => Ok(TransferView::of(&ended, now)),
            Err(no) => Err(refused(no, Resource::Transfer, 0)),
        }
    }

    /// GET /v1/me/transfers: the newest offers the caller made and received.
    pub async fn my_transfers(&self, who: &BuyerSession) -> Result<MyTransfers, EngineError> {
        let now = self.now();
        let all = (self.tickets_port()?)
            .transfers_of(who.buyer, MAX_LISTED)
            .await?;
        let (outgoing, incoming): (Vec<_>, Vec<_>) = all
            .iter()
            .map(|o| TransferView::of(o, now))
            .partition(|v| v.from_buyer_id == who.buyer);
        Ok(MyTransfers { incoming, outgoing })
    }

    /// The event's transfer rules, if its tickets may change hands at `now`.
    async fn transfer_rules(
        &self,
        event: EventId,
        now: Millis,
    ) -> Result<boxoffice_domain::transfers::TransferRules, EngineError> {
        let entry = self.event(event).await?;
        let rules = entry.event.sale.transfers;
        match transfer_allowed(rules.as_ref(), now) {
            Ok(()) => rules.ok_or_else(|| EngineError::Internal("no transfer rules".into())),
            Err(TransferClosed::NotTransferable) => Err(TicketRefusal::TransfersNotAllowed.into()),
            Err(TransferClosed::WindowClosed) => Err(TicketRefusal::TransferWindowClosed.into()),
            Err(TransferClosed::ExchangeOnly) => Err(TicketRefusal::TransfersExchangeOnly.into()),
        }
    }
}

fn not_transferable(why: &'static str) -> EngineError {
    TicketRefusal::NotTransferable(why).into()
}

/// The store's refusal as the API's: `missing` names what was not found.
fn refused(no: TransferRefusal, missing: Resource, limit: u32) -> EngineError {
    match no {
        TransferRefusal::NotFound => EngineError::NotFound(missing),
        TransferRefusal::AlreadyOffered => TicketRefusal::TransferPending.into(),
        TransferRefusal::Superseded => not_transferable("it changed since the offer was made"),
        TransferRefusal::CheckedIn => not_transferable("it was scanned at a gate"),
        TransferRefusal::NotPaid(_) => not_transferable("its order was cancelled"),
        TransferRefusal::Ended(state) => TicketRefusal::TransferEnded(state).into(),
        TransferRefusal::LimitExceeded => EngineError::LimitExceeded { limit },
        TransferRefusal::Listed => TicketRefusal::TicketListed.into(),
    }
}
