//! When a buyer may return an order on their own: an event's refund window. An event
//! is not refundable by its buyers unless its sale settings say so; the operator can
//! cancel any sale at any time.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::time::Millis;

/// Buyers may return their own orders (`POST /v1/orders/{id}/refund`) until
/// `closes_before_doors_s` before `doors_at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefundWindow {
    /// When the doors open (milliseconds since the epoch).
    pub doors_at: Millis,
    /// Buyer refunds stop this long (seconds) before the doors open.
    #[serde(default)]
    pub closes_before_doors_s: u64,
}

impl RefundWindow {
    /// The last instant a buyer may ask (exclusive).
    pub fn closes_at(&self) -> Millis {
        let before =
            i64::try_from(self.closes_before_doors_s.saturating_mul(1000)).unwrap_or(i64::MAX);
        Millis(self.doors_at.0.saturating_sub(before))
    }

    pub fn is_open_at(&self, now: Millis) -> bool {
        now < self.closes_at()
    }
}

/// Whether a buyer may return an order of an event with this window (none: never).
pub fn buyer_may_refund(window: Option<&RefundWindow>, now: Millis) -> bool {
    window.is_some_and(|w| w.is_open_at(now))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_closes_the_given_time_before_the_doors() {
        let w = RefundWindow {
            doors_at: Millis(100_000),
            closes_before_doors_s: 30,
        };
        assert_eq!(w.closes_at(), Millis(70_000));
        assert!(buyer_may_refund(Some(&w), Millis(69_999)));
        assert!(!buyer_may_refund(Some(&w), Millis(70_000)));
        assert!(
            !buyer_may_refund(None, Millis(0)),
            "no window: not refundable"
        );
    }

    #[test]
    fn a_huge_margin_closes_the_window_rather_than_overflowing() {
        let w = RefundWindow {
            doors_at: Millis(1),
            closes_before_doors_s: u64::MAX,
        };
        assert_eq!(w.closes_at(), Millis(1 - i64::MAX));
        assert!(!w.is_open_at(Millis(0)));
    }
}
