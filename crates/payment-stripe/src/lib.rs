//! A Stripe-compatible payment gateway: PaymentIntents with manual capture, so the
//! engine's authorize → commit → capture maps onto create+confirm → capture, and a lost
//! commit onto cancel. A thin client of our own (form POSTs, `Idempotency-Key`, lenient
//! serde, our own `Stripe-Signature` check) with a configurable base URL, over rustls
//! (ring), tested against localstripe and against an HTTPS stand-in that behaves as
//! Stripe does where localstripe does not (unexpanded charges, a lagging search).
//!
//! Retries are made safe here, not by trusting the provider's idempotency: localstripe
//! ignores `Idempotency-Key`, and a real key expires after a day. Every PaymentIntent
//! carries our order id in its metadata, and `authorize` first looks for an existing
//! one, so asking twice never charges twice.

mod client;
mod config;
mod intent;
mod lookup;
pub mod signature;
mod webhook;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use boxoffice_domain::{Millis, Money, OrderId};
use boxoffice_engine::ports::{
    AuthorizeOutcome, AuthorizeRequest, Clock, Inquiry, PaymentError, PaymentGateway,
    ProviderPayment, ProviderState, SystemClock, WebhookError, WebhookEvent,
};

pub use client::BuildError;
use client::{Failure, StripeClient};
pub use config::StripeConfig;
use intent::Intent;
use lookup::Lookup;

pub struct StripeGateway {
    client: StripeClient,
    config: StripeConfig,
    /// The engine's clock: how old an order is decides whether a search miss is final.
    clock: Arc<dyn Clock>,
}

/// Why the start-up check of the credentials failed.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    #[error(
        "the Stripe secret key was refused ({0}): check stripe.secret_key (a secret key, sk_…; a restricted key needs read access to the balance)"
    )]
    Refused(u16),
    #[error("Stripe at {base} is unreachable: {why}")]
    Unreachable { base: String, why: String },
    #[error("Stripe at {base} did not accept the credential check (GET /v1/balance): {why}")]
    Unexpected { base: String, why: String },
}

impl StripeGateway {
    /// Whether the payment `reference` has a refund made under `key` (its metadata's
    /// `refund_key`). Its refunds are read a page of 100 at a time, newest first.
    async fn refunded_under(&self, reference: &str, key: &str) -> Result<bool, PaymentError> {
        let mut path = format!("/v1/refunds?payment_intent={reference}&limit=100");
        loop {
            let page: RefundList = self.client.get(&path).await?;
            if page.data.iter().any(|r| r.made_under(key)) {
                return Ok(true);
            }
            match page.data.last() {
                Some(last) if page.has_more => {
                    path = format!(
                        "/v1/refunds?payment_intent={reference}&limit=100&starting_after={}",
                        last.id
                    );
                }
                _ => return Ok(false),
            }
        }
    }

    pub fn new(config: StripeConfig) -> Result<Self, BuildError> {
        Self::with_clock(config, Arc::new(SystemClock))
    }

    pub fn with_clock(config: StripeConfig, clock: Arc<dyn Clock>) -> Result<Self, BuildError> {
        let timeout = Duration::from_millis(config.timeout_ms);
        let client = StripeClient::new(
            &config.base_url,
            &config.secret_key,
            timeout,
            config.ca_file.as_deref(),
        )?;
        Ok(StripeGateway {
            client,
            config,
            clock,
        })
    }

    /// One cheap authenticated call, so a wrong key or an unreachable provider stops
    /// the start instead of turning every checkout into a pending payment.
    /// `GET /v1/balance` is documented by Stripe for every secret key and answered by
    /// localstripe too.
    pub async fn check_credentials(&self) -> Result<(), CredentialError> {
        let base = self.client.base().to_owned();
        match self.client.get::<serde_json::Value>("/v1/balance").await {
            Ok(_) => Ok(()),
            Err(Failure::Unauthorized(status)) => Err(CredentialError::Refused(status)),
            Err(Failure::Port(PaymentError::Timeout)) => Err(CredentialError::Unreachable {
                base,
                why: format!("no answer within {} ms", self.config.timeout_ms),
            }),
            Err(Failure::Port(PaymentError::Unavailable(why))) => {
                Err(CredentialError::Unreachable { base, why })
            }
            Err(other) => Err(CredentialError::Unexpected {
                base,
                why: PaymentError::from(other).to_string(),
            }),
        }
    }

    /// Runs a capture, cancel or refund; a refusal because it already happened (a retry
    /// after a lost answer) counts as success, as the port requires.
    async fn settle(
        &self,
        path: String,
        form: &[(&str, String)],
        key: String,
        reference: &str,
        done: ProviderState,
    ) -> Result<(), PaymentError> {
        match self
            .client
            .post::<serde_json::Value>(&path, form, Some(&key))
            .await
        {
            Ok(_) => Ok(()),
            Err(Failure::Refused(why) | Failure::Card(why)) => {
                match self.retrieve(reference).await? {
                    Some(i) if i.state() == done => Ok(()),
                    _ => Err(PaymentError::Rejected(why)),
                }
            }
            Err(e) => Err(e.into()),
        }
    }
}

fn outcome(i: &Intent) -> AuthorizeOutcome {
    match i.state() {
        ProviderState::Authorized | ProviderState::Captured => AuthorizeOutcome::Approved {
            reference: i.id.clone(),
        },
        ProviderState::RequiresAction => AuthorizeOutcome::ActionRequired {
            reference: i.id.clone(),
            next_action: i.next_action(),
        },
        ProviderState::Declined | ProviderState::Voided | ProviderState::Refunded => {
            AuthorizeOutcome::Declined {
                reason: i.decline_reason(),
            }
        }
    }
}

