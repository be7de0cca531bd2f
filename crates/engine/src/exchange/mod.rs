//! The face-value exchange: a holder lists a ticket at no more than its face value
//! (what its seat cost in the holder's order), any buyer admitted by the waiting room
//! takes it, and the swap (`swap.rs`) charges the buyer, moves the ticket to a new
//! version and refunds the seller the face value less the event's fee. The event's
//! `sale.exchange` says whether and until when; the ledger keeps the rest
//! (`ports::Exchange`).

mod swap;

use std::sync::Arc;

use boxoffice_domain::exchange::{ExchangeClosed, ExchangeRules, ListingState, exchange_open};
use boxoffice_domain::ticket::TicketId;
use boxoffice_domain::{EventId, ListingId, Millis, Money};
use serde::Serialize;

pub use swap::SwapView;

use crate::ports::{Exchange, Listing, ListingRefusal};
use crate::tickets::{TicketStatus, ticket_status};
use crate::{BuyerSession, Engine, EngineError, Resource};

/// Most listings in one page of `GET /v1/events/{id}/listings`.
pub const MAX_PAGE: u32 = 200;

/// Why an exchange request is refused. Nothing was changed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExchangeRefusal {
    #[error("tickets of this event cannot be resold on the exchange")]
    NotAvailable,
    #[error("the exchange for this event has closed")]
    Closed,
    #[error("a ticket can be listed for at most its face value ({} minor units)", .0.0)]
    AboveFaceValue(Money),
    #[error("this ticket cannot be listed: {0}")]
    NotListable(&'static str),
    #[error("this ticket is already listed or offered to someone; withdraw that first")]
    AlreadyListed,
    #[error("this listing is {} already", .0.as_str())]
    NotOpen(ListingState),
    #[error("you cannot buy your own listing")]
    OwnListing,
}

impl From<ExchangeRefusal> for EngineError {
    fn from(r: ExchangeRefusal) -> EngineError {
        EngineError::Exchange(r)
    }
}

/// A listing as buyers and its seller see it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Listing)]
pub struct ListingView {
    pub listing_id: ListingId,
    pub event_id: EventId,
    pub ticket_id: TicketId,
    pub seat_id: String,
    /// The seat's `index` in the seat map and the availability bitmap, so a map can
    /// mark the seats on the exchange.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seat_index: Option<u32>,
    /// What a buyer pays, in the event's currency's minor units.
    pub price: Money,
    pub state: ListingState,
    pub created_at: Millis,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Millis>,
}

impl ListingView {
    fn of(l: &Listing) -> ListingView {
        ListingView {
            listing_id: l.id,
            event_id: l.event,
            ticket_id: l.ticket,
            seat_id: l.seat.clone(),
            seat_index: None,
            price: l.price,
            state: l.state,
            created_at: l.created_at,
            ended_at: l.ended_at,
        }
    }
}

/// One page of an event's open listings, in id order.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = ListingPage)]
pub struct ListingPage {
    pub listings: Vec<ListingView>,
    /// Pass as `after` for the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_after: Option<ListingId>,
}

/// The store's refusal as the buyer hears it.
fn refused(no: ListingRefusal, limit: u32) -> EngineError {
    match no {
        ListingRefusal::NotFound => EngineError::NotFound(Resource::Listing),
        ListingRefusal::AlreadyListed => ExchangeRefusal::AlreadyListed.into(),
        ListingRefusal::Superseded => ExchangeRefusal::NotListable("it changed hands").into(),
        ListingRefusal::CheckedIn => {
            ExchangeRefusal::NotListable("it was scanned at a gate").into()
        }
        ListingRefusal::NotPaid(_) => {
            ExchangeRefusal::NotListable("its order was cancelled").into()
        }
        ListingRefusal::NotOpen(s) => ExchangeRefusal::NotOpen(s).into(),
        ListingRefusal::LimitExceeded => EngineError::LimitExceeded { limit },
        ListingRefusal::OwnListing => ExchangeRefusal::OwnListing.into(),
        ListingRefusal::SoldOn => ExchangeRefusal::NotListable(
            "it was sold on through the exchange before: the payment that bought it paid \
             its seller back once already",
        )
        .into(),
    }
}

impl Engine {
    /// Adds the exchange's record: without it, the exchange calls answer `Unavailable`.
    pub fn with_exchange(mut self, exchange: Arc<dyn Exchange>) -> Engine {
        self.exchange = Some(exchange);
        self
    }

    fn exchange_port(&self) -> Result<&Arc<dyn Exchange>, EngineError> {
        self.exchange
            .as_ref()
            .ok_or_else(|| EngineError::Unavailable("this node keeps no exchange".into()))
    }

