//! Late payments an event honours (`SaleSettings::honour_late_payments`). Money that
//! arrives after the hold's pin ran out is normally given back (see `settle`); an event
//! may instead fulfil it when every seat of the order is still free. The seats are taken
//! back in one atomic step of the hot store, under the order's own hold id so that
//! `mark_sold` and the audit find them where they expect, and the ledger commit that
//! follows still guards against a double sale.

use boxoffice_domain::OrderId;

use crate::ports::{ArbiterError, Order, Retake, SoldSeat, StoreError};
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
        match self.retake_seats(order, sale.payment_grace_s, None).await {
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

    /// Takes the order's exact seats again under its own hold id, pinned for `grace_s`;
    /// a hold still live for `replacing` (an order the ledger refused) is pinned for
    /// `order` in place.
    pub(crate) async fn retake_seats(
        &self,
        order: &Order,
        grace_s: u32,
        replacing: Option<OrderId>,
    ) -> Result<(), ArbiterError> {
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
            replacing,
        };
        self.ports.arbiter.retake(&req, now).await.map(|_| ())
    }

    /// After the ledger committed: the hot store marks the seats sold. If the hold is gone
    /// (the hot store was rebuilt or lost meanwhile), the ledger wins: the order's seats
    /// are marked sold whoever holds them now, and a hold on them ends, so its buyer is
    /// told `seat_sold` at checkout instead of paying for a seat that can only lose. An
    /// event the hot store does not have at all needs nothing: a rebuild reads this sale
    /// from the ledger (it reads the ledger again once loaded, for sales like this one
    /// that landed while it loaded).
    pub(crate) async fn record_sale_in_hot_store(&self, order: &Order) {
        if self.ports.arbiter.mark_sold(order.hold).await.is_ok() {
            return;
        }
        let entry = match self.event(order.event).await {
            Ok(entry) => entry,
            Err(e) => {
                tracing::warn!(order = %order.id, error = %e, "hot store missed a sale; the drift repair will mark it");
                return;
            }
        };
        let seats: Vec<SoldSeat> = order
            .seats
            .iter()
            .filter_map(|s| entry.seat_index.get(&s.seat_id))
            .map(|&seat| SoldSeat {
                seat,
                buyer: order.buyer,
            })
            .collect();
        let marked = self.ports.arbiter.mark_seats_sold(order.event, &seats);
        match marked.await {
            Ok(n) => {
                metrics::counter!("boxoffice_sales_recorded_without_hold_total").increment(1);
                tracing::info!(order = %order.id, marked = n, "the hot store had lost the hold; the sale's seats are marked sold")
            }
            Err(ArbiterError::UnknownEvent) => {
                tracing::info!(order = %order.id, "the hot store lost the event; its rebuild reads this sale from the ledger")
            }
            Err(e) => {
                tracing::warn!(order = %order.id, error = %e, "hot store missed a sale; the drift repair will mark it")
            }
        }
    }
}
