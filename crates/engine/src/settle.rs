//! Settling an order: one function that looks at an order and at what the provider says
//! it did, and makes the two agree. The recovery sweep, webhooks and a checkout that
//! lost a race all call it, so it must be safe to run twice at once on one order:
//! every ledger move is conditional ([`Engine::try_move`]), every provider call is
//! idempotent, and money is given back only after the ledger has claimed the order
//! (`voiding`, `refunding`, `cancelling`), so a racing commit and a racing void cannot
//! both win. Every provider call goes through `via`: directly for a buyer waiting on
//! the answer, through the recovery sweep's paced door for the sweep.

use boxoffice_domain::{HoldState, Money, OrderEvent, OrderState};

use crate::checkout::CheckoutOutcome;
use crate::ports::{Inquiry, Order, PaymentError, PaymentGateway, ProviderPayment, ProviderState};
use crate::{Engine, EngineError};

impl Engine {
    /// Moves one order on as far as it can go now, calling the provider directly (a
    /// webhook, a checkout); returns whether anything changed.
    pub(crate) async fn settle(&self, order: &Order) -> Result<bool, EngineError> {
        self.settle_via(order, &*self.ports.payments).await
    }

    /// `settle`, calling the provider through `via` (the sweep's paced door).
    #[tracing::instrument(level = "debug", skip_all, fields(order = %order.id))]
    pub(crate) async fn settle_via(
        &self,
        order: &Order,
        via: &dyn PaymentGateway,
    ) -> Result<bool, EngineError> {
        use OrderState as S;
        match order.state {
            S::Authorized => self.finish_authorized(order, None, via).await,
            S::PendingCapture if self.capture_exhausted(order) => {
                self.abandon_capture(order, via).await
            }
            // An attempt counts as work even when it fails: the sweep's claim spaced
            // the next one.
            S::Committed | S::PendingCapture => {
                self.capture(order, reference(order), via).await?;
                Ok(true)
            }
            // A claimed give-back; a sale undone on request (`refunding` from
            // `confirmed`) has seats to give back to the hot store as well, and for a
            // late payment's `refunding` that return finds nothing to do.
            S::Cancelling | S::Refunding => self.finish_cancelling(order, via).await,
            S::Confirmed | S::Refunded => Ok(false),
            S::PendingPayment | S::Voiding => match via.inquire(&Inquiry::of(order)).await {
                Ok(found) => self.settle_with(order, found, via).await,
                Err(e) => {
                    tracing::warn!(order = %order.id, error = %e, "inquiry failed; will retry");
                    Ok(false)
                }
            },
            // An order that ended, asked about by a webhook or by a checkout whose order
            // another path ended meanwhile (the sweep passes only unfinished orders): a
            // failure is an error, so a webhook is answered 5xx and delivered again,
            // the one path that brings a late payment back (a checkout logs it and
            // answers the order as it is).
            S::Declined | S::Voided | S::Lost | S::Cancelled => {
                let found = via.inquire(&Inquiry::of(order)).await.map_err(|e| {
                    EngineError::Unavailable(format!("the provider did not answer: {e}"))
                })?;
                self.settle_with(order, found, via).await
            }
        }
    }

    async fn settle_with(
        &self,
        order: &Order,
        found: Option<ProviderPayment>,
        via: &dyn PaymentGateway,
    ) -> Result<bool, EngineError> {
        use OrderState as S;
        use ProviderState as P;
        let Some(p) = found else {
            // The provider never heard of it: nothing was charged.
            return match order.state {
                S::PendingPayment => self.end_unpaid(order, OrderEvent::Voided).await,
                S::Voiding => self.end_unpaid(order, OrderEvent::Voided).await,
                _ => Ok(false),
            };
        };
        match (order.state, p.state) {
            (S::PendingPayment, P::RequiresAction) => {
                if self.pinned(order).await? {
                    return Ok(false); // the buyer still has time at their bank
                }
                self.cancel_then(order, &p, OrderEvent::Voided, via).await
            }
            (S::PendingPayment, P::Declined) => {
                // A decline that came later (3-D Secure failed, an uncertain payment
                // found declined) counts toward velocity as one given at once; only
                // the path whose move ended the order counts it.
                let ended = self.end_unpaid(order, OrderEvent::Declined).await?;
                if ended {
                    self.velocity_declined(order.into(), None).await;
                }
                Ok(ended)
            }
            (S::PendingPayment, P::Voided | P::Refunded) => {
                self.end_unpaid(order, OrderEvent::Voided).await
            }
            (S::PendingPayment, P::Authorized | P::Captured) => {
                match self
                    .try_move(order.id, OrderEvent::Authorized, Some(&p.reference))
                    .await?
                {
                    Some(a) => self.finish_authorized(&a, Some(&p), via).await,
                    None => Ok(false),
                }
            }
            (S::Voiding | S::Refunding, _) => self.give_back(order, &p, via).await,
            // Money that arrived for an order that ended without seats: a late payment.
            (
                S::Declined | S::Voided | S::Lost | S::Cancelled,
                P::Authorized | P::RequiresAction,
            ) => self.void_at_provider(order, &p.reference, via).await,
            (S::Declined | S::Voided | S::Lost | S::Cancelled, P::Captured) => {
                match self.try_move(order.id, OrderEvent::RefundDue, None).await? {
                    Some(claimed) => self.give_back(&claimed, &p, via).await,
                    None => Ok(false),
                }
            }
            _ => Ok(false),
        }
    }

