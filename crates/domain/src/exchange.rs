//! The face-value exchange: a holder lists a ticket at no more than what was paid for
//! it, another buyer takes it, and the swap moves money and ticket in steps that a
//! crash can interrupt at any point. An event has no exchange unless its sale settings
//! say so; listings and purchases close a set time before the doors.
//!
//! A swap is a state machine claimed in the ledger before any money moves:
//!
//! ```text
//! reserved ──charge captured──► charged ──ticket moved──► moved ──seller refunded──► done
//!    │                             │
//!    └─ no charge (declined, none) └─ ticket cannot move ──► refunding ──buyer refunded──► undone
//!       ─────────────────────────────────────────────────────────────────────────────────► undone
//! ```
//!
//! Every provider call of a swap is keyed by the swap (its charge id, or the swap id
//! and the step), so a step repeated after a crash never moves money twice.

use serde::{Deserialize, Serialize};

use crate::money::Money;
use crate::time::Millis;

/// Basis points in a whole.
pub const BASIS_POINTS: u32 = 10_000;

/// An event's exchange: open until `closes_before_doors_s` before `doors_at`; the
/// seller gets the face value back less the fee (`fee_bps` of it plus `fee_fixed`,
/// never more than the face value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExchangeRules {
    /// When the doors open (milliseconds since the epoch).
    pub doors_at: Millis,
    /// How long before the doors the exchange closes (listings and purchases alike).
    #[serde(default)]
    pub closes_before_doors_s: u64,
    /// The fee kept from the seller's refund, in basis points of the face value.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 10000)]
    pub fee_bps: u32,
    /// A fixed fee kept from the seller's refund, in minor units.
    #[serde(default)]
    #[schema(minimum = 0)]
    pub fee_fixed: Money,
}

impl ExchangeRules {
    /// The last instant a ticket may be listed or bought (exclusive).
    pub fn closes_at(&self) -> Millis {
        let before =
            i64::try_from(self.closes_before_doors_s.saturating_mul(1000)).unwrap_or(i64::MAX);
        Millis(self.doors_at.0.saturating_sub(before))
    }

    pub fn is_open_at(&self, now: Millis) -> bool {
        now < self.closes_at()
    }

    /// The fee on a ticket of this face value: never negative, never above it.
    pub fn fee(&self, face: Money) -> Money {
        let face = face.0.max(0);
        let share = i128::from(face) * i128::from(self.fee_bps.min(BASIS_POINTS))
            / i128::from(BASIS_POINTS);
        let fee = i64::try_from(share)
            .unwrap_or(i64::MAX)
            .saturating_add(self.fee_fixed.0.max(0));
        Money(fee.min(face))
    }

    /// What the seller gets back for a ticket sold at `face`.
    pub fn payout(&self, face: Money) -> Money {
        Money(face.0.max(0) - self.fee(face).0)
    }

    /// Whether the rules make sense: a fee of at most the whole.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.fee_bps > BASIS_POINTS {
            return Err("exchange fee_bps must be 0-10000");
        }
        if self.fee_fixed.0 < 0 {
            return Err("exchange fee_fixed must not be negative");
        }
        Ok(())
    }
}

/// Why an event's rules refuse the exchange at `now` (none: allowed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExchangeClosed {
    /// The event has no exchange.
    NoExchange,
    /// The cutoff before the doors has passed.
    WindowClosed,
}

/// Whether tickets of an event with these rules may be listed or bought at `now`.
pub fn exchange_open(rules: Option<&ExchangeRules>, now: Millis) -> Result<(), ExchangeClosed> {
    match rules {
        None => Err(ExchangeClosed::NoExchange),
        Some(r) if !r.is_open_at(now) => Err(ExchangeClosed::WindowClosed),
        Some(_) => Ok(()),
    }
}

/// Where a listing stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ListingState {
    /// On offer to any buyer.
    Open,
    /// A buyer took it; the swap is in flight.
    Reserved,
    /// The swap finished: the ticket is the buyer's.
    Sold,
    /// Withdrawn by its seller.
    Withdrawn,
}

impl ListingState {
    pub const ALL: [ListingState; 4] = [
        ListingState::Open,
        ListingState::Reserved,
        ListingState::Sold,
        ListingState::Withdrawn,
    ];

