//! Late payments an event honours (`SaleSettings::honour_late_payments`). Money that
//! arrives after the hold's pin ran out is normally given back (see `settle`); an event
//! may instead fulfil it when every seat of the order is still free. The seats are taken
//! back in one atomic step of the hot store, under the order's own hold id so that
//! `mark_sold` and the audit find them where they expect, and the ledger commit that
//! follows still guards against a double sale.

use crate::ports::{ArbiterError, Order, Retake, StoreError};
use crate::{Engine, EngineError};

impl Engine {
    /// Takes the order's exact seats again, pinned for it for another grace period.
    /// `false` when the event does not honour late payments or any seat is gone: the
    /// caller gives the money back.
    pub(crate) async fn retake_for_late_payment(&self, order: &Order) -> Result<bool, EngineError> {
        let entry = self.event(order.event).await?;
        let sale = &entry.event.sale;
        if !sale.honour_late_payments {
            return Ok(false);
        }
        match self.retake_seats(order, sale.payment_grace_s).await {
            Ok(_) => {
                metrics::counter!("boxoffice_late_payments_honoured_total").increment(1);
                Ok(true)
            }
            // The hot store is unreachable, not refusing: try again rather than refund.
            Err(e @ ArbiterError::Store(_)) => Err(e.into()),
            Err(e) => {
                tracing::info!(order = %order.id, error = %e, "late payment not honoured; giving it back");
                Ok(false)
            }
        }
    }

    /// Takes the order's exact seats again under its own hold id, pinned for `grace_s`.
    async fn retake_seats(&self, order: &Order, grace_s: u32) -> Result<(), ArbiterError> {
        let entry = self
            .event(order.event)
            .await
            .map_err(|e| ArbiterError::Store(StoreError::new(e)))?;
        let seats: Option<Vec<_>> = order
            .seats
            .iter()
            .map(|s| entry.seat_index.get(&s.seat_id).copied())
            .collect();
        let seats = seats.ok_or(ArbiterError::UnknownHold)?;
        let now = self.now();
        let req = Retake {
            hold: order.hold,
            buyer: order.buyer,
            order: order.id,
            seats,
            pinned_until: now.plus_secs(grace_s as u64),
        };
        self.ports.arbiter.retake(&req, now).await.map(|_| ())
    }

    /// After the ledger committed: the hot store marks the seats sold. If the hold is gone
    /// (the hot store was rebuilt or lost meanwhile), the order's seats are taken again
    /// and then marked sold, so the hot store does not keep offering seats the ledger has
    /// sold; only if someone holds them now does the drift remain, for the audit to show.
    pub(crate) async fn record_sale_in_hot_store(&self, order: &Order) {
        if self.ports.arbiter.mark_sold(order.hold).await.is_ok() {
            return;
        }
        let healed = match self.retake_seats(order, 60).await {
            Ok(()) => self.ports.arbiter.mark_sold(order.hold).await.map(|_| ()),
            Err(e) => Err(e),
        };
        match healed {
            Ok(()) => {
                tracing::info!(order = %order.id, "hot store had lost the hold; sale recorded by retaking its seats")
            }
            Err(e) => {
                tracing::warn!(order = %order.id, error = %e, "hot store missed a sale; the audit will show the drift")
            }
        }
    }
}