    /// The event's exchange rules, if its tickets may be listed or bought at `now`.
    async fn exchange_rules(
        &self,
        event: EventId,
        now: Millis,
    ) -> Result<ExchangeRules, EngineError> {
        let rules = self.event(event).await?.event.sale.exchange;
        match (exchange_open(rules.as_ref(), now), rules) {
            (Ok(()), Some(r)) => Ok(r),
            (Err(ExchangeClosed::WindowClosed), _) => Err(ExchangeRefusal::Closed.into()),
            _ => Err(ExchangeRefusal::NotAvailable.into()),
        }
    }

    /// POST /v1/tickets/{id}/listings: the holder lists the ticket at `price`, at most
    /// its face value.
    #[tracing::instrument(skip_all, fields(ticket = %id))]
    pub async fn list_ticket(
        &self,
        who: &BuyerSession,
        id: TicketId,
        price: Money,
    ) -> Result<ListingView, EngineError> {
        let facts = self.held_ticket(who, id).await?;
        match ticket_status(&facts) {
            TicketStatus::Valid => {}
            TicketStatus::CheckedIn => {
                return Err(ExchangeRefusal::NotListable("it was scanned at a gate").into());
            }
            TicketStatus::Revoked => {
                return Err(ExchangeRefusal::NotListable("its order was cancelled").into());
            }
        }
        let t = &facts.ticket;
        let now = self.now();
        self.exchange_rules(t.event, now).await?;
        let order = (self.ports.ledger.order(t.order).await?)
            .ok_or_else(|| EngineError::Internal("a ticket's order vanished".into()))?;
        // A sale pays its seller back through the payment that bought the ticket (a
        // partial refund of its order): only that order's buyer can be paid so. A ticket
        // received by transfer, or bought on the exchange, would pay its first buyer.
        if order.buyer != who.buyer {
            return Err(ExchangeRefusal::NotListable(
                "only its first buyer can list it: a sale pays the seller back through \
                 the payment that bought it",
            )
            .into());
        }
        let face = face_value(&order, t.seat.as_str())?;
        if price.0 < 0 || price > face {
            return Err(ExchangeRefusal::AboveFaceValue(face).into());
        }
        let listing = Listing {
            id: ListingId::random(),
            ticket: id,
            event: t.event,
            seat: t.seat.as_str().to_owned(),
            seller: who.buyer,
            version: t.version,
            price,
            state: ListingState::Open,
            created_at: now,
            ended_at: None,
        };
        match self.exchange_port()?.list(&listing).await? {
            Ok(()) => {
                metrics::counter!("boxoffice_exchange_listed_total").increment(1);
                Ok(ListingView::of(&listing))
            }
            Err(no) => Err(refused(no, 0)),
        }
    }

    /// DELETE /v1/listings/{id}: the seller withdraws an open listing.
    #[tracing::instrument(skip_all, fields(listing = %id))]
    pub async fn withdraw_listing(
        &self,
        who: &BuyerSession,
        id: ListingId,
    ) -> Result<ListingView, EngineError> {
        let now = self.now();
        match self.exchange_port()?.withdraw(id, who.buyer, now).await? {
            Ok(l) => Ok(ListingView::of(&l)),
            Err(no) => Err(refused(no, 0)),
        }
    }

    /// GET /v1/events/{id}/listings: a page of the event's open listings (public).
    pub async fn listings(
        &self,
        event: EventId,
        after: Option<ListingId>,
        limit: u32,
    ) -> Result<ListingPage, EngineError> {
        let entry = self.event(event).await?;
        let limit = limit.clamp(1, MAX_PAGE);
        let found = (self.exchange_port()?)
            .open_listings(event, after, limit)
            .await?;
        let next_after = (found.len() == limit as usize)
            .then(|| found.last().map(|l| l.id))
            .flatten();
        Ok(ListingPage {
            listings: (found.iter())
                .map(|l| ListingView {
                    seat_index: entry.seat_index.get(&l.seat).copied(),
                    ..ListingView::of(l)
                })
                .collect(),
            next_after,
        })
    }

    /// The event a listing is of: a purchase's admission token must be for it.
    pub async fn listing_event(&self, id: ListingId) -> Result<EventId, EngineError> {
        (self.exchange_port()?.listing(id).await?)
            .map(|l| l.event)
            .ok_or(EngineError::NotFound(Resource::Listing))
    }
}

/// What the seat cost in its order: the most a listing of it may ask.
fn face_value(order: &crate::ports::Order, seat: &str) -> Result<Money, EngineError> {
    (order.seats.iter())
        .find(|s| s.seat_id == seat)
        .map(|s| s.price)
        .ok_or_else(|| EngineError::Internal("a ticket's seat is not in its order".into()))
}
