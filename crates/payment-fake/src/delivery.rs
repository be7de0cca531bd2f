//! The fake delivering its own webhooks, as a real provider does, so a demo's 3-D Secure
//! and bank-redirect payments complete with nobody reading the outbox by hand. Owned by
//! the fake and started by whoever opens it (the server's wiring), never by the engine.
//!
//! Each pass reads the outbox oldest first, POSTs every webhook that is not waiting out
//! a backoff, signed at that moment, and marks it delivered on a 2xx. A webhook that
//! fails waits `webhook_retry_min_ms`, doubling per failure up to `webhook_retry_max_ms`,
//! while the others go on: the receiver must cope with any order anyway. Backoffs live
//! in memory: after a restart every waiting webhook is simply tried again.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use boxoffice_engine::ports::{Clock, PaymentError};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::{FakeGateway, FakeWebhook};

/// Webhooks read from the outbox per page.
const PAGE: usize = 100;

/// Delivers the fake's outbox to one URL. Build it with [`WebhookSender::new`], then
/// either call [`step`](Self::step) or spawn [`run`](Self::run).
pub struct WebhookSender {
    gateway: Arc<FakeGateway>,
    client: reqwest::Client,
    url: String,
    clock: Arc<dyn Clock>,
    poll: Duration,
    retry_min: Duration,
    retry_max: Duration,
    /// Webhooks that failed: how many times, and not before when to try again.
    failing: HashMap<i64, (u32, Instant)>,
}

impl WebhookSender {
    /// A sender to `url`, signing with `clock` (the receiver checks the signature's age
    /// against its own clock) and timed by the fake's configuration.
    pub fn new(
        gateway: Arc<FakeGateway>,
        url: String,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, PaymentError> {
        let c = gateway.config();
        let ms = Duration::from_millis;
        let client = reqwest::Client::builder()
            .timeout(ms(c.webhook_timeout_ms))
            .build()
            .map_err(|e| PaymentError::Unavailable(format!("webhook client: {e}")))?;
        Ok(WebhookSender {
            poll: ms(c.webhook_poll_ms.max(1)),
            retry_min: ms(c.webhook_retry_min_ms.max(1)),
            retry_max: ms(c.webhook_retry_max_ms.max(c.webhook_retry_min_ms)),
            gateway,
            client,
            url,
            clock,
            failing: HashMap::new(),
        })
    }

    /// One pass over the outbox; returns how many webhooks were delivered.
    pub async fn step(&mut self) -> Result<usize, PaymentError> {
        let (mut after, mut delivered) = (0, 0);
        loop {
            let page = self.gateway.undelivered_webhooks_after(after, PAGE).await?;
            for w in &page {
                after = w.seq;
                if self.due(w.seq) && self.deliver(w).await? {
                    delivered += 1;
                }
            }
            if page.len() < PAGE {
                return Ok(delivered);
            }
        }
    }

    /// Delivers until `stop` turns true: a pass that delivered something is followed
    /// at once by another, an idle one by a wait of `webhook_poll_ms`.
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) {
        while !*stop.borrow() {
            let busy = match self.step().await {
                Ok(n) => n > 0,
                Err(e) => {
                    tracing::warn!(error = %e, "reading the fake provider's outbox failed");
                    false
                }
            };
            if !busy {
                tokio::select! {
                    _ = tokio::time::sleep(self.poll) => {}
                    _ = stop.changed() => {}
                }
            }
        }
    }

    fn due(&self, seq: i64) -> bool {
        self.failing
            .get(&seq)
            .is_none_or(|&(_, next)| next <= Instant::now())
    }

    /// POSTs one webhook; `Ok(false)` when the receiver did not take it (backoff set).
    async fn deliver(&mut self, w: &FakeWebhook) -> Result<bool, PaymentError> {
        let signature = self.gateway.sign(w.payload.as_bytes(), self.clock.now());
        let answer = self
            .client
            .post(&self.url)
            .header("Stripe-Signature", signature)
            .header("Content-Type", "application/json")
            .body(w.payload.clone())
            .send()
            .await;
        match answer {
            Ok(res) if res.status().is_success() => {
                self.gateway.mark_delivered(w.seq).await?;
                self.failing.remove(&w.seq);
                Ok(true)
            }
            Ok(res) => {
                self.failed(w, &format!("answered {}", res.status()));
                Ok(false)
            }
            Err(e) => {
                self.failed(w, &e.to_string());
                Ok(false)
            }
        }
    }

    fn failed(&mut self, w: &FakeWebhook, why: &str) {
        let attempts = self.failing.get(&w.seq).map_or(0, |&(n, _)| n) + 1;
        let wait = backoff(self.retry_min, self.retry_max, attempts);
        tracing::info!(event = %w.event_id, attempts, wait_ms = wait.as_millis() as u64, why, "webhook delivery failed; will retry");
        self.failing
            .insert(w.seq, (attempts, Instant::now() + wait));
    }
}

/// The wait after the `attempts`-th failure: `min`, doubling each time, at most `max`.
fn backoff(min: Duration, max: Duration, attempts: u32) -> Duration {
    let doublings = attempts.saturating_sub(1).min(30);
    min.saturating_mul(1 << doublings).min(max)
}

#[cfg(test)]
mod tests;
