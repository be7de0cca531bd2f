//! Late payments an event honours (`SaleSettings::honour_late_payments`). Money that
//! arrives after the hold's pin ran out is normally given back (see `settle`); an event
//! may instead fulfil it when every seat of the order is still free. The seats are taken
//! back in one atomic step of the hot store, under the order's own hold id so that
//! `mark_sold` and the audit find them where they expect, and the ledger commit that
//! follows still guards against a double sale.

use crate::ports::{ArbiterError, Order, Retake};
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
        let seats: Option<Vec<_>> = order
            .seats
            .iter()
            .map(|s| entry.seat_index.get(&s.seat_id).copied())
            .collect();
        let Some(seats) = seats else {
            tracing::warn!(order = %order.id, "an order names a seat its event lacks");
            return Ok(false);
        };
        let now = self.now();
        let req = Retake {
            hold: order.hold,
            buyer: order.buyer,
            order: order.id,
            seats,
            pinned_until: now.plus_secs(sale.payment_grace_s as u64),
        };
        match self.ports.arbiter.retake(&req, now).await {
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
}
