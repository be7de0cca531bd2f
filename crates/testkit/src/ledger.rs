//! The `Ledger` conformance suite. Every backend runs the same cases:
//!
//! ```ignore
//! boxoffice_testkit::ledger_conformance!(async { fresh_ledger() });
//! ```
//!
//! The expression is evaluated once per case and must yield a fresh
//! `Arc<dyn Ledger>`. Cases create their own uniquely named events, buyers and holds
//! and only assert on what they created, so a shared backend (one PostgreSQL database
//! for the whole run) passes as well as a fresh file per case.

mod audit;
mod authorize_commit;
mod cancel;
mod catalog;
mod commit;
mod concurrency;
mod event_cancel;
pub mod fixtures;
mod kept;
mod orders;
mod revoke;
mod schedule;

pub use audit::*;
pub use authorize_commit::*;
pub use cancel::*;
pub use catalog::*;
pub use commit::*;
pub use concurrency::*;
pub use event_cancel::*;
pub use kept::*;
pub use orders::*;
pub use revoke::*;
pub use schedule::*;

/// Expands into `mod ledger { … }` with one timed tokio test per case.
#[macro_export]
macro_rules! ledger_conformance {
    ($make:expr) => {
        mod ledger {
            #[allow(unused_imports)]
            use super::*;
            $crate::__port_suite_cases!(ledger, $make;
                events_are_created_numbered_and_read_back,
                an_unknown_event_reads_as_none,
                an_invalid_event_spec_is_refused,
                sale_status_moves_are_visible_to_status_queries,
                creating_a_buyer_twice_is_not_an_error,
                an_order_is_inserted_once_per_hold,
                the_fairness_seed_and_the_pool_are_kept_first_writer_first,
                the_line_journal_keeps_every_place_and_admission,
                a_position_in_line_is_journaled_for_one_buyer_only,
                processed_webhook_ids_are_forgotten_after_their_lifetime,
                the_operators_line_settings_are_kept_last_write_first,
                orders_read_back_by_id_hold_and_buyer,
                legal_moves_advance_the_order_and_record_the_payment_ref,
                an_illegal_move_is_a_conflict_holding_the_actual_state,
                moving_an_unknown_order_is_not_found,
                apply_cannot_commit_an_order_without_selling_its_seats,
                orders_due_are_idle_and_due_orders_of_the_states_in_schedule_order,
                orders_due_page_from_a_cursor,
                a_claimed_attempt_is_counted_once_and_a_new_state_starts_the_count_again,
                cancelling_a_sale_gives_its_seats_back_in_one_step,
                apply_cannot_cancel_a_sale_without_giving_its_seats_back,
                revoking_a_confirmed_sale_claims_it_and_gives_its_seats_back,
                revoking_a_sale_not_yet_captured_cancels_it,
                revoking_an_order_without_seats_is_a_conflict_and_writes_nothing,
                concurrent_cancels_of_one_order_claim_it_exactly_once,
                cancelling_an_event_closes_its_sale_and_records_the_job_once,
                cancellation_progress_is_saved_only_over_what_it_was_read_as,
                no_order_is_written_for_a_cancelled_event,
                an_events_orders_page_in_id_order_from_a_cursor,
                an_events_orders_are_counted_by_state,
                a_committed_order_has_its_seats_sold_to_its_buyer,
                a_second_order_for_a_sold_seat_gets_seat_taken_and_writes_nothing,
                an_order_for_a_seat_the_ledger_sold_is_not_written,
                an_order_can_be_committed_only_once,
                only_an_authorized_order_can_be_committed,
                a_buyer_over_the_limit_gets_limit_exceeded_and_no_seats,
                an_order_larger_than_the_limit_is_refused,
                a_committed_order_moves_on_to_capture_and_keeps_its_seats,
                one_conflicting_commit_in_a_batch_does_not_undo_the_others,
                k_seats_and_many_more_orders_sell_exactly_k_seats,
                authorizing_and_committing_in_one_sells_the_seats_with_the_reference,
                a_commit_lost_after_the_authorization_leaves_the_order_authorized,
                an_authorization_the_orders_state_refuses_writes_nothing,
                k_seats_and_many_more_orders_authorized_and_committed_in_one_sell_exactly_k,
                a_clean_ledger_has_clean_audit_facts,
            );
        }
    };
}

/// Expands into `mod ledger_kept { … }`: the cases of a move whose answer the replay
/// store keeps in the same write. The expression yields a fresh `KeptPorts` (a ledger
/// and the replay store of its own database, or one kept elsewhere, which falls back).
#[macro_export]
macro_rules! ledger_kept_conformance {
    ($make:expr) => {
        mod ledger_kept {
            #[allow(unused_imports)]
            use super::*;
            $crate::__port_suite_cases!(ledger, $make;
                a_captured_move_keeps_its_answer_in_the_same_write,
                a_kept_move_that_loses_keeps_nothing,
                two_kept_moves_racing_on_one_order_move_it_once,
                a_kept_move_under_a_claim_taken_over_moves_and_keeps_no_answer,
            );
        }
    };
}

/// One test per case name, each calling `$crate::$suite::$case(instance)`.
#[doc(hidden)]
#[macro_export]
macro_rules! __port_suite_cases {
    ($suite:ident, $make:expr; $($case:ident),+ $(,)?) => {
        $(
            #[$crate::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                $crate::$suite::$case($make.await).await;
            }
        )+
    };
}
