//! Operator controls and the operator's view: admission override (PUT /admission),
//! the event's rules (PUT /waiting-room), health samples, and GET /stats.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use boxoffice_domain::admission::Health;
use boxoffice_domain::{EventId, Millis};
use serde::Serialize;

use super::Signal;
use super::settings::{
    AdmissionControl, CONTROL, CurrentRate, EventSettings, OPERATOR_SETTINGS, RULES, WaitingRules,
};
use crate::ports::{QueueState, SeatCounts};
use crate::{Engine, EngineError};

#[derive(Clone, Debug, Serialize)]
pub struct StatsView {
    pub event_id: EventId,
    pub queue: QueueState,
    pub seats: Option<SeatCounts>,
    pub admitted: u64,
    pub active_shoppers: u64,
    pub rate: CurrentRate,
    pub control: AdmissionControl,
    pub rules: WaitingRules,
    pub health: Health,
}

impl Engine {
    /// Feeds the adaptive admission mode (the HTTP layer reports holds and checkouts).
    pub fn record_health(&self, signal: Signal) {
        self.waiting.health.record(self.now(), signal);
    }

    pub async fn set_admission(
        &self,
        event: EventId,
        control: AdmissionControl,
    ) -> Result<AdmissionControl, EngineError> {
        self.event(event).await?;
        if control.rate_per_s == Some(0) {
            return Err(EngineError::Invalid(
                "rate_per_s must be at least 1; close the sale to stop it".into(),
            ));
        }
        let json =
            serde_json::to_string(&control).map_err(|e| EngineError::Internal(e.to_string()))?;
        // Kept in the ledger first, so a queue store that loses the line gets it back.
        self.ports
            .ledger
            .keep_line_setting(event, CONTROL, &json)
            .await?;
        self.put_setting(event, CONTROL, &json, false).await?;
        // Apply at once rather than at the next tick, so the operator sees the effect.
        self.refresh_rate(event).await?;
        Ok(control)
    }

    pub async fn set_waiting_rules(
        &self,
        event: EventId,
        rules: WaitingRules,
    ) -> Result<WaitingRules, EngineError> {
        self.event(event).await?;
        rules.validate()?;
        self.check_verifier_for(&rules)?;
        let json =
            serde_json::to_string(&rules).map_err(|e| EngineError::Internal(e.to_string()))?;
        self.ports
            .ledger
            .keep_line_setting(event, RULES, &json)
            .await?;
        self.put_setting(event, RULES, &json, false).await?;
        self.rebuild_public_doc(event).await?;
        Ok(rules)
    }

    /// The event's settings as the queue store has them now; this node's copy
    /// (`cached_settings`) is refreshed with them.
    pub(crate) async fn event_settings(
        &self,
        event: EventId,
    ) -> Result<Arc<EventSettings>, EngineError> {
        let cache = &self.waiting.settings;
        let (read, read_at) = (cache.generation(), self.now());
        let mut raw = self.ports.queue.settings(event).await?;
        if OPERATOR_SETTINGS
            .iter()
            .any(|name| !raw.contains_key(*name))
            && self.restore_due(event, &raw, read_at)
        {
            self.restore_operator_settings(event, &mut raw, read_at)
                .await?;
        }
        let settings = Arc::new(EventSettings::parse(&raw, self.config.waiting.rules));
        cache.keep(
            event,
            read,
            read_at,
            settings.clone(),
            self.settings_ttl_ms(),
        );
        Ok(settings)
    }

    /// Whether this node is to ask the ledger for missing operator settings now: an
    /// event whose operator set none lacks them on every read (each batch, each
    /// refresh), and the ask is made at most once every `RESTORE_CHECK_MS` for it.
    fn restore_due(&self, event: EventId, raw: &HashMap<String, String>, now: Millis) -> bool {
        let checked = self.waiting.restore_checked.lock();
        match checked.get(&event) {
            Some((at, kept)) => {
                kept.iter().any(|name| !raw.contains_key(*name))
                    || now.0 - at.0 >= super::RESTORE_CHECK_MS
            }
            None => true,
        }
    }

    /// The operator's settings the queue store does not have (it lost them: a Redis
    /// flushed, or failed over to a replica without them), put back from the ledger's
    /// copy, kept there before each was stored. Without this, a store that lost them
    /// before the sale opened (the line is restored, settings and all, only once it is
    /// open) let every join in under the default rules: no proof of work, no human
    /// check, no account rules, until the opening.
    async fn restore_operator_settings(
        &self,
        event: EventId,
        raw: &mut HashMap<String, String>,
        now: Millis,
    ) -> Result<(), EngineError> {
        let mut kept = Vec::new();
        for (name, value) in self.ports.ledger.line_settings(event).await? {
            let Some(known) = OPERATOR_SETTINGS.iter().find(|n| **n == name) else {
                continue;
            };
            kept.push(*known);
            if let Entry::Vacant(slot) = raw.entry(name) {
                let stored = (self.ports.queue)
                    .set_setting(event, slot.key(), &value, true)
                    .await?;
                slot.insert(stored);
            }
        }
        (self.waiting.restore_checked.lock()).insert(event, (now, kept));
        Ok(())
    }

    /// The event's settings as this node read them at most `public_doc_ttl_ms` ago:
    /// what a join is checked against (its rules, the seed), without a store read on
    /// the herd's path. See `waiting::snapshot` for the bound on staleness.
    pub(crate) async fn cached_settings(
        &self,
        event: EventId,
    ) -> Result<Arc<EventSettings>, EngineError> {
        let ttl = self.settings_ttl_ms();
        match self.waiting.settings.fresh(event, self.now(), ttl) {
            Some(settings) => Ok(settings),
            None => self.event_settings(event).await,
        }
    }

    /// Writes one of the event's settings and forgets this node's copy, so the node's
    /// next check reads what was written.
    pub(crate) async fn put_setting(
        &self,
        event: EventId,
        name: &str,
        value: &str,
        only_if_absent: bool,
    ) -> Result<String, EngineError> {
        let stored = self
            .ports
            .queue
            .set_setting(event, name, value, only_if_absent)
            .await;
        self.waiting.settings.forget(event);
        Ok(stored?)
    }

    fn settings_ttl_ms(&self) -> i64 {
        i64::try_from(self.config.waiting.public_doc_ttl_ms).unwrap_or(i64::MAX)
    }

    pub async fn waiting_stats(&self, event: EventId) -> Result<StatsView, EngineError> {
        let entry = self.event(event).await?;
        let queue = self.ports.queue.state(event).await?;
        let settings = self.event_settings(event).await?;
        let seats = self.ports.arbiter.counts(event).await.ok();
        let now = self.now();
        let active = self.waiting.active_shoppers(
            event,
            now,
            self.config.admission_token_ttl_s as i64 * 1000,
            queue.serving_up_to,
            queue.finished,
        );
        let base = settings
            .control
            .rate_per_s
            .unwrap_or(entry.event.sale.admission_rate_per_s);
        Ok(StatsView {
            event_id: event,
            queue,
            seats,
            admitted: queue.serving_up_to,
            active_shoppers: active,
            rate: settings.rate.unwrap_or(CurrentRate {
                rate_per_s: base,
                reason: boxoffice_domain::admission::RateReason::Configured,
            }),
            control: settings.control,
            rules: settings.rules,
            health: self
                .waiting
                .health
                .read(now, self.config.waiting.health_window_ms),
        })
    }
}
