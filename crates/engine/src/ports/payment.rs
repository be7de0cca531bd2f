use async_trait::async_trait;
use boxoffice_domain::{Money, OrderId};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthorizeRequest {
    /// Our idempotency key at the provider: a retry never authorizes twice.
    pub order: OrderId,
    pub amount: Money,
    pub currency: String,
    pub payment_method: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuthorizeOutcome {
    Approved { reference: String },
    Declined { reason: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderState {
    Authorized,
    Captured,
    Voided,
    Declined,
    Refunded,
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

/// The payment provider. Every call is idempotent at the provider, keyed by our order.
#[async_trait]
pub trait PaymentGateway: Send + Sync {
    async fn authorize(&self, req: &AuthorizeRequest) -> Result<AuthorizeOutcome, PaymentError>;
    async fn capture(&self, order: OrderId, reference: &str) -> Result<(), PaymentError>;
    async fn void(&self, order: OrderId, reference: &str) -> Result<(), PaymentError>;
    async fn refund(&self, order: OrderId, reference: &str) -> Result<(), PaymentError>;
    /// Asks what the provider did for this order, if anything.
    async fn inquire(&self, order: OrderId) -> Result<Option<ProviderPayment>, PaymentError>;
    /// Everything the provider has on record, for payment reconciliation in the audit.
    async fn all_payments(&self) -> Result<Vec<ProviderPayment>, PaymentError>;
}
