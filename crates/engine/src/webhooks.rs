//! Payment webhooks. A webhook is treated as a hint, never as the truth: after the
//! signature (and its age) is checked, the engine asks the provider for the payment's
//! current state and settles the order from that. So a duplicate finds nothing left to
//! do, a webhook arriving out of order cannot move an order backwards, and a forged or
//! replayed one is refused before anything is read. Each event id is claimed in the
//! ledger before it is handled, so a duplicate, on this node or another, now or after a
//! restart, is handled once: the others are answered from the ledger alone, sparing the
//! provider the inquiry (P4). A claim whose handling failed is given back, so the
//! provider's retry is handled in full; one whose node died lapses after
//! `recovery_after_s`.

use boxoffice_domain::exchange::SwapState;
use boxoffice_domain::{Millis, OrderId, OrderState, SwapId};

use crate::ports::{Order, WebhookError, WebhookEvent};
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
    /// A face-value exchange purchase's charge (3-D Secure finished at the bank): the
    /// swap it names, in the state it is in after driving it on.
    Swap {
        swap: SwapId,
        state: SwapState,
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
            return self.swap_webhook_event(&event, id).await;
        };
        if !self.claim_webhook(&event).await? {
            metrics::counter!("boxoffice_payment_webhooks_duplicate_total").increment(1);
            return Ok(WebhookReceipt::Settled {
                order: id,
                status: order.state,
                duplicate: true,
            });
        }
        tracing::debug!(event = %event.id, kind = %event.kind, order = %id, "payment webhook");
        // An order that has no reference yet (its payment waits for the buyer's bank, or
        // its answer was lost) is asked about by the reference the signed webhook names:
        // read directly, where a search by order id may not list it yet (Stripe's lags).
        let mut order = order;
        if order.payment_ref.is_none() && !event.reference.is_empty() {
            order.payment_ref = Some(event.reference.clone());
        }
        let settled = self.settle_from_webhook(order).await;
        // Kept for good only once handled without error: a failure answers 5xx and the
        // provider's retry must be handled in full.
        if let Err(e) = self
            .ports
            .ledger
            .finish_webhook(&event.id, settled.is_ok())
            .await
        {
            tracing::warn!(event = %event.id, error = %e, "could not end the webhook's claim; it lapses");
        }
        let current = settled?;
        Ok(WebhookReceipt::Settled {
            order: id,
            status: current.state,
            duplicate: false,
        })
    }

    /// Claims the event id in the ledger: `false` when it was handled before.
    async fn claim_webhook(&self, event: &WebhookEvent) -> Result<bool, EngineError> {
        let now = self.now();
        let stale_before = Millis(now.0 - self.config.recovery_after_s as i64 * 1000);
        Ok(self
            .ports
            .ledger
            .claim_webhook(&event.id, self.incarnation, now, stale_before)
            .await?)
    }

    /// A webhook naming no order: a swap's charge (an exchange purchase whose buyer
    /// finished 3-D Secure), driven on as the sweep would, or a payment not ours.
    async fn swap_webhook_event(
        &self,
        event: &WebhookEvent,
        charge: OrderId,
    ) -> Result<WebhookReceipt, WebhookRejected> {
        let found = match self.exchange.as_ref() {
            Some(port) => port
                .swap_by_charge(charge)
                .await
                .map_err(EngineError::from)?,
            None => None,
        };
        let Some(swap) = found else {
            tracing::info!(event = %event.id, order = %charge, "webhook for an unknown order");
            return Ok(WebhookReceipt::Ignored);
        };
        if !self.claim_webhook(event).await? {
            metrics::counter!("boxoffice_payment_webhooks_duplicate_total").increment(1);
            return Ok(WebhookReceipt::Swap {
                swap: swap.id,
                state: swap.state,
                duplicate: true,
            });
        }
        tracing::debug!(event = %event.id, kind = %event.kind, swap = %swap.id, "payment webhook");
        let driven = self.swap_webhook(swap).await;
        if let Err(e) = (self.ports.ledger)
            .finish_webhook(&event.id, driven.is_ok())
            .await
        {
            tracing::warn!(event = %event.id, error = %e, "could not end the webhook's claim; it lapses");
        }
        let swap = driven?;
        Ok(WebhookReceipt::Swap {
            swap: swap.id,
            state: swap.state,
            duplicate: false,
        })
    }

    /// Settles until the order stops moving: a webhook that authorizes an order may also
    /// let it commit and capture in the same delivery.
    async fn settle_from_webhook(&self, order: Order) -> Result<Order, EngineError> {
        let id = order.id;
        let mut current = order;
        for _ in 0..4 {
            if !self.settle(&current).await? {
                break;
            }
            match self.ports.ledger.order(id).await? {
                Some(o) if o.state != current.state => current = o,
                _ => break,
            }
        }
        Ok(current)
    }
}