    /// The name in the ledgers' `listings.state` column and in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            ListingState::Open => "open",
            ListingState::Reserved => "reserved",
            ListingState::Sold => "sold",
            ListingState::Withdrawn => "withdrawn",
        }
    }

    pub fn parse(s: &str) -> Option<ListingState> {
        ListingState::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// Where a swap stands (see the module's diagram).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SwapState {
    /// The listing is the buyer's; no money is known to have moved.
    Reserved,
    /// The buyer's payment is captured.
    Charged,
    /// The ticket is the buyer's, at a new version; the seller is owed a refund.
    Moved,
    /// The seller was refunded: finished.
    Done,
    /// The ticket could not move after the buyer paid; the buyer is owed a refund.
    Refunding,
    /// Finished without a sale: nothing charged, or the buyer refunded. Final, but for
    /// one move: a charge captured after another driver undid the swap sends it back to
    /// `refunding`, so the buyer's refund is retried until it is made.
    Undone,
}

impl SwapState {
    pub const ALL: [SwapState; 6] = [
        SwapState::Reserved,
        SwapState::Charged,
        SwapState::Moved,
        SwapState::Done,
        SwapState::Refunding,
        SwapState::Undone,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SwapState::Reserved => "reserved",
            SwapState::Charged => "charged",
            SwapState::Moved => "moved",
            SwapState::Done => "done",
            SwapState::Refunding => "refunding",
            SwapState::Undone => "undone",
        }
    }

    pub fn parse(s: &str) -> Option<SwapState> {
        SwapState::ALL.into_iter().find(|t| t.as_str() == s)
    }

    pub fn is_final(self) -> bool {
        matches!(self, SwapState::Done | SwapState::Undone)
    }

    /// Whether a swap may move from `self` to `to`: the ledger's every move is
    /// conditional on the state it leaves, and only these are asked of it.
    pub fn can_move_to(self, to: SwapState) -> bool {
        use SwapState as S;
        matches!(
            (self, to),
            (S::Reserved, S::Charged)
                | (S::Reserved, S::Undone)
                // A payment waiting for the buyer (3-D Secure): its reference recorded.
                | (S::Reserved, S::Reserved)
                | (S::Charged, S::Moved)
                | (S::Charged, S::Refunding)
                | (S::Moved, S::Done)
                | (S::Refunding, S::Undone)
                // A charge captured after another driver had undone the swap (it took
                // the provider's silence for "never charged"): the buyer is owed it back.
                | (S::Undone, S::Refunding)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(bps: u32, fixed: i64) -> ExchangeRules {
        ExchangeRules {
            doors_at: Millis(100_000),
            closes_before_doors_s: 30,
            fee_bps: bps,
            fee_fixed: Money(fixed),
        }
    }

    #[test]
    fn the_exchange_closes_the_given_time_before_the_doors() {
        let r = rules(0, 0);
        assert_eq!(exchange_open(Some(&r), Millis(69_999)), Ok(()));
        assert_eq!(
            exchange_open(Some(&r), Millis(70_000)),
            Err(ExchangeClosed::WindowClosed)
        );
        assert_eq!(
            exchange_open(None, Millis(0)),
            Err(ExchangeClosed::NoExchange)
        );
    }

    #[test]
    fn the_fee_is_a_share_plus_a_fixed_part_and_never_above_the_face_value() {
        assert_eq!(rules(1_000, 0).fee(Money(5_000)), Money(500));
        assert_eq!(rules(1_000, 150).payout(Money(5_000)), Money(4_350));
        assert_eq!(rules(0, 9_000).fee(Money(5_000)), Money(5_000));
        assert_eq!(rules(0, 9_000).payout(Money(5_000)), Money(0));
        assert_eq!(rules(333, 0).fee(Money(1)), Money(0));
    }

    #[test]
    fn a_fee_over_the_whole_is_refused() {
        assert!(rules(10_001, 0).check().is_err());
        assert!(rules(0, -1).check().is_err());
        assert!(rules(10_000, 0).check().is_ok());
    }

    #[test]
    fn only_the_swaps_drawn_moves_are_allowed() {
        use SwapState as S;
        assert!(S::Reserved.can_move_to(S::Charged));
        assert!(S::Charged.can_move_to(S::Refunding));
        assert!(!S::Reserved.can_move_to(S::Moved));
        assert!(!S::Done.can_move_to(S::Undone));
        assert!(!S::Moved.can_move_to(S::Refunding));
        assert!(S::Undone.can_move_to(S::Refunding));
        assert!(!S::Undone.can_move_to(S::Charged));
        assert!(!S::Undone.can_move_to(S::Reserved));
        for s in S::ALL {
            assert_eq!(SwapState::parse(s.as_str()), Some(s));
        }
    }
}
