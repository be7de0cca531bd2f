//! The outbox relay: delivers every order event at least once, in order per order and
//! sink, to the operator's webhook endpoints and to NATS JetStream. A step claims a
//! batch of due deliveries in the ledger (a lease, so relays on several nodes share the
//! work), hands each to its sink, and records the outcome: delivered (gone), failed
//! (retried after an exponential backoff with jitter) or, past `max_attempts` or
//! `max_age_s`, dead (kept for the operator to read and replay).
//!
//! A sink that fails `RESTS_AFTER` times in a row rests: for `rest_ms` its deliveries
//! are recorded as failed attempts at once, without a call, as if they had been tried.
//! A step waits for all of its deliveries, and a claim takes the oldest due ones
//! whatever their sink: an endpoint that hangs until the timeout otherwise filled every
//! batch with its retries and held each step for rounds of timeouts, starving every
//! other sink.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use boxoffice_domain::Millis;
use futures::StreamExt;
use serde::Deserialize;

use crate::EngineError;
use crate::ports::{ClaimDeliveries, Clock, Delivery, EventPublisher, Failure, Outbox, Sink};
use crate::worker::Outcome;

/// `[relay]`: how the outbox is delivered. Every field has a documented default.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RelayConfig {
    /// Deliveries claimed per step. Default 100.
    pub batch: usize,
    /// Deliveries of one step in flight at once. Default 32.
    pub in_flight: usize,
    /// How long a claim keeps other relays off a delivery; longer than a delivery can
    /// take (`webhook_timeout_ms`). Default 60,000 ms.
    pub lease_ms: u64,
    /// The first retry's wait; each further one doubles, up to `retry_max_ms`, and is
    /// drawn between half of it and all of it (jitter). Default 1,000 ms.
    pub retry_min_ms: u64,
    /// Default 600,000 ms (10 minutes).
    pub retry_max_ms: u64,
    /// Attempts at one delivery before it becomes a dead letter. Default 20.
    pub max_attempts: u32,
    /// An event older than this that fails again becomes a dead letter. Default
    /// 259,200 s (3 days).
    pub max_age_s: u64,
    /// How long a webhook endpoint has to answer one delivery. Default 10,000 ms.
    pub webhook_timeout_ms: u64,
    /// Whether attendee names (events with names on tickets) go out with the events:
    /// `order.seats[].attendee` and a rename's `detail.attendee`. Default false: personal
    /// data stays in the ledger unless the operator's systems downstream need it.
    pub attendee_names: bool,
}

impl Default for RelayConfig {
    fn default() -> Self {
        RelayConfig {
            batch: 100,
            in_flight: 32,
            lease_ms: 60_000,
            retry_min_ms: 1_000,
            retry_max_ms: 600_000,
            max_attempts: 20,
            max_age_s: 259_200,
            webhook_timeout_ms: 10_000,
            attendee_names: false,
        }
    }
}

impl RelayConfig {
    /// What a node cannot relay with.
    pub fn validate(&self) -> Result<(), String> {
        if self.batch == 0 || self.in_flight == 0 || self.max_attempts == 0 {
            return Err(
                "relay.batch, relay.in_flight and relay.max_attempts must be at least 1".into(),
            );
        }
        if self.retry_min_ms == 0 || self.retry_max_ms < self.retry_min_ms {
            return Err(
                "relay.retry_min_ms must be at least 1 and at most relay.retry_max_ms".into(),
            );
        }
        self.lease_outlasts_a_step(self.webhook_timeout_ms, "relay.webhook_timeout_ms")
    }

    /// A step's claims share one lease from the moment they are claimed, and a step
    /// sends them `in_flight` at a time: with every call taking `call_ms` (an endpoint
    /// that never answers), its last deliveries go out `batch / in_flight` calls after
    /// the claim. A lease shorter than that lets another relay claim and send them too.
    pub fn lease_outlasts_a_step(&self, call_ms: u64, what: &str) -> Result<(), String> {
        let rounds = self.batch.div_ceil(self.in_flight.max(1)) as u64;
        let step_ms = rounds.saturating_mul(call_ms);
        if self.lease_ms <= step_ms {
            return Err(format!(
                "relay.lease_ms ({}) must be longer than a step's slowest deliveries: \
                 {rounds} rounds of relay.in_flight (relay.batch {} / relay.in_flight {}) \
                 at {what} ({call_ms}) each, {step_ms} ms; otherwise a slow endpoint's \
                 deliveries are claimed twice",
                self.lease_ms, self.batch, self.in_flight
            ));
        }
        Ok(())
    }

    /// The wait before attempt `attempts + 1`, before jitter.
    pub fn backoff_ms(&self, attempts: u32) -> u64 {
        let doublings = attempts.saturating_sub(1).min(40);
        self.retry_min_ms
            .saturating_mul(1u64 << doublings)
            .min(self.retry_max_ms)
    }
}

