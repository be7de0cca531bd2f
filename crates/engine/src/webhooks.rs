//! Payment webhooks. A webhook is treated as a hint, never as the truth: after the
//! signature (and its age) is checked, the engine asks the provider for the payment's
//! current state and settles the order from that. So a duplicate finds nothing left to
//! do, a webhook arriving out of order cannot move an order backwards, and a forged or
//! replayed one is refused before anything is read. An event id already handled here is
//! answered from the ledger alone (`seen_webhooks`), sparing the provider the inquiry.

use boxoffice_domain::{OrderId, OrderState};

use crate::ports::WebhookError;
use crate::{Engine, EngineError};

/// What a delivered webhook led to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WebhookReceipt {
    /// The order it names, in the state it is in after settling. `duplicate` when this
    /// event id was handled before and the provider was not asked again.
    Settled {
        order: OrderId,
        status: OrderState,
        duplicate: bool,
    },
    /// A payment that is not one of our orders; acknowledged so the provider stops.
    Ignored,
}

#[derive(Debug, thiserror::Error)]
pub enum WebhookRejected {
    /// The webhook itself is not acceptable; the provider must not retry it as is.
    #[error(transparent)]
    Invalid(#[from] WebhookError),
    /// Something on our side failed; the provider should retry later.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl Engine {
    #[tracing::instrument(skip_all)]
    pub async fn handle_webhook(
        &self,
        payload: &[u8],
        signature: &str,
    ) -> Result<WebhookReceipt, WebhookRejected> {
        let event = self
            .ports
            .payments
            .verify_webhook(payload, signature, self.now())?;
        metrics::counter!("boxoffice_payment_webhooks_total").increment(1);
        let Some(id) = event.order else {
            return Ok(WebhookReceipt::Ignored);
        };
        let Some(order) = self
            .ports
            .ledger
            .order(id)
            .await
            .map_err(EngineError::from)?
        else {
            tracing::info!(event = %event.id, order = %id, "webhook for an unknown order");
            return Ok(WebhookReceipt::Ignored);
        };
        if self.seen_webhooks.contains(&event.id) {
            metrics::counter!("boxoffice_payment_webhooks_duplicate_total").increment(1);
            return Ok(WebhookReceipt::Settled {
                order: id,
                status: order.state,
                duplicate: true,
            });
        }
        tracing::debug!(event = %event.id, kind = %event.kind, order = %id, "payment webhook");
        // Settle until the order stops moving: a webhook that authorizes an order may
        // also let it commit and capture in the same delivery.
        let mut current = order;
        for _ in 0..4 {
            if !self.settle(&current).await? {
                break;
            }
            match self
                .ports
                .ledger
                .order(id)
                .await
                .map_err(EngineError::from)?
            {
                Some(o) if o.state != current.state => current = o,
                _ => break,
            }
        }
        // Only once handled without error: a failure answers 5xx and the provider's
        // retry must be handled in full.
        self.seen_webhooks.insert(&event.id);
        Ok(WebhookReceipt::Settled {
            order: id,
            status: current.state,
            duplicate: false,
        })
    }
}
