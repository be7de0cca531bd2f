//! The order lifecycle (docs/ARCHITECTURE.md §3). The order row is written
//! (`pending_payment`) before the provider is called, so every crash leaves a state the
//! recovery sweep can finish.
//!
//! ```text
//! pending_payment → authorized → committed → confirmed (captured)
//!                ↘ declined      ↘ lost (auth voided)  ↘ pending_capture (retry sweep)
//!                               ↘ voiding → voided  (the hold ended before the commit)
//! payment after expiry: declined | voided | lost | cancelled → refunding → refunded
//! pending_capture ─(authorization expired, or retries exhausted)─► cancelling → cancelled
//! confirmed ─(cancel requested: operator, buyer, event cancelled)─► refunding → refunded
//! committed | pending_capture ─(cancel requested)─► cancelling → cancelled | refunded
//! ```
//!
//! `cancelling` is the claim of a sale that can no longer be paid for: the ledger gives
//! its seats back in the same step, and only then is the authorization voided.
//!
//! `voiding` and `refunding` are claims written *before* the provider is asked to give
//! money back: the ledger move is conditional, so a racing commit and a racing void
//! cannot both win, and a crash after the claim leaves an unfinished order the
//! recovery sweep completes.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The seats are the buyer's in committed, pending_capture and confirmed. declined: card
/// refused. lost: a seat sold to someone else, authorization voided. voiding/voided: the
/// hold ended before the payment completed; the authorization is (being) cancelled and
/// nothing was charged. refunding/refunded: the money is (being) returned in full: it
/// arrived after the hold ended, or the sale was cancelled (by the operator, the buyer,
/// or the event's cancellation) and its seats went back on sale. cancelling/cancelled:
/// the charge of a confirmed order could not be completed (the authorization expired or
/// capture kept failing) or the sale was cancelled before the charge, so its tickets were
/// cancelled, its seats went back on sale and the authorization is (being) released;
/// nothing was charged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OrderState {
    PendingPayment,
    Authorized,
    Committed,
    PendingCapture,
    Confirmed,
    Declined,
    Lost,
    Voided,
    Refunded,
    /// The sale will not happen; the authorization is being cancelled.
    Voiding,
    /// Money arrived for a sale that cannot happen; it is being returned.
    Refunding,
    /// The authorization of a committed sale can no longer be captured (it expired or
    /// was cancelled, or capture kept failing): the seats are back on sale and the
    /// authorization is being released.
    Cancelling,
    /// A committed sale that could not be paid for, undone: no tickets, no charge.
    Cancelled,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderEvent {
    /// The provider reserved the funds.
    Authorized,
    /// The provider refused the card.
    Declined,
    /// The ledger recorded the sold seats.
    Committed,
    /// The ledger refused: a seat sold to someone else or a limit was hit. Auth voided.
    CommitLost,
    /// The authorization was cancelled before any seat was sold (e.g. recovery found
    /// the hold gone).
    Voided,
    Captured,
    CaptureFailed,
    /// Money that arrived for a sale that cannot happen was returned.
    Refunded,
    /// The hold ended before the commit: the authorization must be cancelled.
    Abandoned,
    /// The provider took money for an order that owns no seats: it must be returned.
    RefundDue,
    /// The authorization of a committed sale can no longer be captured: the ledger gives
    /// the seats back and the order is cancelled.
    CaptureAbandoned,
    /// The operator or the buyer undid the sale (or its event was cancelled): the ledger
    /// gives the seats back in the same step, then the money goes back (a capture
    /// refunded, an authorization voided).
    CancelRequested,
}

impl OrderEvent {
    pub const ALL: [OrderEvent; 12] = [
        OrderEvent::Authorized,
        OrderEvent::Declined,
        OrderEvent::Committed,
        OrderEvent::CommitLost,
        OrderEvent::Voided,
        OrderEvent::Captured,
        OrderEvent::CaptureFailed,
        OrderEvent::Refunded,
        OrderEvent::Abandoned,
        OrderEvent::RefundDue,
        OrderEvent::CaptureAbandoned,
        OrderEvent::CancelRequested,
    ];

