//! The `Tickets` conformance suite. Every ledger backend runs the same cases:
//!
//! ```ignore
//! boxoffice_testkit::tickets_conformance!(async { fresh_stores() });
//! ```
//!
//! The expression yields a fresh `TicketStores`: the ledger and its after-sale record
//! on one database (tickets join orders). Cases create their own events, orders and
//! gates, so a shared database passes as well as a fresh file per case.

mod checkin;
mod concurrency;
mod names;
mod records;
mod transfers;

use std::sync::Arc;

use boxoffice_domain::{BuyerId, Event, GateId, Millis};
use boxoffice_engine::ports::{Gate, Ledger, Order, TicketRow, Tickets};

pub use checkin::*;
pub use concurrency::*;
pub use names::*;
pub use records::*;
pub use transfers::*;

use crate::ledger::fixtures::{T0, captured, event};

/// A ledger and the after-sale record kept beside it.
#[derive(Clone)]
pub struct TicketStores {
    pub ledger: Arc<dyn Ledger>,
    pub tickets: Arc<dyn Tickets>,
}

/// Expands into `mod tickets { … }` with one timed tokio test per case.
#[macro_export]
macro_rules! tickets_conformance {
    ($make:expr) => {
        mod tickets {
            #[allow(unused_imports)]
            use super::*;
            $crate::__port_suite_cases!(tickets, $make;
                keys_are_added_once_per_number_and_retired_keys_stop_verifying,
                the_rotation_secret_is_drawn_once_and_kept_across_switches,
                tickets_are_written_at_capture_once_and_read_back_with_their_orders_state,
                gates_are_created_once_per_key_found_by_digest_and_revoked,
                a_ticket_is_admitted_once_and_a_second_scan_names_the_first,
                a_ticket_admits_only_while_its_order_is_confirmed,
                a_buyers_revoke_is_refused_once_a_ticket_they_hold_was_admitted,
                an_old_version_or_an_unknown_ticket_is_refused,
                offline_scans_are_reconciled_earliest_first,
                two_gates_racing_over_k_tickets_admit_each_exactly_once,
                a_scan_and_a_buyers_refund_racing_over_k_orders_one_wins_each,
                an_accepted_transfer_moves_the_ticket_its_seat_and_both_counts,
                a_buyers_revoke_is_refused_once_a_ticket_was_given_away,
                a_refused_or_withdrawn_transfer_moves_nothing,
                n_offers_and_accepts_racing_over_k_tickets_one_wins_each,
                names_given_with_the_order_are_on_the_tickets_written_at_capture,
                a_rename_issues_the_next_version_and_counts_only_changes,
                a_refused_rename_writes_nothing,
                n_renames_racing_over_k_tickets_one_wins_per_version_within_the_limit,
            );
        }
    };
}

/// An event of `seats` seats (limit `seats` per buyer) and a confirmed order of all of
/// them.
pub async fn confirmed_order(s: &TicketStores, seats: u32) -> (Event, Order) {
    let e = event(&s.ledger, seats, seats).await;
    let all: Vec<usize> = (0..seats as usize).collect();
    let o = captured(&s.ledger, &e, BuyerId::random(), &all, seats).await;
    (e, o)
}

/// The first version of each ticket of `order`, as the ledger writes them when the
/// order's capture is recorded (at `T0 + 3 s` in `confirmed_order`).
pub fn rows_of(order: &Order) -> Vec<TicketRow> {
    TicketRow::first_of(order, T0.plus_secs(3)).expect("labels of sold seats")
}

/// A new gate of `event`, its credential digest made of its name.
pub async fn gate(s: &TicketStores, event: &Event, name: &str) -> Gate {
    let g = Gate {
        id: GateId::random(),
        event: event.id,
        name: name.to_owned(),
        digest: random_digest(),
        revoked: false,
        created_at: T0,
    };
    let added = s.tickets.add_gate(&g, &GateId::random().to_string()).await;
    assert_eq!(added.expect("add the gate"), None, "a fresh key adds");
    g
}

/// 32 random bytes, as a credential's digest.
pub fn random_digest() -> [u8; 32] {
    let mut out = [0u8; 32];
    out[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    out[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    out
}

/// A scan time after the fixtures' order moves.
pub const DOORS: Millis = Millis(T0.0 + 3_600_000);
