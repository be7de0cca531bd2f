//! Order events out, as the API offers them: an order's history (to its buyer and the
//! operator), the operator's webhook endpoints, and their dead letters. The relay that
//! delivers the events is `relay`.

use std::sync::Arc;

use boxoffice_domain::{Millis, OrderId};
use serde::Serialize;

use crate::ports::{DeadLetter, HistoryLine, NATS_SINK, Outbox, Sink, SinkKind};
use crate::{BuyerSession, Engine, EngineError, Resource};

/// Most webhook endpoints an operator may register: each one multiplies the relay's work.
pub const MAX_WEBHOOK_ENDPOINTS: usize = 16;
/// Most dead letters one read returns.
pub const DEAD_LETTER_PAGE: usize = 100;

/// Who reads an order's history.
pub enum HistoryReader<'a> {
    Buyer(&'a BuyerSession),
    Operator,
}

/// An endpoint as listed: never its secret.
#[derive(Clone, Debug, Serialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct WebhookEndpoint {
    #[schema(pattern = "^we_[0-9a-f]{32}$")]
    pub id: String,
    pub url: String,
    pub created_at: Millis,
}

/// A dead letter as the operator reads it.
#[derive(Clone, Debug, Serialize, PartialEq, utoipa::ToSchema)]
#[schema(as = DeadLetter)]
pub struct DeadLetterView {
    pub event_id: String,
    /// `order.<event>`, e.g. `order.committed`.
    #[serde(rename = "type")]
    pub kind: String,
    pub order_id: OrderId,
    #[schema(minimum = 1)]
    pub sequence: u32,
    pub attempts: u32,
    pub last_error: String,
    pub dead_at: Millis,
    /// The event document the endpoint was sent.
    #[schema(value_type = Object)]
    pub payload: serde_json::Value,
}

impl From<DeadLetter> for DeadLetterView {
    fn from(l: DeadLetter) -> Self {
        DeadLetterView {
            event_id: l.event.id(),
            kind: l.event.kind,
            order_id: l.event.order,
            sequence: l.event.sequence,
            attempts: l.attempts,
            last_error: l.last_error,
            dead_at: l.dead_at,
            payload: serde_json::from_str(&l.event.payload).unwrap_or(serde_json::Value::Null),
        }
    }
}

fn endpoint(sink: Sink) -> Option<WebhookEndpoint> {
    match sink.kind {
        SinkKind::Webhook { url, .. } => Some(WebhookEndpoint {
            id: sink.id,
            url,
            created_at: sink.created_at,
        }),
        SinkKind::Nats => None,
    }
}

/// 32 hex digits from the random generator of UUIDv4.
fn random_hex() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

impl Engine {
    /// The ledger's outbox, for order histories and webhook endpoints.
    pub fn with_outbox(mut self, outbox: Arc<dyn Outbox>) -> Engine {
        self.outbox = Some(outbox);
        self
    }

    fn outbox(&self) -> Result<&Arc<dyn Outbox>, EngineError> {
        self.outbox.as_ref().ok_or_else(|| {
            EngineError::Unavailable("order events are not wired on this node".into())
        })
    }

    /// The order's history, oldest first. Another buyer's order is not found, exactly
    /// as an unknown one.
    pub async fn order_history(
        &self,
        who: HistoryReader<'_>,
        id: OrderId,
    ) -> Result<Vec<HistoryLine>, EngineError> {
        let order = self
            .ports
            .ledger
            .order(id)
            .await?
            .ok_or(EngineError::NotFound(Resource::Order))?;
        if let HistoryReader::Buyer(buyer) = who
            && order.buyer != buyer.buyer
        {
            return Err(EngineError::NotFound(Resource::Order));
        }
        Ok(self.outbox()?.history(id).await?)
    }