    /// The history line of an order's creation, which is no move of the state machine.
    pub const CREATED: &'static str = "created";
    /// The history line of a ticket of a confirmed order passing to another buyer,
    /// which moves no state either.
    pub const TRANSFERRED: &'static str = "transferred";
    /// The history line of the holder changing the attendee's name on a ticket of a
    /// confirmed order, which moves no state either.
    pub const RENAMED: &'static str = "renamed";
    /// The history line of a ticket of a confirmed order resold on the exchange (its
    /// detail names the swap, the seller and the buyer); it moves no state.
    pub const EXCHANGED: &'static str = "exchanged";
    /// The history line of one ticket of a confirmed order cancelled by the operator
    /// (its detail names the ticket, the seat and the amount going back); the order
    /// stays confirmed for its other tickets.
    pub const TICKET_CANCELLED: &'static str = "ticket_cancelled";

    /// The name in the ledgers' order history (`order_events.event`) and payment rows
    /// (`payments.kind`).
    pub fn as_str(self) -> &'static str {
        match self {
            OrderEvent::Authorized => "authorized",
            OrderEvent::Declined => "declined",
            OrderEvent::Committed => "committed",
            OrderEvent::CommitLost => "commit_lost",
            OrderEvent::Voided => "voided",
            OrderEvent::Captured => "captured",
            OrderEvent::CaptureFailed => "capture_failed",
            OrderEvent::Refunded => "refunded",
            OrderEvent::Abandoned => "abandoned",
            OrderEvent::RefundDue => "refund_due",
            OrderEvent::CaptureAbandoned => "capture_abandoned",
            OrderEvent::CancelRequested => "cancel_requested",
        }
    }

    pub fn parse(s: &str) -> Option<OrderEvent> {
        OrderEvent::ALL.into_iter().find(|e| e.as_str() == s)
    }

    /// Events that sell seats or give them back: only the ledger's own operations for
    /// them (`commit`, `cancel_sale`, `revoke_sale`) may apply these, never a plain
    /// state move.
    pub fn moves_seats(self) -> bool {
        matches!(
            self,
            OrderEvent::Committed | OrderEvent::CaptureAbandoned | OrderEvent::CancelRequested
        )
    }

    /// Events that give an order's seats back.
    pub fn gives_seats_back(self) -> bool {
        matches!(
            self,
            OrderEvent::CaptureAbandoned | OrderEvent::CancelRequested
        )
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("an order that is {from:?} cannot take {event:?}")]
pub struct IllegalOrderMove {
    pub from: OrderState,
    pub event: OrderEvent,
}

impl OrderState {
    pub fn apply(self, event: OrderEvent) -> Result<OrderState, IllegalOrderMove> {
        use OrderEvent as E;
        use OrderState as S;
        let to = match (self, event) {
            (S::PendingPayment, E::Authorized) => S::Authorized,
            (S::PendingPayment, E::Declined) => S::Declined,
            (S::PendingPayment | S::Authorized, E::Voided) => S::Voided,
            (S::Authorized, E::Committed) => S::Committed,
            (S::Authorized, E::CommitLost) => S::Lost,
            (S::Committed | S::PendingCapture, E::Captured) => S::Confirmed,
            (S::Committed | S::PendingCapture, E::CaptureFailed) => S::PendingCapture,
            (
                S::Declined | S::Voided | S::Lost | S::Voiding | S::Refunding | S::Cancelling,
                E::Refunded,
            ) => S::Refunded,
            (S::Authorized, E::Abandoned) => S::Voiding,
            (S::Voiding, E::Voided) => S::Voided,
            (S::Declined | S::Voided | S::Lost | S::Voiding | S::Cancelled, E::RefundDue) => {
                S::Refunding
            }
            (S::PendingCapture, E::CaptureAbandoned) => S::Cancelling,
            (S::Cancelling, E::Voided) => S::Cancelled,
            (S::Confirmed, E::CancelRequested) => S::Refunding,
            (S::Committed | S::PendingCapture, E::CancelRequested) => S::Cancelling,
            (from, event) => return Err(IllegalOrderMove { from, event }),
        };
        Ok(to)
    }

