//! The engine's one error type. Every variant is something a client can act on, except
//! `Unavailable` (retry later) and `Internal` (a bug); the HTTP layer maps each to a
//! status and a stable code.

use boxoffice_domain::HoldState;
use boxoffice_domain::token::TokenError;

use crate::ports::{ArbiterError, LedgerError, StoreError};

/// What a request named that does not exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    Event,
    Seat,
    Section,
    Hold,
    Order,
    Ticket,
    Gate,
    Transfer,
    Listing,
    WebhookEndpoint,
}

impl Resource {
    pub fn as_str(self) -> &'static str {
        match self {
            Resource::Event => "event",
            Resource::Seat => "seat",
            Resource::Section => "section",
            Resource::Hold => "hold",
            Resource::Order => "order",
            Resource::Ticket => "ticket",
            Resource::Gate => "gate",
            Resource::Transfer => "transfer",
            Resource::Listing => "listing",
            Resource::WebhookEndpoint => "webhook endpoint",
        }
    }
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0} not found")]
    NotFound(Resource),
    #[error("{0}")]
    Invalid(String),
    #[error("the token is not accepted: {0}")]
    BadToken(TokenError),
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("{0}")]
    Proof(crate::possession::ProofRefusal),
    #[error("your turn in the queue has not come yet")]
    NotAdmitted,
    #[error(
        "your admission to this sale has ended; each buyer is admitted once, for a limited time"
    )]
    AdmissionExpired,
    #[error("the sale for this event is not open")]
    SaleNotOpen,
    #[error("the sale for this event has closed")]
    SaleClosed,
    #[error("one of those seats was just claimed by someone else")]
    SeatUnavailable,
    #[error("not enough seats are left")]
    SoldOut,
    #[error("that would take you past the limit of {limit} tickets for this event")]
    LimitExceeded { limit: u32 },
    #[error("your hold has expired")]
    HoldExpired,
    #[error("the hold is {0:?}")]
    HoldNotActive(HoldState),
    #[error("a checkout of this hold is already running")]
    CheckoutInProgress,
    #[error("the payment was declined: {0}")]
    PaymentDeclined(String),
    #[error("that seat sold to another buyer; your card was not charged")]
    SeatSold,
    #[error("{0}")]
    Ticket(crate::tickets::TicketRefusal),
    #[error("{0}")]
    Exchange(crate::exchange::ExchangeRefusal),
    #[error("the order is {0:?}: only a sale (committed or confirmed) can be cancelled")]
    OrderNotCancellable(boxoffice_domain::OrderState),
    #[error("orders of this event cannot be returned by their buyers now")]
    RefundWindowClosed,
    #[error("a ticket of this order was scanned at a gate: its buyer can no longer return it")]
    OrderUsed,
    #[error(
        "a ticket of this order was given to someone else: returning the order would take \
         their ticket, so its buyer can no longer return it"
    )]
    OrderGivenAway,
    #[error("this event is cancelled; its orders are being refunded")]
    EventCancelled,
    #[error("this event is not cancelled")]
    EventNotCancelled,
    #[error(
        "too many payment attempts or declines for this event from this buyer, card or network; retry in {retry_after_s} s"
    )]
    PaymentVelocity { retry_after_s: u64 },
    #[error("too many declined payments: this buyer can no longer check out for this event")]
    BuyerLocked,
    #[error("this {0} is already used by too many buyers for this event")]
    TooManyBuyers(&'static str),
    #[error("{0}")]
    SinkInUse(&'static str),
    #[error("temporarily unavailable: {0}")]
    Unavailable(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<StoreError> for EngineError {
    fn from(e: StoreError) -> Self {
        EngineError::Unavailable(e.0)
    }
}

impl From<TokenError> for EngineError {
    fn from(e: TokenError) -> Self {
        EngineError::BadToken(e)
    }
}

impl From<LedgerError> for EngineError {
    fn from(e: LedgerError) -> Self {
        match e {
            LedgerError::NotFound => EngineError::NotFound(Resource::Order),
            LedgerError::Conflict(s) => EngineError::Internal(format!("order unexpectedly {s:?}")),
            LedgerError::Used => EngineError::OrderUsed,
            LedgerError::GivenAway => EngineError::OrderGivenAway,
            LedgerError::Store(s) => s.into(),
        }
    }
}

impl From<ArbiterError> for EngineError {
    fn from(e: ArbiterError) -> Self {
        use ArbiterError as A;
        match e {
            A::UnknownEvent => EngineError::Unavailable("the event is being rebuilt; retry".into()),
            A::SeatUnavailable(_) => EngineError::SeatUnavailable,
            A::NoSuchSeat(_) => EngineError::NotFound(Resource::Seat),
            A::NoSuchSection => EngineError::NotFound(Resource::Section),
            A::SoldOut => EngineError::SoldOut,
            A::LimitExceeded { limit } => EngineError::LimitExceeded { limit },
            A::UnknownHold => EngineError::NotFound(Resource::Hold),
            A::Expired => EngineError::HoldExpired,
            A::WrongState(s) => EngineError::HoldNotActive(s),
            A::BadQuantity => EngineError::Invalid(
                "quantity must be at least 1 and within the per-buyer limit".into(),
            ),
            A::Store(s) => s.into(),
        }
    }
}

impl From<crate::ports::IdentityError> for EngineError {
    fn from(e: crate::ports::IdentityError) -> Self {
        match e {
            crate::ports::IdentityError::Refused(t) => EngineError::BadToken(t),
            crate::ports::IdentityError::Unavailable(s) => EngineError::Unavailable(s),
        }
    }
}