/// Failures in a row after which a sink rests.
pub const RESTS_AFTER: u32 = 5;

/// One node's relay. `owner` names its claims (this process's incarnation).
pub struct Relay {
    outbox: Arc<dyn Outbox>,
    publisher: Arc<dyn EventPublisher>,
    clock: Arc<dyn Clock>,
    owner: String,
    config: RelayConfig,
    /// Per sink: failures in a row, and until when it rests.
    health: Mutex<HashMap<String, (u32, Millis)>>,
}

impl Relay {
    pub fn new(
        outbox: Arc<dyn Outbox>,
        publisher: Arc<dyn EventPublisher>,
        clock: Arc<dyn Clock>,
        owner: String,
        config: RelayConfig,
    ) -> Relay {
        Relay {
            outbox,
            publisher,
            clock,
            owner,
            config,
            health: Mutex::new(HashMap::new()),
        }
    }

    /// How long a sink rests: the longest retry wait, at most a minute.
    fn rest_ms(&self) -> u64 {
        self.config.retry_max_ms.min(60_000)
    }

    /// Whether `sink` rests now.
    fn resting(&self, sink: &str, now: Millis) -> bool {
        (self.health.lock().get(sink)).is_some_and(|&(_, until)| now < until)
    }

    /// Counts a delivery's outcome toward its sink's rest.
    fn note(&self, sink: &str, ok: bool, now: Millis) {
        let mut health = self.health.lock();
        if ok {
            health.remove(sink);
            return;
        }
        let (failures, until) = health.entry(sink.to_owned()).or_insert((0, Millis(0)));
        *failures += 1;
        if *failures >= RESTS_AFTER {
            let rest = i64::try_from(self.rest_ms()).unwrap_or(i64::MAX);
            (*failures, *until) = (0, now.plus_millis(rest));
            tracing::warn!(
                sink,
                rest_ms = rest,
                "a sink failed {RESTS_AFTER} times in a row; it rests"
            );
            metrics::counter!("boxoffice_relay_sink_rests_total").increment(1);
        }
    }

    /// Claims one batch and delivers it; `done` is the deliveries attempted.
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn step(&self) -> Result<Outcome, EngineError> {
        let now = self.clock.now();
        let claim = ClaimDeliveries {
            owner: &self.owner,
            now,
            lease_until: now.plus_millis(i64::try_from(self.config.lease_ms).unwrap_or(i64::MAX)),
            limit: self.config.batch,
            nats: self.publisher.nats(),
        };
        let batch = self.outbox.claim(&claim).await?;
        if batch.is_empty() {
            return Ok(Outcome::default());
        }
        let sinks: HashMap<String, Sink> = self
            .outbox
            .sinks()
            .await?
            .into_iter()
            .map(|s| (s.id.clone(), s))
            .collect();
        let done = batch.len();
        let results: Vec<Result<(), EngineError>> = futures::stream::iter(batch)
            .map(|d| self.deliver(&sinks, d))
            .buffer_unordered(self.config.in_flight)
            .collect()
            .await;
        // A delivery whose outcome could not be recorded is claimed again when its
        // lease lapses: at least once, never lost.
        results.into_iter().collect::<Result<(), _>>()?;
        Ok(Outcome { done })
    }

    async fn deliver(&self, sinks: &HashMap<String, Sink>, d: Delivery) -> Result<(), EngineError> {
        let event = match outgoing(&d.event.payload, self.config.attendee_names) {
            Cow::Borrowed(_) => Cow::Borrowed(&d.event),
            Cow::Owned(payload) => Cow::Owned(crate::ports::OutboxEvent {
                payload,
                ..d.event.clone()
            }),
        };
        if self.resting(&d.sink, self.clock.now()) {
            let why = format!("not sent: the sink failed {RESTS_AFTER} times in a row and rests");
            return self.failed(&d, &why).await;
        }
        let sent = match sinks.get(&d.sink) {
            Some(sink) => self.publisher.publish(sink, &event).await,
            None => Err(crate::ports::PublishError("the sink was removed".into())),
        };
        self.note(&d.sink, sent.is_ok(), self.clock.now());
        match sent {
            Ok(()) => {
                metrics::counter!("boxoffice_relay_delivered_total").increment(1);
                Ok(self.outbox.delivered(&d.sink, d.event.row).await?)
            }
            Err(e) => self.failed(&d, &e.0).await,
        }
    }

