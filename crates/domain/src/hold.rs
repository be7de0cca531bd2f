//! The hold lifecycle (docs/ARCHITECTURE.md §3). A hold lives only in the hot store;
//! this is the one place that says which moves are legal.
//!
//! ```text
//! held ──checkout──► checking_out ──commit──► sold
//!   │                     │ provider unsure ──► payment_pending ─inquiry─► sold | released
//!   └─ttl─► expired       └─ declined / lost race ──► released
//! released | expired ──retake (a late payment the event honours)──► checking_out
//! checking_out | payment_pending ──repin (to the order the ledger has)──► checking_out
//! ```
//!
//! The table keeps a sold seat sold (P1) and ends every hold once (P3). Both hot stores
//! follow it: the in-process arbiter calls `apply`, and the Redis scripts read a table
//! generated from it (store-redis `hold_states.rs`). The arbiter conformance cases
//! `moves_out_of_order_are_refused` and `retried_moves_answer_with_the_hold_as_it_is`
//! pin the two together.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// held → checking_out → sold; checking_out → payment_pending (provider did not answer)
/// → sold | released; held → expired (TTL) or released (DELETE, decline, lost race).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HoldState {
    Held,
    CheckingOut,
    PaymentPending,
    Sold,
    Released,
    Expired,
}

impl HoldState {
    pub const ALL: [HoldState; 6] = [
        HoldState::Held,
        HoldState::CheckingOut,
        HoldState::PaymentPending,
        HoldState::Sold,
        HoldState::Released,
        HoldState::Expired,
    ];
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldMove {
    /// The buyer starts paying: the hold is pinned past its TTL for the payment grace.
    Checkout,
    /// The provider did not answer in time; the pin stays while recovery asks.
    PaymentUncertain,
    /// The ledger committed the sale.
    Commit,
    /// Released by the buyer, by a decline or by a lost race.
    Release,
    /// The TTL (or the payment grace) ran out.
    Expire,
    /// A payment that arrived after the hold ended takes the same seats again, when the
    /// event honours late payments and the seats are still free.
    Retake,
    /// A live hold pinned for an order the ledger refused (a checkout retried after the
    /// hot store lost its pin, whose ledger already had an order for the hold) is pinned
    /// for the ledger's order instead, its seats never let go in between.
    Repin,
}

impl HoldMove {
    pub const ALL: [HoldMove; 7] = [
        HoldMove::Checkout,
        HoldMove::PaymentUncertain,
        HoldMove::Commit,
        HoldMove::Release,
        HoldMove::Expire,
        HoldMove::Retake,
        HoldMove::Repin,
    ];
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("a hold that is {from:?} cannot {by:?}")]
pub struct IllegalHoldMove {
    pub from: HoldState,
    pub by: HoldMove,
}

impl HoldState {
    pub fn apply(self, by: HoldMove) -> Result<HoldState, IllegalHoldMove> {
        use HoldMove as M;
        use HoldState as S;
        let to = match (self, by) {
            (S::Held, M::Checkout) => S::CheckingOut,
            (S::CheckingOut, M::PaymentUncertain) => S::PaymentPending,
            (S::CheckingOut | S::PaymentPending, M::Commit) => S::Sold,
            (S::Held | S::CheckingOut | S::PaymentPending, M::Release) => S::Released,
            (S::Held | S::CheckingOut | S::PaymentPending, M::Expire) => S::Expired,
            (S::Released | S::Expired, M::Retake) => S::CheckingOut,
            (S::CheckingOut | S::PaymentPending, M::Repin) => S::CheckingOut,
            (from, by) => return Err(IllegalHoldMove { from, by }),
        };
        Ok(to)
    }

    /// Whether the hold still keeps its seats away from other buyers.
    pub fn is_live(self) -> bool {
        matches!(
            self,
            HoldState::Held | HoldState::CheckingOut | HoldState::PaymentPending
        )
    }

    pub fn is_final(self) -> bool {
        !self.is_live()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_move() -> impl Strategy<Value = HoldMove> {
        proptest::sample::select(HoldMove::ALL.to_vec())
    }

    proptest! {
        /// Whatever happens, a hold leaves a final state only by a retake, never sells
        /// without passing through checkout, and a sold hold is never expired, released
        /// or retaken.
        #[test]
        fn no_sequence_of_moves_breaks_the_lifecycle(moves in proptest::collection::vec(any_move(), 0..20)) {
            let mut state = HoldState::Held;
            let mut checked_out = false;
            for m in moves {
                match state.apply(m) {
                    Ok(next) => {
                        prop_assert!(state.is_live() || m == HoldMove::Retake, "left final state {state:?}");
                        prop_assert!(state != HoldState::Sold, "left sold by {m:?}");
                        checked_out |= next == HoldState::CheckingOut;
                        if next == HoldState::Sold { prop_assert!(checked_out); }
                        state = next;
                    }
                    Err(e) => prop_assert_eq!(e.from, state),
                }
            }
        }
    }

    #[test]
    fn a_sold_hold_cannot_expire() {
        assert!(HoldState::Sold.apply(HoldMove::Expire).is_err());
        assert!(HoldState::Held.apply(HoldMove::Commit).is_err());
        assert!(HoldState::Sold.apply(HoldMove::Retake).is_err());
        assert_eq!(
            HoldState::Expired.apply(HoldMove::Retake),
            Ok(HoldState::CheckingOut)
        );
    }
}
