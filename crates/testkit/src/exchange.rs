//! The `Exchange` conformance suite. Every ledger backend runs the same cases:
//!
//! ```ignore
//! boxoffice_testkit::exchange_conformance!(async { fresh_stores() });
//! ```
//!
//! A swap is driven here by hand, step by step, as the engine would (the provider is
//! not the store's business): the cases pin the ledger's half of it — one reservation
//! per listing however many buyers race, each move once, the ticket moved with its
//! seat and both counts in one step, and every refusal writing nothing.

mod cancel;
mod races;
mod swaps;

use std::sync::Arc;

use boxoffice_domain::exchange::{ListingState, SwapState};
use boxoffice_domain::{BuyerId, Event, ListingId, Millis, Money, OrderId, SwapId};
use boxoffice_engine::ports::{
    Exchange, Ledger, Listing, Order, Reserve, Swap, TicketRow, Tickets,
};

pub use cancel::*;
pub use races::*;
pub use swaps::*;

use crate::ledger::fixtures::T0;
use crate::tickets::{TicketStores, confirmed_order, rows_of};

/// A ledger, its after-sale record and its exchange, on one database.
#[derive(Clone)]
pub struct ExchangeStores {
    pub ledger: Arc<dyn Ledger>,
    pub tickets: Arc<dyn Tickets>,
    pub exchange: Arc<dyn Exchange>,
}

/// Expands into `mod exchange { … }` with one timed tokio test per case.
#[macro_export]
macro_rules! exchange_conformance {
    ($make:expr) => {
        mod exchange {
            #[allow(unused_imports)]
            use super::*;
            $crate::__port_suite_cases!(exchange, $make;
                a_finished_swap_moves_the_ticket_its_seat_and_both_counts_once,
                refused_listings_and_reservations_write_nothing,
                a_swap_that_cannot_move_its_ticket_goes_to_refunding_and_undone_reopens,
                a_swap_waiting_for_the_buyer_is_found_by_its_charge_and_undone_reopens,
                n_buyers_racing_for_one_listing_exactly_one_wins,
                k_listings_and_n_buyers_make_exactly_k_swaps,
                revoking_the_sellers_order_revoked_the_ticket_its_swap_buyer_paid_for,
                n_claims_racing_over_k_exchanged_tickets_claim_each_once,
                n_cancels_racing_over_k_tickets_cancel_each_once,
                refused_ticket_cancellations_write_nothing,
                a_listed_ticket_is_not_offered_for_transfer_until_withdrawn,
                a_ticket_sold_on_once_is_not_listed_again,
                a_listed_ticket_is_not_renamed_until_withdrawn,
                a_listing_reopened_by_a_refused_move_can_be_reserved_while_its_swap_refunds,
                an_undone_swap_whose_charge_was_captured_goes_back_to_refunding_its_listing_left_alone,
            );
        }
    };
}

/// An event, a confirmed order of it and the order's tickets.
pub type Fixture = (Event, Order, Vec<TicketRow>);

/// When the cases list and buy: after the fixtures' order moves, before the doors.
pub const NOW: Millis = Millis(T0.0 + 60_000);

/// A confirmed order of `seats` seats (limit `seats`) with its tickets written.
pub async fn sold(s: &ExchangeStores, seats: u32) -> (Event, Order, Vec<TicketRow>) {
    let ts = TicketStores {
        ledger: s.ledger.clone(),
        tickets: s.tickets.clone(),
    };
    let (e, o) = confirmed_order(&ts, seats).await;
    let rows = rows_of(&o);
    s.tickets
        .insert_tickets(&rows)
        .await
        .expect("write the tickets");
    (e, o, rows)
}

/// A listing of `row` by its holder at 40.00.
pub fn listing_of(row: &TicketRow) -> Listing {
    Listing {
        id: ListingId::random(),
        ticket: row.id,
        event: row.event,
        seat: row.seat.as_str().to_owned(),
        seller: row.holder,
        version: row.version,
        price: Money(4_000),
        state: ListingState::Open,
        created_at: NOW,
        ended_at: None,
    }
}

/// `buyer`'s reservation of `l` (a seat of `order`), limit `limit`.
pub fn reserve_of(l: &Listing, order: &Order, buyer: BuyerId, limit: u32) -> Reserve {
    Reserve {
        swap: Swap {
            id: SwapId::random(),
            listing: l.id,
            ticket: l.ticket,
            event: l.event,
            seller: l.seller,
            buyer,
            seller_order: order.id,
            charge: OrderId::random(),
            charge_ref: None,
            price: l.price,
            currency: "EUR".into(),
            payout: Money(3_600),
            payment_method: "pm_card_visa".into(),
            state: SwapState::Reserved,
            created_at: NOW.plus_secs(1),
            updated_at: NOW.plus_secs(1),
        },
        max_per_buyer: limit,
    }
}

/// The audit's P2 and P6 findings about this event: none.
pub async fn audit_is_clean(s: &ExchangeStores, e: &Event) {
    let facts = s.ledger.audit_facts().await.expect("audit facts");
    let mine = |ev: &boxoffice_domain::EventId| *ev == e.id;
    assert!(
        !facts.sold_without_order.iter().any(|(ev, _)| mine(ev)),
        "{facts:?}"
    );
    assert!(
        !facts.buyers_over_limit.iter().any(|(ev, _, _)| mine(ev)),
        "{facts:?}"
    );
}

/// Charges, moves and finishes a reserved swap as the engine would, asserting each
/// move happens once.
pub async fn finish(s: &ExchangeStores, swap: SwapId, limit: u32) -> TicketRow {
    let x = &s.exchange;
    let at = NOW.plus_secs(2);
    let charged = x.advance(
        swap,
        SwapState::Reserved,
        SwapState::Charged,
        Some("ref"),
        at,
    );
    assert!(charged.await.expect("charge"), "reserved → charged once");
    let moved = x.move_ticket(swap, limit, at).await.expect("move");
    let boxoffice_engine::ports::Moved::Moved(ticket) = moved else {
        panic!("the ticket should move: {moved:?}");
    };
    let done = x.advance(swap, SwapState::Moved, SwapState::Done, None, at);
    assert!(done.await.expect("finish"), "moved → done once");
    ticket
}