    async fn failed(&self, d: &Delivery, error: &str) -> Result<(), EngineError> {
        let now = self.clock.now();
        let age_ms = now.0.saturating_sub(d.event.created_at.0);
        let too_old =
            u64::try_from(age_ms).unwrap_or(0) >= self.config.max_age_s.saturating_mul(1000);
        let dead = d.attempts >= self.config.max_attempts || too_old;
        let wait = jitter(self.config.backoff_ms(d.attempts));
        let retry_at = now.plus_millis(i64::try_from(wait).unwrap_or(i64::MAX));
        tracing::info!(sink = %d.sink, event = %d.event.id(), attempts = d.attempts, dead, error, "an event was not delivered");
        metrics::counter!("boxoffice_relay_failed_total", "dead" => if dead { "true" } else { "false" }).increment(1);
        let f = Failure {
            owner: &self.owner,
            retry_at,
            dead,
            error: truncate(error),
            now,
        };
        Ok(self.outbox.failed(&d.sink, d.event.row, &f).await?)
    }
}

/// An event's document as the sinks receive it: without attendee names unless
/// `names` (the operator's `relay.attendee_names`). The stored document keeps them (the
/// order's history, read by its buyer and the operator, shows them).
fn outgoing(payload: &str, names: bool) -> Cow<'_, str> {
    if names || !payload.contains("\"attendee\"") {
        return Cow::Borrowed(payload);
    }
    let Ok(mut doc) = serde_json::from_str::<serde_json::Value>(payload) else {
        return Cow::Borrowed(payload);
    };
    let seats = doc
        .pointer_mut("/order/seats")
        .and_then(|s| s.as_array_mut());
    for seat in seats.into_iter().flatten() {
        if let Some(seat) = seat.as_object_mut() {
            seat.remove("attendee");
        }
    }
    if let Some(detail) = doc.get_mut("detail").and_then(|d| d.as_object_mut()) {
        detail.remove("attendee");
    }
    Cow::Owned(doc.to_string())
}

/// A wait drawn between half of `ms` and all of it, so retries of many deliveries that
/// failed together (an endpoint down) spread out instead of arriving as one burst.
fn jitter(ms: u64) -> u64 {
    let half = ms / 2;
    half + rand::random_range(0..=ms - half)
}

/// The kept error text is short: a status line or a connection error.
fn truncate(error: &str) -> &str {
    match error.char_indices().nth(500) {
        Some((i, _)) => &error[..i],
        None => error,
    }
}

/// `Millis` of a config's milliseconds.
pub fn millis(ms: u64) -> Millis {
    Millis(i64::try_from(ms).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_from_the_minimum_up_to_the_maximum() {
        let c = RelayConfig {
            retry_min_ms: 1_000,
            retry_max_ms: 10_000,
            ..RelayConfig::default()
        };
        let waits: Vec<u64> = (1..=6).map(|a| c.backoff_ms(a)).collect();
        assert_eq!(waits, [1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
        assert_eq!(c.backoff_ms(u32::MAX), 10_000);
    }

    #[test]
    fn attendee_names_go_out_only_when_the_operator_sends_them() {
        let named = r#"{"id":"o.2","type":"order.renamed","detail":{"ticket_id":"t","attendee":"Ada Lovelace","version":2},"order":{"seats":[{"seat_id":"A-1-1","price":5000,"attendee":"Zoë Núñez"},{"seat_id":"A-1-2","price":5000}],"total":10000}}"#;
        let out: serde_json::Value = serde_json::from_str(&outgoing(named, false)).unwrap();
        assert!(!out.to_string().contains("attendee"), "{out}");
        assert_eq!(out["detail"]["version"], 2);
        assert_eq!(out["order"]["seats"][0]["seat_id"], "A-1-1");
        assert_eq!(out["order"]["total"], 10_000);
        assert!(matches!(outgoing(named, true), Cow::Borrowed(_)));
        let plain = r#"{"id":"o.1","order":{"seats":[{"seat_id":"A-1-1"}]}}"#;
        assert!(matches!(outgoing(plain, false), Cow::Borrowed(_)));
    }

    #[test]
    fn jitter_stays_between_half_and_all_of_the_wait() {
        for _ in 0..1_000 {
            let w = jitter(1_000);
            assert!((500..=1_000).contains(&w), "{w}");
        }
        assert_eq!(jitter(0), 0);
    }

    #[test]
    fn a_lease_shorter_than_a_webhook_call_is_refused() {
        let c = RelayConfig {
            lease_ms: 5_000,
            webhook_timeout_ms: 10_000,
            ..RelayConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("relay.lease_ms"));
        assert!(RelayConfig::default().validate().is_ok());
    }

    /// The lease covers a whole step: the last of 100 deliveries sent 10 at a time to
    /// an endpoint that takes its 10 s each goes out 100 s after the claim, long after a
    /// 60 s lease let another relay claim and send it.
    #[test]
    fn a_lease_shorter_than_a_steps_slowest_deliveries_is_refused() {
        let c = RelayConfig {
            in_flight: 10,
            ..RelayConfig::default()
        };
        let refused = c.validate().unwrap_err();
        assert!(
            refused.contains("10 rounds") && refused.contains("100000 ms"),
            "{refused}"
        );
        let c = RelayConfig {
            lease_ms: 100_001,
            ..c
        };
        assert!(c.validate().is_ok());
    }
}