    /// Whether the order owns sold seats in the ledger.
    pub fn holds_seats(self) -> bool {
        matches!(
            self,
            OrderState::Committed | OrderState::PendingCapture | OrderState::Confirmed
        )
    }

    pub fn is_final(self) -> bool {
        matches!(
            self,
            OrderState::Confirmed
                | OrderState::Declined
                | OrderState::Lost
                | OrderState::Voided
                | OrderState::Refunded
                | OrderState::Cancelled
        )
    }

    /// States the recovery sweep must drive forward.
    pub const UNFINISHED: [OrderState; 7] = [
        OrderState::PendingPayment,
        OrderState::Authorized,
        OrderState::Committed,
        OrderState::PendingCapture,
        OrderState::Voiding,
        OrderState::Refunding,
        OrderState::Cancelling,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OrderState::PendingPayment => "pending_payment",
            OrderState::Authorized => "authorized",
            OrderState::Committed => "committed",
            OrderState::PendingCapture => "pending_capture",
            OrderState::Confirmed => "confirmed",
            OrderState::Declined => "declined",
            OrderState::Lost => "lost",
            OrderState::Voided => "voided",
            OrderState::Refunded => "refunded",
            OrderState::Voiding => "voiding",
            OrderState::Refunding => "refunding",
            OrderState::Cancelling => "cancelling",
            OrderState::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<OrderState> {
        ALL_STATES.into_iter().find(|st| st.as_str() == s)
    }
}

pub const ALL_STATES: [OrderState; 13] = [
    OrderState::PendingPayment,
    OrderState::Authorized,
    OrderState::Committed,
    OrderState::PendingCapture,
    OrderState::Confirmed,
    OrderState::Declined,
    OrderState::Lost,
    OrderState::Voided,
    OrderState::Refunded,
    OrderState::Voiding,
    OrderState::Refunding,
    OrderState::Cancelling,
    OrderState::Cancelled,
];

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_event() -> impl Strategy<Value = OrderEvent> {
        proptest::sample::select(OrderEvent::ALL.to_vec())
    }

    proptest! {
        /// P2 in miniature: money is captured only for an order that committed seats and
        /// kept them, and an order owns seats from its commit until the ledger gives them
        /// back for good (a capture abandoned), never ending refunded, voided or lost
        /// while it owns them.
        #[test]
        fn capture_only_follows_a_commit(events in proptest::collection::vec(any_event(), 0..24)) {
            let mut state = OrderState::PendingPayment;
            let (mut committed, mut given_back) = (false, false);
            for e in events {
                if let Ok(next) = state.apply(e) {
                    if next == OrderState::Confirmed { prop_assert!(committed && !given_back); }
                    committed |= next == OrderState::Committed;
                    given_back |= e.gives_seats_back();
                    prop_assert_eq!(next.holds_seats(), committed && !given_back, "{:?} -{:?}-> {:?}", state, e, next);
                    // A confirmed sale only moves when it is undone, and a refund is final.
                    prop_assert!(state != OrderState::Confirmed || e == OrderEvent::CancelRequested);
                    prop_assert!(state != OrderState::Refunded);
                    state = next;
                }
            }
        }
    }

