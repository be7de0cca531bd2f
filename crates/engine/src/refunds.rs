//! Undoing a sale on request: the operator cancels any sale, a buyer returns their own
//! order while the event's refund window is open (`SaleSettings::buyer_refunds`).
//! The ledger claims the order first (`revoke_sale`: confirmed → refunding, committed
//! or pending_capture → cancelling) and gives its seats back in the same transaction;
//! then the hot store takes the seats back, then the money goes back through the
//! provider (a capture refunded, an authorization voided). The claim is conditional,
//! so of any number of concurrent requests exactly one undoes the sale and the others
//! are refused; a crash after the claim leaves an order the recovery sweep finishes.

use boxoffice_domain::OrderId;
use boxoffice_domain::refunds::buyer_may_refund;

use crate::buyers::BuyerSession;
use crate::order_view::OrderView;
use crate::ports::LedgerError;
use crate::{Engine, EngineError, Resource};

/// Who asks for a sale to be undone.
#[derive(Clone, Copy)]
pub enum Canceller<'a> {
    /// The operator: any order, at any time.
    Operator,
    /// A buyer: their own orders, while the event's refund window is open.
    Buyer(&'a BuyerSession),
}

impl Engine {
    /// Undoes the sale of an order and gives the money back; answers the order as it
    /// stands afterwards (`refunded` or `cancelled`, or still `refunding` /
    /// `cancelling` when the provider did not answer: the recovery sweep finishes it).
    #[tracing::instrument(skip_all, fields(order = %id))]
    pub async fn cancel_order(
        &self,
        id: OrderId,
        by: Canceller<'_>,
    ) -> Result<OrderView, EngineError> {
        let order = self
            .ports
            .ledger
            .order(id)
            .await?
            .ok_or(EngineError::NotFound(Resource::Order))?;
        if let Canceller::Buyer(who) = by {
            self.owned(who, &order)?;
            let entry = self.event(order.event).await?;
            if !buyer_may_refund(entry.event.sale.buyer_refunds.as_ref(), self.now()) {
                return Err(EngineError::RefundWindowClosed);
            }
        }
        if !order.state.holds_seats() {
            return Err(EngineError::OrderNotCancellable(order.state));
        }
        let ledger = &self.ports.ledger;
        let claim = match by {
            // A buyer who was admitted with the order cannot return it: refused in the
            // claim's own step, so no scan lands between the check and the claim.
            Canceller::Buyer(_) => ledger.revoke_unused_sale(id, self.now()).await,
            Canceller::Operator => ledger.revoke_sale(id, self.now()).await,
        };
        let claimed = match claim {
            Ok(o) => o,
            Err(LedgerError::Conflict(s)) => return Err(EngineError::OrderNotCancellable(s)),
            Err(e) => return Err(e.into()),
        };
        metrics::counter!("boxoffice_sales_cancelled_total").increment(1);
        // The claim stands whatever happens next; what is left undone, the recovery
        // sweep finishes, so the answer is the order as it now is.
        if let Err(e) = self
            .finish_cancelling(&claimed, &*self.ports.payments)
            .await
        {
            tracing::warn!(order = %id, error = %e, "finishing a cancelled sale failed; the sweep will");
        }
        let now = self.ports.ledger.order(id).await?.unwrap_or(claimed);
        Ok(OrderView::from(&now))
    }
}
