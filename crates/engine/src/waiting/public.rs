//! The public queue document of an event: one pre-serialized, cacheable body per node,
//! rebuilt at most every `public_doc_ttl_ms`, with an ETag. The personal status call
//! reads the same snapshot, so 2,000,000 pollers cost one store read per node per TTL.

use std::sync::Arc;

use boxoffice_domain::admission::RateReason;
use boxoffice_domain::{EventId, Millis, SaleStatus};
use bytes::Bytes;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::settings::CurrentRate;
use crate::ports::QueueState;
use crate::{Engine, EngineError};

/// A snapshot of an event's line, with its serialized body.
#[derive(Clone, Debug)]
pub struct PublicDoc {
    pub event: EventId,
    pub state: QueueState,
    pub rate: CurrentRate,
    /// The fastest the gate may open: the operator's or the event's rate (the adaptive
    /// mode only narrows it).
    pub ceiling_per_s: u32,
    pub built_at: Millis,
    pub etag: String,
    pub body: Bytes,
}

/// The public state of an event's line (GET /v1/events/{id}/queue): cacheable, the
/// same for every viewer.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = PublicQueue)]
pub struct PublicQueueBody<'a> {
    event_id: EventId,
    sale_status: SaleStatus,
    /// Every position at or below this is admitted.
    serving_up_to: u64,
    queue_length: u64,
    pool_size: u64,
    opened: bool,
    sold_out: bool,
    admission_rate_per_s: u32,
    rate_reason: RateReason,
    batch_interval_ms: u64,
    /// How a client turns its position into a wait: ceil((position - serving_up_to) /
    /// admission_rate_per_s) seconds.
    eta_model: &'a str,
    poll_after_ms: u64,
    /// hex(sha256(seed)) of the pre-opening shuffle.
    #[schema(required)]
    fairness_commitment: Option<String>,
    /// What a join must carry to pass the event's human check.
    human_check: super::HumanCheckView,
    updated_at: Millis,
}

impl Engine {
    /// The event's public document, from this node's cache when fresh enough.
    pub async fn public_doc(&self, event: EventId) -> Result<Arc<PublicDoc>, EngineError> {
        let now = self.now();
        let ttl = self.config.waiting.public_doc_ttl_ms as i64;
        if let Some(doc) = self.waiting.docs.read().get(&event)
            && now.0 - doc.built_at.0 < ttl
            && now >= doc.built_at
        {
            return Ok(doc.clone());
        }
        self.rebuild_public_doc(event).await
    }

    /// Rebuilds the document now (after a tick, or when the cached one is stale).
    pub(crate) async fn rebuild_public_doc(
        &self,
        event: EventId,
    ) -> Result<Arc<PublicDoc>, EngineError> {
        let entry = self.event(event).await?;
        let mut state = self.ports.queue.state(event).await?;
        if entry.event.status == SaleStatus::Open && !state.placed {
            // A line the queue store lost is put back before anyone is told it shrank.
            self.ensure_line(event).await?;
            state = self.ports.queue.state(event).await?;
        }
        // Read through `event_settings`, so the rules the node checks joins against
        // are never older than the document that tells buyers what to pass.
        let settings = self.event_settings(event).await?;
        let (configured, _) = settings.base_rate(entry.event.sale.admission_rate_per_s);
        let rate = settings.rate.unwrap_or(CurrentRate {
            rate_per_s: configured,
            reason: RateReason::Configured,
        });
        let commitment = settings
            .seed
            .as_deref()
            .and_then(|s| boxoffice_domain::fairness::Seed::from_hex(s).ok())
            .map(|s| s.commitment());
        let now = self.now();
        let human_check = self.human_check_view(&settings.rules);
        let body = serde_json::to_vec(&PublicQueueBody {
            event_id: event,
            sale_status: entry.event.status,
            serving_up_to: state.serving_up_to,
            queue_length: state.queue_length,
            pool_size: state.pool_size,
            opened: state.opened,
            sold_out: state.sold_out,
            admission_rate_per_s: rate.rate_per_s,
            rate_reason: rate.reason,
            batch_interval_ms: self.config.admission_interval_ms,
            eta_model: "ceil((position - serving_up_to) / admission_rate_per_s) seconds",
            poll_after_ms: self.config.poll_after_ms,
            fairness_commitment: commitment.clone(),
            human_check: human_check.clone(),
            updated_at: now,
        })
        .map_err(|e| EngineError::Internal(e.to_string()))?;
        // The ETag covers what the body says except `updated_at`, so an unchanged line
        // revalidates as 304 however often the document is rebuilt.
        let mut h = Sha256::new();
        h.update(format!(
            "{state:?}{rate:?}{:?}{commitment:?}{human_check:?}",
            entry.event.status
        ));
        let etag = format!(
            "\"{}\"",
            &boxoffice_domain::fairness::hex(&h.finalize())[..16]
        );
        let doc = Arc::new(PublicDoc {
            event,
            state,
            rate,
            ceiling_per_s: configured.max(rate.rate_per_s),
            built_at: now,
            etag,
            body: Bytes::from(body),
        });
        self.waiting.docs.write().insert(event, doc.clone());
        Ok(doc)
    }
}