    #[test]
    fn an_uncapturable_sale_is_cancelled_and_can_still_refund_a_late_capture() {
        let cancelling = OrderState::PendingCapture
            .apply(OrderEvent::CaptureAbandoned)
            .unwrap();
        assert_eq!(cancelling, OrderState::Cancelling);
        assert!(!cancelling.holds_seats() && !cancelling.is_final());
        assert!(OrderState::UNFINISHED.contains(&cancelling));
        assert!(cancelling.apply(OrderEvent::Captured).is_err());
        let cancelled = cancelling.apply(OrderEvent::Voided).unwrap();
        assert_eq!(cancelled, OrderState::Cancelled);
        assert!(cancelled.is_final() && !cancelled.holds_seats());
        assert_eq!(
            cancelled.apply(OrderEvent::RefundDue),
            Ok(OrderState::Refunding)
        );
        assert!(
            OrderState::Committed
                .apply(OrderEvent::CaptureAbandoned)
                .is_err()
        );
        assert!(OrderEvent::CaptureAbandoned.moves_seats() && OrderEvent::Committed.moves_seats());
    }

    #[test]
    fn a_requested_cancel_claims_a_sale_and_a_second_one_is_refused() {
        let refunding = OrderState::Confirmed
            .apply(OrderEvent::CancelRequested)
            .unwrap();
        assert_eq!(refunding, OrderState::Refunding);
        assert!(!refunding.holds_seats() && OrderState::UNFINISHED.contains(&refunding));
        assert_eq!(
            refunding.apply(OrderEvent::Refunded),
            Ok(OrderState::Refunded)
        );
        for unpaid in [OrderState::Committed, OrderState::PendingCapture] {
            assert_eq!(
                unpaid.apply(OrderEvent::CancelRequested),
                Ok(OrderState::Cancelling)
            );
        }
        for s in ALL_STATES.into_iter().filter(|s| !s.holds_seats()) {
            assert!(s.apply(OrderEvent::CancelRequested).is_err(), "{s:?}");
        }
        assert!(OrderEvent::CancelRequested.moves_seats());
        assert!(OrderEvent::CancelRequested.gives_seats_back());
        assert!(!OrderEvent::Committed.gives_seats_back());
    }

    #[test]
    fn a_claimed_void_cannot_commit_and_ends_voided_or_refunded() {
        let voiding = OrderState::Authorized.apply(OrderEvent::Abandoned).unwrap();
        assert_eq!(voiding, OrderState::Voiding);
        assert!(voiding.apply(OrderEvent::Committed).is_err());
        assert_eq!(voiding.apply(OrderEvent::Voided), Ok(OrderState::Voided));
        assert_eq!(
            voiding.apply(OrderEvent::Refunded),
            Ok(OrderState::Refunded)
        );
        assert!(OrderState::Confirmed.apply(OrderEvent::RefundDue).is_err());
        assert!(!voiding.is_final() && OrderState::UNFINISHED.contains(&voiding));
    }

    #[test]
    fn state_names_round_trip() {
        for s in ALL_STATES {
            assert_eq!(OrderState::parse(s.as_str()), Some(s));
            assert_eq!(serde_json_name(s), s.as_str());
        }
    }

    #[test]
    fn event_names_round_trip_and_are_the_serde_names() {
        for e in OrderEvent::ALL {
            assert_eq!(OrderEvent::parse(e.as_str()), Some(e));
            assert_eq!(serde_json_name(e), e.as_str());
        }
        assert_eq!(OrderEvent::parse(OrderEvent::CREATED), None);
    }

    #[test]
    fn stored_names_are_distinct() {
        use std::collections::HashSet;
        let states: HashSet<_> = ALL_STATES.iter().map(|s| s.as_str()).collect();
        let events: HashSet<_> = OrderEvent::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(states.len(), ALL_STATES.len());
        assert_eq!(events.len(), OrderEvent::ALL.len());
        assert!(!events.contains(OrderEvent::CREATED));
        assert!(!events.contains(OrderEvent::TRANSFERRED));
        assert!(!events.contains(OrderEvent::RENAMED));
    }

    fn serde_json_name(s: impl Serialize) -> String {
        serde_json::to_value(s)
            .unwrap()
            .as_str()
            .unwrap()
            .to_string()
    }
}
