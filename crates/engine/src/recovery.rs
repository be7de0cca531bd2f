//! The recovery sweep: drives every order left mid-checkout (a crash, a provider
//! timeout, a failed capture) to a final state by asking the provider what happened,
//! then committing or voiding. It only touches orders idle for `recovery_after_s`, so
//! it never races a checkout that is still running.

use boxoffice_domain::{HoldState, Millis, OrderEvent, OrderState};

use crate::ports::{Order, ProviderState};
use crate::worker::Outcome;
use crate::{Engine, EngineError};

impl Engine {
    pub async fn recovery_step(&self) -> Result<Outcome, EngineError> {
        let now = self.now();
        let before = Millis(now.0 - (self.config.recovery_after_s as i64) * 1000);
        let orders = self
            .ports
            .ledger
            .orders_in(&OrderState::UNFINISHED, before, 100)
            .await?;
        let mut done = 0;
        for order in &orders {
            match self.recover(order).await {
                Ok(true) => done += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(order = %order.id, error = %e, "recovery of order failed; will retry")
                }
            }
        }
        Ok(Outcome { done })
    }

    /// Moves one order on; returns whether it changed.
    async fn recover(&self, order: &Order) -> Result<bool, EngineError> {
        match order.state {
            OrderState::PendingPayment => self.recover_unpaid(order).await,
            OrderState::Authorized => {
                self.finish_authorized(order, order.payment_ref.as_deref().unwrap_or_default())
                    .await
            }
            OrderState::Committed | OrderState::PendingCapture => {
                let before = order.state;
                let after = self
                    .capture(order, order.payment_ref.as_deref().unwrap_or_default())
                    .await;
                Ok(
                    !matches!(after, Ok(crate::CheckoutOutcome::Confirmed(ref v)) if v.status == before),
                )
            }
            _ => Ok(false),
        }
    }

    /// The provider was called (or about to be) when things stopped: ask it.
    async fn recover_unpaid(&self, order: &Order) -> Result<bool, EngineError> {
        let now = self.now();
        let Ok(found) = self.ports.payments.inquire(order.id).await else {
            return Ok(false);
        };
        match found {
            Some(p) if matches!(p.state, ProviderState::Authorized | ProviderState::Captured) => {
                let authorized = self
                    .ports
                    .ledger
                    .apply(order.id, OrderEvent::Authorized, Some(&p.reference), now)
                    .await?;
                self.finish_authorized(&authorized, &p.reference).await
            }
            Some(p) if p.state == ProviderState::Declined => {
                self.ports
                    .ledger
                    .apply(order.id, OrderEvent::Declined, None, now)
                    .await?;
                self.release_quietly(order.hold).await;
                Ok(true)
            }
            // Never charged (no record, or voided): the order ends here.
            _ => {
                self.ports
                    .ledger
                    .apply(order.id, OrderEvent::Voided, None, now)
                    .await?;
                self.release_quietly(order.hold).await;
                Ok(true)
            }
        }
    }

    /// Funds are reserved. Commit only while the hold is still pinned for this order;
    /// once the pin's grace has passed the seats may be someone else's, so void.
    async fn finish_authorized(&self, order: &Order, reference: &str) -> Result<bool, EngineError> {
        let now = self.now();
        let hold = self.ports.arbiter.get(order.hold).await?;
        let pinned = hold.is_some_and(|h| {
            matches!(h.state, HoldState::CheckingOut | HoldState::PaymentPending)
                && h.order == Some(order.id)
                && h.expires_at > now
        });
        if pinned {
            let max = self
                .event(order.event)
                .await?
                .event
                .sale
                .max_tickets_per_buyer;
            // A lost race or a limit ends the order too; either way it moved.
            let _ = self.commit_and_capture(order, reference, max).await;
            return Ok(true);
        }
        match self.ports.payments.void(order.id, reference).await {
            Ok(()) => {
                self.ports
                    .ledger
                    .apply(order.id, OrderEvent::Voided, None, now)
                    .await?;
                self.release_quietly(order.hold).await;
                Ok(true)
            }
            Err(e) => {
                tracing::warn!(order = %order.id, error = %e, "void failed; will retry");
                Ok(false)
            }
        }
    }
}