#[async_trait]
impl PaymentGateway for StripeGateway {
    /// Stripe allows each endpoint 25 requests a second by default (and 100 in all in
    /// live mode); searches and inquiries are the recovery sweep's most frequent calls.
    fn rate_limit_per_s(&self) -> Option<u32> {
        Some(25)
    }

    async fn authorize(&self, req: &AuthorizeRequest) -> Result<AuthorizeOutcome, PaymentError> {
        // A search that lags may miss an intent made moments ago; the Idempotency-Key
        // below then still returns that intent instead of charging twice (Stripe keeps
        // keys for a day). So does a search that fails: Stripe allows the Search API
        // some 20 reads a second, fewer than a busy on-sale's checkouts, and a search
        // refused (429) or failed must not stop the payment from being made.
        match self.find(req.order).await {
            Ok(Lookup::Found(existing)) => return Ok(outcome(&existing)),
            Ok(Lookup::Missing { .. }) => {}
            Err(e) => {
                tracing::debug!(order = %req.order, error = %e, "search before authorizing failed; the Idempotency-Key guards the create");
            }
        }
        let form = [
            ("amount", req.amount.0.to_string()),
            ("currency", req.currency.to_lowercase()),
            ("payment_method", req.payment_method.clone()),
            ("confirm", "true".to_owned()),
            ("capture_method", "manual".to_owned()),
            ("metadata[order_id]", req.order.to_string()),
        ];
        let key = format!("authorize-{}", req.order);
        match self
            .client
            .post::<Intent>("/v1/payment_intents", &form, Some(&key))
            .await
        {
            Ok(i) => Ok(outcome(&i)),
            Err(Failure::Card(reason)) => Ok(AuthorizeOutcome::Declined { reason }),
            Err(e) => Err(e.into()),
        }
    }

    async fn capture(&self, order: OrderId, reference: &str) -> Result<(), PaymentError> {
        let path = format!("/v1/payment_intents/{reference}/capture");
        let key = format!("capture-{order}");
        self.settle(path, &[], key, reference, ProviderState::Captured)
            .await
    }

    async fn void(&self, order: OrderId, reference: &str) -> Result<(), PaymentError> {
        let path = format!("/v1/payment_intents/{reference}/cancel");
        let key = format!("void-{order}");
        self.settle(path, &[], key, reference, ProviderState::Voided)
            .await
    }

    async fn refund(&self, order: OrderId, reference: &str) -> Result<(), PaymentError> {
        let form = [("payment_intent", reference.to_owned())];
        let key = format!("refund-{order}");
        let path = "/v1/refunds".to_owned();
        self.settle(path, &form, key, reference, ProviderState::Refunded)
            .await
    }

    /// Stripe's refunds take an amount. A repeat must not refund again, and the
    /// provider's idempotency is not trusted for it (localstripe ignores the key, and a
    /// real key expires after a day): each refund carries `key` in its metadata, and the
    /// payment's refunds are read first; one with the key means it was made. The key is
    /// also sent as the Idempotency-Key, for two requests racing.
    async fn refund_part(
        &self,
        order: OrderId,
        reference: &str,
        amount: Money,
        key: &str,
    ) -> Result<(), PaymentError> {
        if self.refunded_under(reference, key).await? {
            return Ok(());
        }
        let form = [
            ("payment_intent", reference.to_owned()),
            ("amount", amount.0.to_string()),
            ("metadata[order_id]", order.to_string()),
            ("metadata[refund_key]", key.to_owned()),
        ];
        let key = format!("refund-part-{key}");
        match self
            .client
            .post::<serde_json::Value>("/v1/refunds", &form, Some(&key))
            .await
        {
            Ok(_) => Ok(()),
            Err(Failure::Refused(why) | Failure::Card(why)) => Err(PaymentError::Rejected(why)),
            Err(e) => Err(e.into()),
        }
    }

    async fn inquire(&self, inquiry: &Inquiry) -> Result<Option<ProviderPayment>, PaymentError> {
        self.inquire_order(inquiry).await
    }

    async fn inquire_reference(
        &self,
        reference: &str,
    ) -> Result<Option<ProviderPayment>, PaymentError> {
        let found = self.retrieve(reference).await?;
        Ok(found.and_then(|i| i.order().map(|o| i.to_port(o))))
    }

    async fn all_payments(&self) -> Result<Vec<ProviderPayment>, PaymentError> {
        let all = self.list().await?;
        Ok(all
            .iter()
            .filter_map(|i| i.order().map(|o| i.to_port(o)))
            .collect())
    }

    fn verify_webhook(
        &self,
        payload: &[u8],
        header: &str,
        now: Millis,
    ) -> Result<WebhookEvent, WebhookError> {
        let secret = self.config.webhook_secret.expose();
        signature::verify(
            secret,
            payload,
            header,
            now,
            self.config.webhook_tolerance_s,
        )?;
        webhook::parse(payload)
    }
}

/// A page of `GET /v1/refunds`, as far as `refunded_under` reads it.
#[derive(serde::Deserialize)]
struct RefundList {
    #[serde(default)]
    data: Vec<Refund>,
    #[serde(default)]
    has_more: bool,
}

#[derive(serde::Deserialize)]
struct Refund {
    id: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    metadata: std::collections::HashMap<String, String>,
}

impl Refund {
    /// Made under `key`, and not failed or cancelled (those gave nothing back).
    fn made_under(&self, key: &str) -> bool {
        let gave_nothing = matches!(self.status.as_deref(), Some("failed" | "canceled"));
        self.metadata.get("refund_key").map(String::as_str) == Some(key) && !gave_nothing
    }
}
