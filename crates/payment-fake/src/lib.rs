//! A stand-in payment provider for tests, rehearsals and the demo. It implements the
//! engine's `PaymentGateway` port and, like a real provider, keeps its own durable
//! records (a SQLite file of its own, apart from the ledger), so a crash of the server
//! leaves behind exactly what the recovery sweep and the audit must reconcile.
//!
//! Behaviour is chosen per call by the payment method (see [`methods`]), by the soak
//! rates and latency of [`FakeGatewayConfig`], and by faults a test programs with
//! [`FakeGateway::fail_next`] and [`FakeGateway::time_out_next`].
//!
//! Webhooks: every change of a payment writes a Stripe-shaped, Stripe-signed webhook
//! to an outbox in the same file ([`FakeGateway::undelivered_webhooks`]); tests deliver
//! them in any order, duplicated as `duplicate_webhook_rate` draws or by hand. Payments
//! that wait for the buyer (3-D Secure, bank redirect) are finished by
//! [`FakeGateway::complete_action`], which can run in another process on the same file.
//! With `webhook_url` set, whoever opens the fake can also start a [`WebhookSender`]
//! that delivers the outbox by itself, with retries and backoff.

mod book;
mod config;
mod delivery;
mod faults;
mod gateway;
mod ops;
mod records;
mod script;
/// Webhooks are signed exactly as the Stripe-compatible adapter checks them.
pub use boxoffice_payment_stripe::signature;
mod transitions;
mod webhooks;

pub use config::{ConfigError, FakeGatewayConfig};
pub use delivery::WebhookSender;
pub use faults::Op;
pub use gateway::{FakeGateway, OpenError};
pub use records::Record;
pub use script::{CARD_DECLINED, INSUFFICIENT_FUNDS, methods};
pub use webhooks::FakeWebhook;

/// Where a payment waiting for the buyer (3-D Secure, bank redirect) sends them: a page
/// of the server running the stand-in, `CONFIRM_PATH` + the payment's reference, where
/// they approve or decline it as they would at their bank.
pub const CONFIRM_PATH: &str = "/fake-provider/confirm/";