    /// Funds are reserved: commit, or give them back (see `commit_or_give_back`).
    /// `known` is what the provider said a moment ago, if it was asked.
    pub(crate) async fn finish_authorized(
        &self,
        order: &Order,
        known: Option<&ProviderPayment>,
        via: &dyn PaymentGateway,
    ) -> Result<bool, EngineError> {
        let max = self
            .event(order.event)
            .await?
            .event
            .sale
            .max_tickets_per_buyer;
        let reference = known.map_or(reference(order), |p| p.reference.as_str());
        match self
            .commit_or_give_back(order, reference, known, max, via)
            .await
        {
            // A lost race, a limit, a lapsed hold: the order ended, which is progress.
            Ok(_) | Err(EngineError::SeatSold | EngineError::LimitExceeded { .. }) => Ok(true),
            Err(EngineError::HoldExpired | EngineError::PaymentDeclined(_)) => Ok(true),
            Err(e) => Err(e),
        }
    }

    /// Funds are reserved. Commit only while the hold is still pinned for this order,
    /// checked after the provider answered: a pin can lapse while the provider thinks,
    /// and the seats may then be someone else's in the hot store. An event that honours
    /// late payments may retake the same seats instead. Otherwise the order is claimed
    /// for voiding before the money is given back, as `known` (what the provider said a
    /// moment ago) or a fresh inquiry shows it.
    pub(crate) async fn commit_or_give_back(
        &self,
        order: &Order,
        reference: &str,
        known: Option<&ProviderPayment>,
        max_per_buyer: u32,
        via: &dyn PaymentGateway,
    ) -> Result<CheckoutOutcome, EngineError> {
        if self.pinned(order).await? || self.retake_for_late_payment(order).await? {
            return self
                .commit_and_capture(order, reference, max_per_buyer, via)
                .await;
        }
        let Some(claimed) = self.try_move(order.id, OrderEvent::Abandoned, None).await? else {
            return self.current(order.id).await; // a racing commit won; it will capture
        };
        let found = match known {
            Some(p) => Ok(Some(p.clone())),
            None => via.inquire(&Inquiry::of(order)).await,
        };
        match found {
            Ok(Some(p)) => {
                self.give_back(&claimed, &p, via).await?;
            }
            Ok(None) => {
                self.end_unpaid(&claimed, OrderEvent::Voided).await?;
            }
            Err(e) => {
                tracing::warn!(order = %order.id, error = %e, "inquiry failed; will retry")
            }
        }
        self.current(order.id).await
    }

    /// An order claimed `voiding`, `refunding` or `cancelling`: void an authorization,
    /// refund a capture, then record how it ended.
    pub(crate) async fn give_back(
        &self,
        order: &Order,
        p: &ProviderPayment,
        via: &dyn PaymentGateway,
    ) -> Result<bool, EngineError> {
        let (call, event) = match p.state {
            ProviderState::Captured => {
                (self.refund_rest(order, p, via).await?, OrderEvent::Refunded)
            }
            ProviderState::Refunded => (Ok(()), OrderEvent::Refunded),
            ProviderState::Authorized | ProviderState::RequiresAction => {
                (via.void(order.id, &p.reference).await, OrderEvent::Voided)
            }
            ProviderState::Voided | ProviderState::Declined => (Ok(()), OrderEvent::Voided),
        };
        if let Err(e) = call {
            tracing::warn!(order = %order.id, error = %e, "giving money back failed; will retry");
            return Ok(false);
        }
        // A `refunding` order refunded; a `voiding` one voided or refunded.
        let event = if order.state == OrderState::Refunding {
            OrderEvent::Refunded
        } else {
            event
        };
        if event == OrderEvent::Refunded && order.state != OrderState::Cancelling {
            metrics::counter!("boxoffice_late_payments_refunded_total").increment(1);
        }
        self.try_move(order.id, event, None).await?;
        self.release_quietly(order.hold).await;
        Ok(true)
    }

