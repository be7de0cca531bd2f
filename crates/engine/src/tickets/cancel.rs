//! One ticket of an order cancelled by the operator (`POST /v1/tickets/{id}/cancel`),
//! as a whole order is (`refunds.rs`): the ledger claims it first, in one step (the
//! ticket stands `refunding` on its own so the door refuses it and every gate bundle
//! lists it revoked, its sold seat is deleted and its holder's count lowered, and a
//! `ticket_cancelled` line goes into the order's history and out through the outbox);
//! then the hot store takes the seat back; then the seat's part of the payment goes back
//! through the provider's `refund_part`, keyed `<ticket>.cancel`, and the ticket ends
//! `cancelled`. The claim is conditional, so of any number of requests one cancels the
//! ticket; a crash or a provider failure after it leaves a `refunding` ticket that the
//! recovery sweep finishes through its paced door (`recovery_step`), the same way it
//! finishes a refunding order. The order stays confirmed for its other tickets, and its
//! own refund later is only what is left of it.
//!
//! Refused, with nothing written: a ticket already cancelled; one scanned; one sold on
//! through the exchange (it is its swap buyer's now); one listed on the exchange, in a
//! swap, or offered to another buyer (withdraw that first: a listing or an offer of a
//! ticket that is gone would be stale); one of an order that is not confirmed; and the
//! order's last ticket still following it (cancelling the order is that).

use boxoffice_domain::ticket::{SeatLabel, TicketId};
use boxoffice_domain::{Millis, Money, OrderId, OrderState};
use serde::Serialize;

use super::TicketRefusal;
use crate::ports::{CancelledTicket, Order, PaymentGateway, TicketCancelRefusal};
use crate::{Engine, EngineError, Resource};

/// A ticket cancelled on its own, as the operator sees it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct TicketCancellation {
    #[schema(value_type = String)]
    pub ticket_id: TicketId,
    pub order_id: OrderId,
    #[schema(value_type = String)]
    pub seat_id: SeatLabel,
    /// The part of the order's payment going back: the seat's price in the order.
    pub amount: Money,
    /// `refunding` while the money is on its way back (the recovery sweep finishes
    /// it), `cancelled` once it is back.
    pub state: OrderState,
    pub cancelled_at: Millis,
}

impl TicketCancellation {
    fn of(c: &CancelledTicket) -> TicketCancellation {
        TicketCancellation {
            ticket_id: c.ticket,
            order_id: c.order,
            seat_id: c.seat.clone(),
            amount: c.amount,
            state: c.state,
            cancelled_at: c.cancelled_at,
        }
    }
}

impl Engine {
    /// POST /v1/tickets/{id}/cancel (operator): claims the ticket's cancellation, gives
    /// its seat back and its part of the payment; answers it as it then stands.
    #[tracing::instrument(skip_all, fields(ticket = %id))]
    pub async fn cancel_ticket(&self, id: TicketId) -> Result<TicketCancellation, EngineError> {
        use TicketCancelRefusal as No;
        let port = self.tickets_port()?;
        let claimed = match port.cancel_ticket(id, self.now()).await? {
            Ok(c) => c,
            Err(no) => {
                return Err(match no {
                    No::NotFound => EngineError::NotFound(Resource::Ticket),
                    No::AlreadyCancelled => TicketRefusal::AlreadyCancelled.into(),
                    No::LastTicket => TicketRefusal::LastTicketOfOrder.into(),
                    No::CheckedIn => TicketRefusal::NotCancellable("it was scanned").into(),
                    No::Exchanged => TicketRefusal::NotCancellable(
                        "it was sold on through the exchange and belongs to its buyer",
                    )
                    .into(),
                    No::Listed => TicketRefusal::NotCancellable(
                        "it is listed on the exchange or offered to another buyer; withdraw that first",
                    )
                    .into(),
                    No::NotConfirmed(_) => {
                        TicketRefusal::NotCancellable("its order is not a paid sale").into()
                    }
                });
            }
        };
        metrics::counter!("boxoffice_tickets_cancelled_total").increment(1);
        let mut answer = claimed.clone();
        match self
            .finish_ticket_cancel(&claimed, &*self.ports.payments)
            .await
        {
            Ok(true) => answer.state = OrderState::Cancelled,
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(ticket = %id, error = %e, "finishing a cancelled ticket failed; the sweep will")
            }
        }
        Ok(TicketCancellation::of(&answer))
    }

    /// A claimed ticket: its seat back in the hot store (only if the ledger has not
    /// sold it again since, so a repeat frees it no second time), then its part of the
    /// payment refunded, keyed by the ticket, then `cancelled`. `true` once the money
    /// is back.
    pub(crate) async fn finish_ticket_cancel(
        &self,
        c: &CancelledTicket,
        via: &dyn PaymentGateway,
    ) -> Result<bool, EngineError> {
        let order = (self.ports.ledger.order(c.order).await?)
            .ok_or(EngineError::NotFound(Resource::Order))?;
        let seat_only = Order {
            seats: (order.seats.iter())
                .filter(|s| s.seat_id == c.seat.as_str())
                .cloned()
                .collect(),
            ..order.clone()
        };
        self.return_cancelled_seats(std::slice::from_ref(&seat_only))
            .await?;
        let Some(reference) = order.payment_ref.as_deref() else {
            return Err(EngineError::Internal(
                "a confirmed order has no payment".into(),
            ));
        };
        let key = format!("{}.cancel", c.ticket);
        if let Err(e) = via.refund_part(order.id, reference, c.amount, &key).await {
            tracing::warn!(ticket = %c.ticket, error = %e, "refund of a cancelled ticket failed; will retry");
            return Ok(false);
        }
        self.tickets_port()?.ticket_refunded(c.ticket).await?;
        Ok(true)
    }

    /// The recovery sweep's share: every ticket claimed for cancellation at least
    /// `recovery_after_s` ago whose money is not back, through the paced door.
    pub(crate) async fn finish_cancelled_tickets(&self, idle_since: Millis) -> usize {
        let Some(port) = self.tickets.as_ref() else {
            return 0;
        };
        let limit = u32::try_from(self.config.recovery_page.max(1)).unwrap_or(u32::MAX);
        let page = match port.tickets_refunding(idle_since, limit).await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the cancelled tickets to finish");
                return 0;
            }
        };
        let via = &*self.recovery_payments;
        self.count_in_flight(page, |c| async move {
                match self.finish_ticket_cancel(&c, via).await {
                    Ok(back) => back,
                    Err(e) => {
                        tracing::warn!(ticket = %c.ticket, error = %e, "finishing a cancelled ticket failed; will retry");
                        false
                    }
                }
            })
            .await
    }
}