    /// Registers an endpoint for every order event written from now on; returns it with
    /// its signing secret, which is shown this once.
    pub async fn add_webhook_endpoint(
        &self,
        url: &str,
    ) -> Result<(WebhookEndpoint, String), EngineError> {
        let outbox = self.outbox()?;
        if self.webhook_endpoints().await?.len() >= MAX_WEBHOOK_ENDPOINTS {
            return Err(EngineError::Invalid(format!(
                "at most {MAX_WEBHOOK_ENDPOINTS} webhook endpoints; delete one first"
            )));
        }
        let secret = format!("whsec_{}{}", random_hex(), random_hex());
        let sink = Sink {
            id: format!("we_{}", random_hex()),
            kind: SinkKind::Webhook {
                url: url.to_owned(),
                secret: secret.clone(),
            },
            created_at: self.ports.clock.now(),
        };
        outbox.add_sink(&sink).await?;
        let endpoint =
            endpoint(sink).ok_or_else(|| EngineError::Internal("not a webhook".into()))?;
        // Not its URL: it may carry the endpoint's own token.
        tracing::info!(endpoint = %endpoint.id, "webhook endpoint added");
        Ok((endpoint, secret))
    }

    pub async fn webhook_endpoints(&self) -> Result<Vec<WebhookEndpoint>, EngineError> {
        let sinks = self.outbox()?.sinks().await?;
        Ok(sinks.into_iter().filter_map(endpoint).collect())
    }

    /// Removes an endpoint and whatever it had still to receive.
    pub async fn remove_webhook_endpoint(&self, id: &str) -> Result<(), EngineError> {
        self.known_endpoint(id).await?;
        if self.outbox()?.remove_sink(id).await? {
            tracing::info!(endpoint = %id, "webhook endpoint removed");
            Ok(())
        } else {
            Err(EngineError::NotFound(Resource::WebhookEndpoint))
        }
    }

    /// Removes a sink and every delivery it has yet to make: a webhook endpoint, or the
    /// NATS sink, once no node publishes to it. The NATS sink is registered by the
    /// first node started with `[nats]`, and its deliveries are made only by nodes that
    /// have it: with `[nats]` gone from every node they would pile up, never made and
    /// never dying. A node that still has `[nats]` refuses to retire it
    /// (`SinkInUse`); one started with it later registers it again.
    pub async fn remove_sink(&self, id: &str) -> Result<(), EngineError> {
        if id != NATS_SINK {
            return self.remove_webhook_endpoint(id).await;
        }
        self.known_sink(id).await?;
        if self.publishes_to_nats {
            return Err(EngineError::SinkInUse(
                "this node publishes order events to NATS ([nats] is set): remove [nats] from \
                 every node and restart them, then retire the sink",
            ));
        }
        if !self.outbox()?.remove_sink(id).await? {
            return Err(EngineError::NotFound(Resource::WebhookEndpoint));
        }
        tracing::warn!("the NATS sink was retired with its undelivered events");
        Ok(())
    }

    /// Tells the engine this node publishes order events to NATS (`[nats]` is set).
    pub fn publishing_to_nats(mut self, on: bool) -> Engine {
        self.publishes_to_nats = on;
        self
    }

    /// The endpoint's dead letters, oldest first (at most `DEAD_LETTER_PAGE`).
    pub async fn dead_letters(&self, id: &str) -> Result<Vec<DeadLetterView>, EngineError> {
        self.known_sink(id).await?;
        let letters = self.outbox()?.dead_letters(id, DEAD_LETTER_PAGE).await?;
        Ok(letters.into_iter().map(DeadLetterView::from).collect())
    }

    /// Sends the endpoint's dead letters again; returns how many.
    pub async fn replay_dead_letters(&self, id: &str) -> Result<u64, EngineError> {
        self.known_sink(id).await?;
        let n = self
            .outbox()?
            .replay_dead(id, self.ports.clock.now())
            .await?;
        tracing::info!(endpoint = %id, replayed = n, "dead letters replayed");
        Ok(n)
    }

    /// A sink whose dead letters the operator reads and replays: a webhook endpoint, or
    /// the NATS sink (`nats`) once a node delivered to it, whose events die as a
    /// webhook's do when the stream stays unreachable.
    async fn known_sink(&self, id: &str) -> Result<(), EngineError> {
        if id == NATS_SINK && (self.outbox()?.sinks().await?.iter()).any(|s| s.id == NATS_SINK) {
            return Ok(());
        }
        self.known_endpoint(id).await
    }

    /// Only webhook endpoints are the operator's to manage (not the NATS sink).
    async fn known_endpoint(&self, id: &str) -> Result<(), EngineError> {
        let known = self.webhook_endpoints().await?.iter().any(|e| e.id == id);
        if known {
            Ok(())
        } else {
            Err(EngineError::NotFound(Resource::WebhookEndpoint))
        }
    }
}