    /// Refunds what is left of an order's capture. An order some of whose tickets were
    /// sold on through the exchange, or cancelled on their own, was refunded those in
    /// parts already (keyed by the swap or the ticket), so only the rest goes back, keyed `<order>.rest`, and never
    /// more than the capture; an order with no such part is refunded in full.
    async fn refund_rest(
        &self,
        order: &Order,
        p: &ProviderPayment,
        via: &dyn PaymentGateway,
    ) -> Result<Result<(), PaymentError>, EngineError> {
        let mut parts = match self.exchange.as_ref() {
            Some(x) => x.payouts_of(order.id).await?,
            None => Money(0),
        };
        if let Some(t) = self.tickets.as_ref() {
            parts.0 += t.cancelled_parts(order.id).await?.0;
        }
        if parts.0 <= 0 {
            return Ok(via.refund(order.id, &p.reference).await);
        }
        let rest = order.total.0.min(p.amount.0) - parts.0;
        if rest <= 0 {
            return Ok(Ok(()));
        }
        let key = format!("{}.rest", order.id);
        Ok(via
            .refund_part(order.id, &p.reference, Money(rest), &key)
            .await)
    }

    /// Cancels a payment still waiting for the buyer, then ends the order unpaid. If the
    /// cancel fails the buyer may have just approved: the next pass sees that.
    async fn cancel_then(
        &self,
        order: &Order,
        p: &ProviderPayment,
        event: OrderEvent,
        via: &dyn PaymentGateway,
    ) -> Result<bool, EngineError> {
        match via.void(order.id, &p.reference).await {
            Ok(()) => self.end_unpaid(order, event).await,
            Err(e) => {
                tracing::info!(order = %order.id, error = %e, "cancel refused; will ask again");
                Ok(false)
            }
        }
    }

    /// Voids a payment that arrived for an order that had ended. The order is final, so
    /// the sweep never passes it again: a void that fails is an error, and the webhook
    /// that brought the payment is answered 5xx and delivered again until it succeeds.
    async fn void_at_provider(
        &self,
        order: &Order,
        reference: &str,
        via: &dyn PaymentGateway,
    ) -> Result<bool, EngineError> {
        match via.void(order.id, reference).await {
            Ok(()) => Ok(true),
            Err(PaymentError::Rejected(_)) => Ok(false),
            Err(e) => {
                tracing::warn!(order = %order.id, error = %e, "void of a late payment failed");
                Err(EngineError::Unavailable(format!(
                    "the provider could not void a late payment: {e}"
                )))
            }
        }
    }

    /// Ends an order that took no money and gives its seats back, but only once the
    /// ledger took the move: a refused move means another path moved the order first
    /// (it may have committed it, and the hold's seats are then sold). A hold left
    /// pinned that way is returned to stock by expiry at the end of its grace.
    pub(crate) async fn end_unpaid(
        &self,
        order: &Order,
        event: OrderEvent,
    ) -> Result<bool, EngineError> {
        if self.try_move(order.id, event, None).await?.is_none() {
            return Ok(false);
        }
        self.release_quietly(order.hold).await;
        Ok(true)
    }

    /// Whether the hold is still pinned for this order and its grace has not run out.
    pub(crate) async fn pinned(&self, order: &Order) -> Result<bool, EngineError> {
        let now = self.now();
        let hold = self.ports.arbiter.get(order.hold).await?;
        Ok(hold.is_some_and(|h| {
            matches!(h.state, HoldState::CheckingOut | HoldState::PaymentPending)
                && h.order == Some(order.id)
                && h.expires_at > now
        }))
    }
}

fn reference(order: &Order) -> &str {
    order.payment_ref.as_deref().unwrap_or_default()
}
