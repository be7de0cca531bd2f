//! Delivery to NATS JetStream. Each event is published to
//! `<subject_prefix>.orders.<sale event id>.<history event>` (e.g.
//! `boxoffice.orders.7.committed`) with the event id as `Nats-Msg-Id`, so JetStream
//! drops a redelivery within the stream's duplicate window; consumers dedupe beyond it
//! by the same id. Delivered means acknowledged by the stream.
//!
//! The stream (`stream`, subjects `<subject_prefix>.orders.>`) is created on first use
//! unless it exists. The connection is made in the background and retried, so a NATS
//! that is down delays events (the relay retries them), never the node's start.

use std::time::Duration;

use async_nats::jetstream::{self, stream};
use boxoffice_engine::ports::{OutboxEvent, PublishError};
use serde::Deserialize;
use tokio::sync::OnceCell;

/// `[nats]`: the optional JetStream sink.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NatsConfig {
    /// `nats://host:4222` (or `tls://…`, verified against the system's store).
    pub url: String,
    /// The first token of every subject. Default `boxoffice`.
    #[serde(default = "default_prefix")]
    pub subject_prefix: String,
    /// The stream the events go to. Default `BOXOFFICE_ORDERS`.
    #[serde(default = "default_stream")]
    pub stream: String,
    /// How long a publish waits for the stream's acknowledgement. Default 5,000 ms.
    #[serde(default = "default_ack_timeout")]
    pub ack_timeout_ms: u64,
}

fn default_prefix() -> String {
    "boxoffice".into()
}

fn default_stream() -> String {
    "BOXOFFICE_ORDERS".into()
}

fn default_ack_timeout() -> u64 {
    5_000
}

impl NatsConfig {
    pub fn new(url: impl Into<String>) -> NatsConfig {
        NatsConfig {
            url: url.into(),
            subject_prefix: default_prefix(),
            stream: default_stream(),
            ack_timeout_ms: default_ack_timeout(),
        }
    }

    /// What a node cannot publish with: subject tokens may not hold `.`, `*`, `>` or
    /// white space.
    pub fn validate(&self) -> Result<(), String> {
        let token = |s: &str| {
            !s.is_empty()
                && s.split('.').all(|t| {
                    !t.is_empty() && !t.contains(['*', '>']) && !t.chars().any(char::is_whitespace)
                })
        };
        if !token(&self.subject_prefix) {
            return Err(
                "nats.subject_prefix must be dot-separated tokens without * > or spaces".into(),
            );
        }
        if self.stream.is_empty() || self.stream.contains(['.', '*', '>', ' ']) {
            return Err("nats.stream must be a name without . * > or spaces".into());
        }
        if self.ack_timeout_ms == 0 {
            return Err("nats.ack_timeout_ms must be at least 1 (every publish would fail)".into());
        }
        Ok(())
    }

    /// The subject an event is published to.
    pub fn subject(&self, event: &OutboxEvent) -> String {
        let kind = event.kind.strip_prefix("order.").unwrap_or(&event.kind);
        format!("{}.orders.{}.{kind}", self.subject_prefix, event.sale_event)
    }
}

pub struct NatsSink {
    config: NatsConfig,
    js: jetstream::Context,
    stream_ready: OnceCell<()>,
}

impl NatsSink {
    /// Starts connecting (in the background: see the module's text).
    pub async fn connect(config: NatsConfig) -> Result<NatsSink, PublishError> {
        let client = async_nats::ConnectOptions::new()
            .retry_on_initial_connect()
            .connection_timeout(Duration::from_secs(5))
            .connect(config.url.as_str())
            .await
            .map_err(|e| {
                let at = without_credentials(&config.url);
                PublishError(format!("connecting to NATS at {at}: {e}"))
            })?;
        let mut js = jetstream::new(client);
        js.set_timeout(Duration::from_millis(config.ack_timeout_ms));
        Ok(NatsSink {
            config,
            js,
            stream_ready: OnceCell::new(),
        })
    }

    pub fn config(&self) -> &NatsConfig {
        &self.config
    }

    async fn ensure_stream(&self) -> Result<(), PublishError> {
        let subjects = format!("{}.orders.>", self.config.subject_prefix);
        self.js
            .get_or_create_stream(stream::Config {
                name: self.config.stream.clone(),
                subjects: vec![subjects],
                ..Default::default()
            })
            .await
            .map_err(|e| PublishError(format!("JetStream stream {}: {e}", self.config.stream)))?;
        Ok(())
    }

    pub async fn publish(&self, event: &OutboxEvent) -> Result<(), PublishError> {
        self.stream_ready
            .get_or_try_init(|| self.ensure_stream())
            .await?;
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", event.id().as_str());
        let ack = self
            .js
            .publish_with_headers(
                self.config.subject(event),
                headers,
                bytes::Bytes::from(event.payload.clone()),
            )
            .await
            .map_err(|e| PublishError(format!("JetStream publish: {e}")))?;
        ack.await
            .map_err(|e| PublishError(format!("JetStream acknowledgement: {e}")))?;
        Ok(())
    }
}

/// Printed without its URL's credentials (`nats://token@host`, `nats://user:pass@host`).
impl std::fmt::Debug for NatsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsConfig")
            .field("url", &without_credentials(&self.url))
            .field("subject_prefix", &self.subject_prefix)
            .field("stream", &self.stream)
            .field("ack_timeout_ms", &self.ack_timeout_ms)
            .finish()
    }
}

/// `url` with any user information (a token, or a name and password) left out.
fn without_credentials(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find(['/', '?']).unwrap_or(rest.len());
            match rest[..end].rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://[redacted]@{host}{}", &rest[end..]),
                None => url.to_owned(),
            }
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use boxoffice_domain::{EventId, Millis, OrderId};

    use super::*;

    #[test]
    fn subjects_name_the_sale_and_the_event() {
        let c = NatsConfig::new("nats://127.0.0.1:4222");
        let e = OutboxEvent {
            row: 1,
            order: OrderId::random(),
            sale_event: EventId(7),
            sequence: 3,
            kind: "order.committed".into(),
            payload: "{}".into(),
            created_at: Millis(0),
        };
        assert_eq!(c.subject(&e), "boxoffice.orders.7.committed");
        assert!(c.validate().is_ok());
        let bad = NatsConfig {
            subject_prefix: "a.>".into(),
            ..c.clone()
        };
        assert!(bad.validate().is_err());
    }
}
