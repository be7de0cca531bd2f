//! The sinks of the outbox relay (`boxoffice_engine::relay`): the `EventPublisher`
//! port over an operator's webhook endpoints ([`webhook`], each POST signed like
//! Stripe's, [`signature`]) and NATS JetStream ([`nats`]).

pub mod nats;
pub mod signature;
pub mod webhook;

use std::sync::Arc;

use async_trait::async_trait;
use boxoffice_engine::ports::{Clock, EventPublisher, OutboxEvent, PublishError, Sink, SinkKind};

pub use nats::{NatsConfig, NatsSink};
pub use webhook::WebhookSink;

/// Every sink this node can reach: the webhooks always, NATS when configured.
pub struct Publishers {
    webhook: WebhookSink,
    nats: Option<Arc<NatsSink>>,
}

impl Publishers {
    pub fn new(
        webhook_timeout: std::time::Duration,
        clock: Arc<dyn Clock>,
        nats: Option<Arc<NatsSink>>,
    ) -> Result<Publishers, PublishError> {
        Ok(Publishers {
            webhook: WebhookSink::new(webhook_timeout, clock)?,
            nats,
        })
    }
}

#[async_trait]
impl EventPublisher for Publishers {
    fn nats(&self) -> bool {
        self.nats.is_some()
    }

    async fn publish(&self, sink: &Sink, event: &OutboxEvent) -> Result<(), PublishError> {
        match (&sink.kind, &self.nats) {
            (SinkKind::Webhook { url, secret }, _) => self.webhook.post(url, secret, event).await,
            (SinkKind::Nats, Some(nats)) => nats.publish(event).await,
            (SinkKind::Nats, None) => Err(PublishError("this node has no NATS configured".into())),
        }
    }
}
