//! A Stripe-compatible payment gateway: PaymentIntents with manual capture, so the
//! engine's authorize → commit → capture maps onto create+confirm → capture, and a lost
//! commit onto cancel. A thin client of our own (form POSTs, `Idempotency-Key`, lenient
//! serde, our own `Stripe-Signature` check) with a configurable base URL, tested
//! against localstripe.
//!
//! Retries are made safe here, not by trusting the provider's idempotency: localstripe
//! ignores `Idempotency-Key`, and a real key expires after a day. Every PaymentIntent
//! carries our order id in its metadata, and `authorize` first looks for an existing
//! one, so asking twice never charges twice.

mod client;
mod intent;
pub mod signature;
mod webhook;

use std::time::Duration;

use async_trait::async_trait;
use boxoffice_domain::{Millis, OrderId};
use boxoffice_engine::ports::{
    AuthorizeOutcome, AuthorizeRequest, PaymentError, PaymentGateway, ProviderPayment,
    ProviderState, WebhookError, WebhookEvent,
};
use serde::Deserialize;

use client::{Failure, StripeClient};
use intent::{Intent, IntentList, ORDER_KEY};

/// Settings of the Stripe adapter; defaults fit a local stand-in, not production.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StripeConfig {
    /// API base URL (default `https://api.stripe.com`).
    pub base_url: String,
    /// Secret API key, sent as a bearer token.
    pub secret_key: String,
    /// Webhook signing secret (`whsec_…`).
    pub webhook_secret: String,
    /// Oldest accepted webhook signature, in seconds (default 300, as Stripe's SDKs).
    pub webhook_tolerance_s: u64,
    /// Per-call timeout in milliseconds (default 10,000). A timeout is reported as
    /// `PaymentError::Timeout`: the engine then asks rather than assumes.
    pub timeout_ms: u64,
}

impl Default for StripeConfig {
    fn default() -> Self {
        StripeConfig {
            base_url: "https://api.stripe.com".into(),
            secret_key: String::new(),
            webhook_secret: String::new(),
            webhook_tolerance_s: 300,
            timeout_ms: 10_000,
        }
    }
}

pub struct StripeGateway {
    client: StripeClient,
    config: StripeConfig,
}

impl StripeGateway {
    pub fn new(config: StripeConfig) -> Result<Self, reqwest::Error> {
        let timeout = Duration::from_millis(config.timeout_ms);
        let client = StripeClient::new(&config.base_url, &config.secret_key, timeout)?;
        Ok(StripeGateway { client, config })
    }

    /// The PaymentIntent of one of our orders, if any. Tries the Search API first and,
    /// where it does not exist (localstripe), reads the list.
    async fn find(&self, order: OrderId) -> Result<Option<Intent>, PaymentError> {
        let query = format!("/v1/payment_intents/search?query=metadata['{ORDER_KEY}']:'{order}'");
        match self.client.get::<IntentList>(&query).await {
            Ok(list) => return Ok(list.data.into_iter().find(|i| i.order() == Some(order))),
            Err(Failure::NotFound | Failure::Refused(_)) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(self
            .list()
            .await?
            .into_iter()
            .find(|i| i.order() == Some(order)))
    }

    /// Every PaymentIntent, page by page.
    async fn list(&self) -> Result<Vec<Intent>, PaymentError> {
        let mut all: Vec<Intent> = Vec::new();
        loop {
            let mut path = "/v1/payment_intents?limit=100".to_owned();
            if let Some(last) = all.last() {
                path.push_str(&format!("&starting_after={}", last.id));
            }
            let page: IntentList = self.client.get(&path).await?;
            let more = page.has_more && !page.data.is_empty();
            all.extend(page.data);
            if !more {
                return Ok(all);
            }
        }
    }

    async fn retrieve(&self, reference: &str) -> Result<Option<Intent>, PaymentError> {
        match self
            .client
            .get(&format!("/v1/payment_intents/{reference}"))
            .await
        {
            Ok(i) => Ok(Some(i)),
            Err(Failure::NotFound) => Ok(None),
            Err(e) => Err(e.into()),
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
    async fn authorize(&self, req: &AuthorizeRequest) -> Result<AuthorizeOutcome, PaymentError> {
        if let Some(existing) = self.find(req.order).await? {
            return Ok(outcome(&existing));
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

    async fn inquire(&self, order: OrderId) -> Result<Option<ProviderPayment>, PaymentError> {
        Ok(self.find(order).await?.map(|i| i.to_port(order)))
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
        let secret = &self.config.webhook_secret;
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
