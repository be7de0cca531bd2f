//! An order as the buyer sees it: the tickets it owns and, in plain words, where the
//! payment stands and what happens next. A buyer left waiting by a slow provider or a
//! bank's 3-D Secure page reads this to know whether they paid and whether they have seats.

use boxoffice_domain::ticket::{SeatLabel, TicketId};
use boxoffice_domain::{EventId, HoldId, Millis, Money, OrderId, OrderState};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa::openapi::schema::{ObjectBuilder, Type};

use crate::ports::Order;

/// One seat of an order, while the order holds its seats.
#[derive(Clone, Debug, Serialize, PartialEq, Eq, ToSchema)]
pub struct Ticket {
    /// The ticket's id (`GET /v1/tickets/{id}`), derived from the order and the seat.
    pub ticket_id: TicketId,
    pub seat_id: String,
    pub price: Money,
}

/// An order as its buyer sees it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq, ToSchema)]
#[schema(as = Order)]
pub struct OrderView {
    pub order_id: OrderId,
    pub event_id: EventId,
    pub hold_id: HoldId,
    pub status: OrderState,
    /// Where the buyer's money stands (see `payment_schema`).
    #[schema(schema_with = payment_schema)]
    pub payment: &'static str,
    /// One sentence for the buyer about where things stand and what happens next.
    pub message: &'static str,
    pub seat_ids: Vec<String>,
    /// One per seat while the order holds its seats (committed, pending_capture,
    /// confirmed); empty otherwise.
    pub tickets: Vec<Ticket>,
    pub total: Money,
    pub currency: String,
    pub created_at: Millis,
    pub updated_at: Millis,
}

impl From<&Order> for OrderView {
    fn from(o: &Order) -> OrderView {
        let tickets = if o.state.holds_seats() {
            (o.seats.iter())
                .filter_map(|s| {
                    let label = SeatLabel::try_from(s.seat_id.clone()).ok()?;
                    Some(Ticket {
                        ticket_id: TicketId::for_seat(o.id, &label),
                        seat_id: s.seat_id.clone(),
                        price: s.price,
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        let (payment, message) = explain(o.state);
        OrderView {
            order_id: o.id,
            event_id: o.event,
            hold_id: o.hold,
            status: o.state,
            payment,
            message,
            seat_ids: o.seats.iter().map(|s| s.seat_id.clone()).collect(),
            tickets,
            total: o.total,
            currency: o.currency.clone(),
            created_at: o.created_at,
            updated_at: o.updated_at,
        }
    }
}

/// The values `OrderView::payment` takes (those `explain` answers).
const PAYMENTS: [&str; 5] = ["none", "reserved", "charged", "being_returned", "returned"];

fn payment_schema() -> ObjectBuilder {
    let about = "Where the buyer's money stands: untouched, reserved by an authorization, \
                 charged, or being / already returned.";
    (ObjectBuilder::new().schema_type(Type::String))
        .enum_values(Some(PAYMENTS))
        .description(Some(about))
}

/// (payment, message) for each state: what the buyer most needs to know.
pub fn explain(state: OrderState) -> (&'static str, &'static str) {
    use OrderState as S;
    match state {
        S::PendingPayment => (
            "none",
            "We are waiting for your payment provider. Your seats are kept for you meanwhile; you will not be charged unless the seats are yours.",
        ),
        S::Authorized => (
            "reserved",
            "Your payment is approved and your seats are being confirmed.",
        ),
        S::Committed | S::PendingCapture => (
            "reserved",
            "Your seats are yours. The charge is being completed with your payment provider.",
        ),
        S::Confirmed => (
            "charged",
            "Your seats are yours and your payment is complete.",
        ),
        S::Declined => (
            "none",
            "Your payment was declined; you were not charged and the seats were released.",
        ),
        S::Lost => (
            "none",
            "Those seats sold to another buyer first; your card was not charged.",
        ),
        S::Voiding => (
            "being_returned",
            "Your hold ended before the payment completed; the reservation on your card is being cancelled.",
        ),
        S::Voided => (
            "none",
            "Your hold ended before the payment completed; you were not charged.",
        ),
        S::Refunding => (
            "being_returned",
            "This order has no tickets (it was cancelled, or your payment arrived after your hold ended); your payment is being refunded in full.",
        ),
        S::Refunded => (
            "returned",
            "Your payment was refunded in full; this order has no tickets.",
        ),
        S::Cancelling => (
            "being_returned",
            "Your order was cancelled before the charge was completed (it was called off, or the charge could not be completed), so your tickets are cancelled and the seats are back on sale. The reservation on your card is being released; you will not be charged.",
        ),
        S::Cancelled => (
            "none",
            "Your order was cancelled before the charge was completed (it was called off, or the charge could not be completed), so your tickets were cancelled and the seats went back on sale. You were not charged.",
        ),
    }
}
