//! The payment provider port. Every call is idempotent at the provider, keyed by our
//! order id, and every answer may be lost: the engine never trusts a single answer
//! (or a single webhook) and always asks `inquire` before it commits or gives money
//! back. A webhook is only a hint that something changed.

use async_trait::async_trait;
use boxoffice_domain::{Millis, Money, OrderId};
use serde::{Deserialize, Serialize};

use super::Order;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthorizeRequest {
    /// Our idempotency key at the provider: a retry never authorizes twice.
    pub order: OrderId,
    pub amount: Money,
    pub currency: String,
    pub payment_method: String,
}

/// What the buyer must do before the provider can decide (3-D Secure and the like).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NextAction {
    /// `poll`, or `redirect_to_url` for 3-D Secure and bank redirects; the provider's
    /// own word otherwise.
    #[serde(rename = "type")]
    pub kind: String,
    /// The order to poll, or the bank page to send the buyer to.
    #[schema(required)]
    pub url: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuthorizeOutcome {
    Approved {
        reference: String,
    },
    /// Nothing is decided yet: the buyer must act, and the provider's webhook (or an
    /// inquiry) tells us how it ended.
    ActionRequired {
        reference: String,
        next_action: NextAction,
    },
    Declined {
        reason: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderState {
    /// Waiting for the buyer (3-D Secure); no funds reserved yet.
    RequiresAction,
    Authorized,
    Captured,
    Voided,
    Declined,
    Refunded,
}

/// What the engine knows of an order when it asks the provider about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inquiry {
    pub order: OrderId,
    /// The provider's own reference, when the order has one: the provider is then read
    /// by it directly, which is exact, instead of searched by our order id.
    pub reference: Option<String>,
    /// When the order was created. A provider whose search lags (Stripe's is
    /// eventually consistent) may not list a payment made moments ago, so an adapter
    /// calls a miss final only once the order is old enough.
    pub created_at: Millis,
}

impl Inquiry {
    /// Everything the order knows: its id, its reference if any, its age.
    pub fn of(order: &Order) -> Inquiry {
        Inquiry {
            order: order.id,
            reference: order.payment_ref.clone().filter(|r| !r.is_empty()),
            created_at: order.created_at,
        }
    }

    /// Only the order id, for an order old enough that a miss is final (tools, tests).
    pub fn by_order(order: OrderId) -> Inquiry {
        Inquiry {
            order,
            reference: None,
            created_at: Millis(0),
        }
    }
}

/// What the provider says it did for one of our orders.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderPayment {
    pub order: OrderId,
    pub reference: String,
    pub amount: Money,
    pub state: ProviderState,
}

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum PaymentError {
    /// No answer in time: the provider may or may not have acted.
    #[error("the payment provider did not answer in time")]
    Timeout,
    #[error("the payment provider is unavailable: {0}")]
    Unavailable(String),
    #[error("the payment provider refused the request: {0}")]
    Rejected(String),
}

/// Asks `gateway` to authorize `req`, answering the provider's refusal of the request
/// (`PaymentError::Rejected`: a hard decline, the payment method or the request refused
/// outright, nothing charged) as the decline it is. Every payment the engine takes (a
/// checkout, an exchange purchase) authorizes through here, so each ends the payment,
/// tells the buyer `payment_declined` and counts the decline toward velocity alike; an
/// `Err` is then only an answer that did not come (money may have moved).
pub async fn authorize(
    gateway: &dyn PaymentGateway,
    req: &AuthorizeRequest,
) -> Result<AuthorizeOutcome, PaymentError> {
    match gateway.authorize(req).await {
        Err(PaymentError::Rejected(reason)) => Ok(AuthorizeOutcome::Declined { reason }),
        answer => answer,
    }
}

/// A webhook that passed the signature check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookEvent {
    /// The provider's event id (duplicates share it).
    pub id: String,
    /// The provider's event type, e.g. `payment_intent.succeeded`; informative only.
    pub kind: String,
    /// Our order, from the metadata we attached at authorization; `None` for payments
    /// that are not ours.
    pub order: Option<OrderId>,
    pub reference: String,
}

/// Why a webhook is refused. Each maps to a stable 400 code.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum WebhookError {
    #[error("the webhook signature header is missing or malformed")]
    MissingSignature,
    #[error("the webhook signature does not match")]
    BadSignature,
    #[error("the webhook was signed too long ago (or in the future)")]
    Stale,
    #[error("the webhook body is not an event we understand: {0}")]
    Malformed(String),
}

/// The payment provider. Every call is idempotent at the provider, keyed by our order.
#[async_trait]
pub trait PaymentGateway: Send + Sync {
    async fn authorize(&self, req: &AuthorizeRequest) -> Result<AuthorizeOutcome, PaymentError>;
    async fn capture(&self, order: OrderId, reference: &str) -> Result<(), PaymentError>;
    /// Cancels an authorization, or a payment still waiting for the buyer.
    async fn void(&self, order: OrderId, reference: &str) -> Result<(), PaymentError>;
    async fn refund(&self, order: OrderId, reference: &str) -> Result<(), PaymentError>;
    /// Gives back `amount` of a captured payment (one seat of an order, a seller's
    /// resale), keyed by `key`: a repeat with the same key refunds nothing more. The
    /// payment stays captured for the rest. A provider without partial refunds refuses.
    async fn refund_part(
        &self,
        order: OrderId,
        reference: &str,
        amount: Money,
        key: &str,
    ) -> Result<(), PaymentError> {
        let _ = (reference, amount, key);
        Err(PaymentError::Rejected(format!(
            "order {order}: this provider cannot refund part of a payment"
        )))
    }
    /// Asks what the provider did for this order, if anything: by the provider's
    /// reference when the inquiry has one, else by our order id. An adapter that cannot
    /// tell "never charged" from "not visible yet" answers an error (asked again later)
    /// rather than `None`.
    async fn inquire(&self, inquiry: &Inquiry) -> Result<Option<ProviderPayment>, PaymentError>;
    /// Asks about one payment by the provider's own reference.
    async fn inquire_reference(
        &self,
        reference: &str,
    ) -> Result<Option<ProviderPayment>, PaymentError>;
    /// Everything the provider has on record, for payment reconciliation in the audit.
    async fn all_payments(&self) -> Result<Vec<ProviderPayment>, PaymentError>;
    /// The provider's own limit on requests per second for one kind of call, if it has
    /// one, so that background work (the recovery sweep) can stay under it.
    fn rate_limit_per_s(&self) -> Option<u32> {
        None
    }
    /// Checks a webhook's signature (and its age against `now`) and reads it.
    fn verify_webhook(
        &self,
        payload: &[u8],
        signature: &str,
        now: Millis,
    ) -> Result<WebhookEvent, WebhookError>;
}
