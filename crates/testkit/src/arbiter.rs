//! The `SeatArbiter` conformance suite. An adapter passes when every case passes:
//!
//! ```ignore
//! boxoffice_testkit::arbiter_conformance!(async {
//!     std::sync::Arc::new(MyArbiter::new()) as std::sync::Arc<dyn SeatArbiter>
//! });
//! ```
//!
//! The invoking crate needs `tokio` (with `macros` and `rt-multi-thread`) as a
//! dev-dependency. Each case loads its own event under a random id and unloads it, so
//! one shared backend can run the whole suite at once.
//!
//! Semantics the suite pins down beyond the port's doc comments (every backend must
//! agree): a retried move (same pin order, second uncertain/sold/release) answers with
//! the hold as it is; expiries performed inside `hold` or `pin` are still reported once
//! by the next `expire_due`; a hold id seen before answers with its hold.

mod basics;
mod concurrent;
mod fixtures;
mod keys;
mod lifecycle;
mod limits;
mod moves;
mod repair;
mod retake;

pub use basics::*;
pub use concurrent::*;
pub use fixtures::*;
pub use keys::*;
pub use lifecycle::*;
pub use limits::*;
pub use moves::*;
pub use repair::*;
pub use retake::*;

/// For the macros: the port, reachable as `$crate::arbiter::SeatArbiter`.
#[doc(hidden)]
pub use boxoffice_engine::ports::SeatArbiter;

/// Expands into `mod arbiter { … }` with one timed tokio test per case; the argument is an expression whose
/// `.await` gives an `Arc<dyn SeatArbiter>`, evaluated afresh for every case.
#[macro_export]
macro_rules! arbiter_conformance {
    ($make:expr) => {
        mod arbiter {
            #[allow(unused_imports)]
            use super::*;
            $crate::__arbiter_cases!([$crate::__conformance_cases] arbiter, SeatArbiter, $make;);
        }
    };
}

/// One timed tokio test per case on a two-worker runtime, so races are real.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_cases {
    ($suite:ident, $port:ident, $make:expr; $($case:ident),+ $(,)?) => {
        $(
            #[$crate::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let port: ::std::sync::Arc<dyn $crate::$suite::$port> = $make.await;
                $crate::$suite::$case(port).await;
            }
        )+
    };
}

/// The suite's case names, handed to the macro in brackets after the other arguments:
/// the one list that every runner of the suite (per-case tests, a sequential run on a
/// cluster) expands, so none of them can miss a case.
#[doc(hidden)]
#[macro_export]
macro_rules! __arbiter_cases {
    ([$($cb:tt)*] $($args:tt)*) => {
        $($cb)*!($($args)*
                a_second_buyer_cannot_hold_a_seat_already_held,
                a_named_hold_takes_all_its_seats_or_none,
                best_available_gives_the_best_ranked_seats,
                two_buyers_asking_for_the_best_seats_get_different_seats,
                adjacent_best_available_keeps_a_party_together_in_one_row,
                adjacent_best_available_falls_back_to_single_seats_when_no_run_is_left,
                general_admission_hands_out_distinct_units_and_ignores_adjacency,
                a_buyer_cannot_hold_more_than_the_limit_across_holds,
                seats_sold_to_a_buyer_count_against_the_limit,
                bad_quantities_are_refused,
                unknown_events_holds_seats_and_sections_are_errors,
                the_availability_bitmap_has_one_bit_per_seat_most_significant_first,
                counts_follow_holds_and_sales,
                the_quote_is_each_seats_price_at_hold_time,
                a_rebuilt_event_comes_back_with_its_sold_seats_sold,
                an_unloaded_event_is_forgotten,
                a_hold_past_its_deadline_returns_its_seats_exactly_once,
                the_sweep_expires_at_most_its_limit,
                a_new_hold_first_expires_holds_that_are_due,
                a_pinned_hold_does_not_expire_before_its_pinned_deadline,
                an_expired_hold_cannot_be_pinned,
                a_sold_hold_keeps_its_seats_for_good,
                an_uncertain_payment_keeps_the_pin_and_can_still_sell,
                releasing_returns_the_seats_and_a_second_release_changes_nothing,
                a_buyers_release_frees_only_their_own_held_hold,
                loading_a_lost_event_keeps_one_loaded_meanwhile,
                moves_out_of_order_are_refused,
                retried_moves_answer_with_the_hold_as_it_is,
                a_hold_keeps_the_key_it_was_taken_with_through_every_move,
                an_ended_hold_keeps_its_key_while_kept_and_a_retake_keeps_it,
                an_expired_hold_retaken_for_its_order_gets_its_seats_back_and_can_be_sold,
                a_retake_takes_nothing_when_any_seat_was_taken_meanwhile,
                a_retake_is_refused_for_a_live_hold_and_allowed_for_a_forgotten_one,
                a_retake_keeps_the_buyer_limit,
                a_hold_pinned_for_a_refused_order_is_pinned_for_the_ledgers_in_place,
                seats_marked_sold_leave_stock_and_count_for_their_buyer,
                a_held_seat_marked_sold_ends_the_other_buyers_hold,
                a_sale_being_recorded_is_sold_as_a_whole,
                marking_an_unknown_seat_sold_changes_nothing,
                returned_seats_come_back_to_stock_once,
                a_sold_seat_given_away_counts_against_its_new_owner,
                seats_given_away_while_both_buyers_race_for_holds_keep_each_within_the_limit,
                many_buyers_racing_for_named_seats_exactly_one_wins_each_seat,
                many_buyers_racing_for_best_available_pairs_exactly_k_win,
                many_buyers_racing_for_general_admission_exactly_k_win,
                a_release_racing_a_pin_lets_exactly_one_win_each_hold,
                rebuilds_of_a_lost_event_racing_load_it_once_and_keep_its_holds,
        );
    };
}
