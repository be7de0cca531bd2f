//! Delivery to an operator's webhook endpoint: one signed JSON POST per event. Any 2xx
//! answer is delivered; anything else (another status, a timeout, a refused
//! connection) is a failed attempt the relay retries. Redirects are not followed: an
//! endpoint that moved is fixed by its operator, not guessed at.

use std::sync::Arc;
use std::time::Duration;

use boxoffice_engine::ports::{Clock, OutboxEvent, PublishError};

use crate::signature;

pub struct WebhookSink {
    client: reqwest::Client,
    clock: Arc<dyn Clock>,
}

impl WebhookSink {
    pub fn new(timeout: Duration, clock: Arc<dyn Clock>) -> Result<WebhookSink, PublishError> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("boxoffice/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| PublishError(format!("building the webhook client: {e}")))?;
        Ok(WebhookSink { client, clock })
    }

    pub async fn post(
        &self,
        url: &str,
        secret: &str,
        event: &OutboxEvent,
    ) -> Result<(), PublishError> {
        let body = event.payload.clone().into_bytes();
        let t = self.clock.now().0.div_euclid(1000);
        let answer = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(signature::HEADER, signature::sign(secret, &body, t))
            .header("boxoffice-event-id", event.id())
            .header("boxoffice-event-type", &event.kind)
            .body(body)
            .send()
            .await
            .map_err(|e| PublishError(format!("POST failed: {}", without_url(e))))?;
        let status = answer.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(PublishError(format!("answered {status}")))
        }
    }
}

/// reqwest's error with its causes, and without the URL (it may carry the endpoint's
/// own token in a query string, and the error is shown to operators).
fn without_url(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text
}
