//! A committed sale that can no longer be paid for: the provider says its authorization
//! expired or was cancelled, or capture kept failing past the configured number of
//! attempts. Rather than keep the tickets unpaid for ever, the sale is cancelled: the
//! ledger claims the order (`cancelling`) and gives its seats back in the same step,
//! then the hot store takes them back, then the authorization is released and the order
//! ends `cancelled`. The claim comes before any money moves, as for every give-back.

use std::collections::{HashMap, HashSet};

use boxoffice_domain::{BuyerId, OrderEvent, OrderState, SeatIndex};

use crate::ports::{
    ArbiterError, Inquiry, LedgerError, Order, PaymentError, PaymentGateway, ProviderState,
    SoldSeat,
};
use crate::{Engine, EngineError};

/// What a refused capture means.
pub(crate) enum Capturable {
    /// The provider holds a capture already (an earlier answer was lost).
    Already,
    /// Worth trying again later.
    Later,
    /// The provider holds no authorization to capture any more.
    Never,
}

impl Engine {
    /// Whether an order in `pending_capture` has used up its capture attempts.
    pub(crate) fn capture_exhausted(&self, order: &Order) -> bool {
        order.state == OrderState::PendingCapture
            && order.attempts > self.config.capture_max_attempts
    }

    /// After a failed capture: whether there is still something to capture. Only a
    /// refusal is worth asking about; a timeout or an outage says nothing.
    pub(crate) async fn capturable(
        &self,
        order: &Order,
        error: &PaymentError,
        via: &dyn PaymentGateway,
    ) -> Capturable {
        if !matches!(error, PaymentError::Rejected(_)) {
            return Capturable::Later;
        }
        match via.inquire(&Inquiry::of(order)).await {
            Ok(Some(p)) => match p.state {
                ProviderState::Captured => Capturable::Already,
                ProviderState::Authorized | ProviderState::RequiresAction => Capturable::Later,
                ProviderState::Voided | ProviderState::Declined | ProviderState::Refunded => {
                    Capturable::Never
                }
            },
            Ok(None) | Err(_) => Capturable::Later,
        }
    }

    /// Cancels the sale of an order whose payment can no longer be captured. `false`
    /// when another path moved the order first.
    pub(crate) async fn abandon_capture(
        &self,
        order: &Order,
        via: &dyn PaymentGateway,
    ) -> Result<bool, EngineError> {
        let claimed = match self.ports.ledger.cancel_sale(order.id, self.now()).await {
            Ok(o) => o,
            Err(LedgerError::Conflict(_)) => return Ok(false),
            Err(e) => return Err(e.into()),
        };
        metrics::counter!("boxoffice_capture_abandoned_total").increment(1);
        tracing::error!(
            order = %order.id, attempts = order.attempts,
            "the payment can no longer be captured: the sale is cancelled and its seats are back on sale"
        );
        self.finish_cancelling(&claimed, via).await?;
        Ok(true)
    }

    /// An order in `cancelling` (or `refunding`): its seats back in the hot store,
    /// then the authorization released (or a capture refunded), then the final state.
    pub(crate) async fn finish_cancelling(
        &self,
        order: &Order,
        via: &dyn PaymentGateway,
    ) -> Result<bool, EngineError> {
        self.return_cancelled_seats(std::slice::from_ref(order))
            .await?;
        self.give_money_back(order, via).await
    }

    /// The money of a claimed order back: an authorization released, a capture
    /// refunded, as the provider shows it now; `true` once it is back.
    pub(crate) async fn give_money_back(
        &self,
        order: &Order,
        via: &dyn PaymentGateway,
    ) -> Result<bool, EngineError> {
        match via.inquire(&Inquiry::of(order)).await {
            Ok(Some(p)) => self.give_back(order, &p, via).await,
            Ok(None) => Ok(self
                .try_move(order.id, OrderEvent::Voided, None)
                .await?
                .is_some()),
            Err(e) => {
                tracing::warn!(order = %order.id, error = %e, "inquiry failed; will retry");
                Ok(false)
            }
        }
    }

    /// Who holds each ticket of `order` now, by seat label: a ticket given away counts
    /// against its recipient in the hot store (`hot_store_gives`), so its seat comes
    /// back off the recipient's count. A seat without a ticket (an order cancelled
    /// before it was paid, a node that keeps no ticket record) is the order's buyer's.
    async fn holders_of(&self, order: &Order) -> Result<HashMap<String, BuyerId>, EngineError> {
        let Some(tickets) = &self.tickets else {
            return Ok(HashMap::new());
        };
        Ok((tickets.tickets_of_order(order.id).await?.into_iter())
            .filter(|t| t.holder != order.buyer)
            .map(|t| (t.seat.as_str().to_owned(), t.holder))
            .collect())
    }

    /// The seats of cancelled sales of one event back in stock in the hot store. The
    /// ledger gave them back first, so a seat it has sold again since (to a later
    /// buyer) is left alone: a retry after a crash cannot free a seat that sold again
    /// meanwhile. The hot store returns only seats it still has sold, so a repeat
    /// changes nothing.
    pub(crate) async fn return_cancelled_seats(&self, orders: &[Order]) -> Result<(), EngineError> {
        let Some(first) = orders.first() else {
            return Ok(());
        };
        let entry = self.event(first.event).await?;
        let resold: HashSet<SeatIndex> = self
            .ledger_sold_seats(&entry)
            .await?
            .into_iter()
            .map(|s| s.seat)
            .collect();
        let mut seats = Vec::new();
        for o in orders {
            let holders = self.holders_of(o).await?;
            seats.extend(
                (o.seats.iter())
                    .filter_map(|s| {
                        let buyer = holders.get(s.seat_id.as_str()).copied();
                        Some((buyer.unwrap_or(o.buyer), *entry.seat_index.get(&s.seat_id)?))
                    })
                    .filter(|(_, s)| !resold.contains(s))
                    .map(|(buyer, seat)| SoldSeat { seat, buyer }),
            );
        }
        match self
            .ports
            .arbiter
            .return_sold_seats(first.event, &seats)
            .await
        {
            Ok(back) => {
                tracing::info!(event = %first.event, orders = orders.len(), seats = back, "seats of cancelled sales back on sale");
                Ok(())
            }
            // The event is rebuilt from the ledger on first use, with the seats free.
            Err(ArbiterError::UnknownEvent) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
