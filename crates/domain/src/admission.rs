//! Admission maths (docs/ARCHITECTURE.md §3, step 2): how big the next batch is, how
//! the rate adapts to the health of what sits behind the waiting room, when the line is
//! sold out, what a buyer is told about their wait, and the per-key rate limit (GCRA).
//! Pure: every function takes `now` or the numbers it needs.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::time::Millis;

/// Why the admission rate is what it is: shown to operators on /stats and in the
/// public queue document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RateReason {
    /// The event's configured rate.
    Configured,
    /// An operator set the rate (PUT /admission).
    OperatorOverride,
    /// Hold latency crossed its threshold.
    HoldLatencyHigh,
    /// Checkout latency crossed its threshold.
    CheckoutLatencyHigh,
    /// The payment error rate crossed its threshold.
    PaymentErrorsHigh,
    /// The signals are healthy again; widening back towards the base rate.
    Recovering,
    /// Nothing is left to sell: admission stopped.
    SoldOut,
    /// The cap on active shoppers is reached: admission waits for places to free.
    ShopperCapReached,
    /// Few seats are left: a batch lets in no more buyers than the rule allows for
    /// each seat neither sold nor held.
    FewSeatsLeft,
}

/// Downstream health as measured over the last window; `None` = no data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Health {
    pub hold_p99_ms: Option<f64>,
    pub checkout_p99_ms: Option<f64>,
    pub payment_error_rate: Option<f64>,
}

/// When the adaptive mode narrows, and how fast it moves. Each field omitted keeps its
/// default.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct Thresholds {
    pub hold_p99_ms: f64,
    pub checkout_p99_ms: f64,
    pub payment_error_rate: f64,
    /// Multiplier applied per batch while a signal is over its threshold.
    pub narrow_factor: f64,
    /// Multiplier applied per batch while recovering.
    pub widen_factor: f64,
    /// The adaptive mode never goes below this many buyers per second.
    pub min_rate_per_s: u32,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            hold_p99_ms: 250.0,
            checkout_p99_ms: 5_000.0,
            payment_error_rate: 0.05,
            narrow_factor: 0.5,
            widen_factor: 1.25,
            min_rate_per_s: 1,
        }
    }
}

/// The adaptive rate for the next batch: narrow on the first unhealthy signal, widen
/// back towards `base` once all are healthy.
pub fn adapt(current: u32, base: u32, health: &Health, t: &Thresholds) -> (u32, RateReason) {
    let over = |v: Option<f64>, limit: f64| v.is_some_and(|v| v > limit);
    let unhealthy = [
        (
            over(health.hold_p99_ms, t.hold_p99_ms),
            RateReason::HoldLatencyHigh,
        ),
        (
            over(health.checkout_p99_ms, t.checkout_p99_ms),
            RateReason::CheckoutLatencyHigh,
        ),
        (
            over(health.payment_error_rate, t.payment_error_rate),
            RateReason::PaymentErrorsHigh,
        ),
    ];
    let floor = t.min_rate_per_s.max(1).min(base.max(1));
    if let Some((_, reason)) = unhealthy.iter().find(|(bad, _)| *bad) {
        let narrowed = (f64::from(current) * t.narrow_factor).floor() as u32;
        return (narrowed.clamp(floor, base.max(floor)), *reason);
    }
    if current >= base {
        return (base, RateReason::Configured);
    }
    let widened = (f64::from(current) * t.widen_factor).ceil() as u32;
    let next = widened.max(current + 1).min(base);
    let reason = if next == base {
        RateReason::Configured
    } else {
        RateReason::Recovering
    };
    (next, reason)
}

/// Buyers admitted per batch: the token bucket's refill for one interval, at least 1.
pub fn batch_size(rate_per_s: u32, interval_ms: u64) -> u64 {
    (u64::from(rate_per_s) * interval_ms).div_ceil(1000).max(1)
}

/// A paced batch: the whole buyers `rate_per_s` has earned over `window_ms`, and the
/// milliseconds of the window it has not spent yet (less than one buyer's worth), which
/// the next batch's window keeps. Rounding each batch up to a whole buyer instead let in
/// 3 where 2 were due at 1 a second over a window of 2,013 ms.
pub fn paced_batch(rate_per_s: u32, window_ms: u64) -> (u64, u64) {
    let rate = u64::from(rate_per_s.max(1));
    let batch = rate.saturating_mul(window_ms) / 1000;
    let spent = (batch.saturating_mul(1000)).div_ceil(rate).min(window_ms);
    (batch, window_ms - spent)
}

/// The longest window a paced batch may cover: two intervals (a late tick catches up
/// one, an idle line does not let a crowd in at once), and at a rate below one buyer an
/// interval, one buyer's worth and an interval more, so that no tick's time is lost
/// while a buyer's worth builds up.
pub fn longest_window_ms(rate_per_s: u32, interval_ms: u64) -> u64 {
    interval_ms
        .saturating_mul(2)
        .max(one_buyer_ms(rate_per_s).saturating_add(interval_ms))
}

/// The time `rate_per_s` takes to earn one buyer.
pub fn one_buyer_ms(rate_per_s: u32) -> u64 {
    1000u64.div_ceil(u64::from(rate_per_s.max(1)))
}

/// Seats (or standing units) neither sold nor held, less the `margin` kept back.
pub fn free_units(capacity: u64, sold: u64, held: u64, margin: u64) -> u64 {
    capacity.saturating_sub(sold.saturating_add(held).saturating_add(margin))
}

/// Whether the line is sold out: fewer than `margin` + 1 seats are neither sold nor held.
pub fn sold_out(capacity: u64, sold: u64, held: u64, margin: u64) -> bool {
    free_units(capacity, sold, held, margin) == 0
}

/// The most buyers one batch lets in when admission follows the seats left: at most
/// `per_free_unit` buyers for each unit neither sold nor held. Buyers let in beyond that
/// could only be told `sold_out` at every section they try, which is load the sale pays
/// for and no buyer gains by; they wait in line, in their order, for seats to return.
pub fn batch_for_free_units(batch: u64, free: u64, per_free_unit: u32) -> u64 {
    batch.min(free.saturating_mul(u64::from(per_free_unit)))
}

/// How many times `buyers_per_free_seat` a batch lets in once the seats it admits buyers
/// for have gone untaken for `untaken_ms`: doubled for every `grace_ms` of it, up to
/// 2^16. After a line was told "sold out", most of its front has gone away; seats that
/// come back later would otherwise walk through those left places a few a tick while
/// the buyers still there wait far behind them.
pub fn no_show_factor(untaken_ms: i64, grace_ms: i64) -> u32 {
    if grace_ms <= 0 || untaken_ms < grace_ms {
        return 1;
    }
    1 << (untaken_ms / grace_ms).min(16)
}

/// Seconds until `ahead` more buyers are admitted at `rate_per_s`.
pub fn eta_s(ahead: u64, rate_per_s: u32) -> u64 {
    ahead.div_ceil(u64::from(rate_per_s.max(1)))
}

/// The pause to suggest before a waiting buyer asks again, from the earliest moment
/// their answer can change (`next_change_ms`; `None` when nobody can tell): two thirds
/// of it, so that the hint's ±20 % jitter and a client's own still ask before that
/// moment, never less than `base_ms` nor more than `max_ms`. A buyer a minute from the
/// front who asks every few seconds only hears "waiting" again; the public stream tells
/// them sooner when the line reaches them.
pub fn poll_after_ms(base_ms: u64, max_ms: u64, next_change_ms: Option<u64>) -> u64 {
    let hint = next_change_ms.map_or(0, |ms| ms / 3 * 2);
    hint.clamp(base_ms, max_ms.max(base_ms))
}

/// The earliest a buyer with `ahead` positions before theirs can be admitted, in ms: at
/// `ceiling_per_s`, the fastest the gate may open (the adaptive mode only narrows it),
/// less `slack_ms` (a batch about to be let in, a view of the line that old).
pub fn earliest_admission_ms(ahead: u64, ceiling_per_s: u32, slack_ms: u64) -> u64 {
    (ahead.saturating_mul(1000) / u64::from(ceiling_per_s.max(1))).saturating_sub(slack_ms)
}

/// `base_ms` spread by ±20 % using `random`, so a million clients polling with the same
/// hint do not arrive in the same second.
pub fn jittered_poll_ms(base_ms: u64, random: u64) -> u64 {
    let spread = base_ms / 5;
    if spread == 0 {
        return base_ms;
    }
    base_ms - spread + random % (2 * spread + 1)
}

/// A generic cell rate limit: `per_s` requests a second with bursts of `burst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limit {
    pub per_s: u32,
    pub burst: u32,
}

/// GCRA: given the key's theoretical arrival time `tat`, admits a request at `now`
/// (returning the new `tat`) or refuses it (returning how long to wait, in ms).
pub fn gcra(tat: Millis, now: Millis, limit: Limit) -> Result<Millis, u64> {
    let emission = 1_000.0 / f64::from(limit.per_s.max(1));
    let tolerance = emission * f64::from(limit.burst.max(1).saturating_sub(1));
    let tat = tat.max(now);
    let allow_at = tat.0 as f64 - tolerance;
    if (now.0 as f64) < allow_at {
        return Err((allow_at - now.0 as f64).ceil() as u64);
    }
    Ok(Millis(tat.0 + emission.ceil() as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow_holds() -> Health {
        Health {
            hold_p99_ms: Some(900.0),
            ..Health::default()
        }
    }

    #[test]
    fn a_buyer_far_back_in_line_is_asked_to_poll_less_often() {
        assert_eq!(poll_after_ms(3_000, 30_000, None), 3_000);
        assert_eq!(poll_after_ms(3_000, 30_000, Some(0)), 3_000);
        assert_eq!(poll_after_ms(3_000, 30_000, Some(15_000)), 10_000);
        assert_eq!(poll_after_ms(3_000, 30_000, Some(400_000)), 30_000);
        assert_eq!(
            poll_after_ms(3_000, 1_000, Some(400_000)),
            3_000,
            "a max below the base"
        );
        assert_eq!(poll_after_ms(3_000, 30_000, Some(u64::MAX)), 30_000);
    }

    #[test]
    fn the_earliest_admission_is_at_the_gates_ceiling_less_the_slack() {
        // 10,000 ahead at 2,000 a second: 5 s, less a 2.5 s batch and view.
        assert_eq!(earliest_admission_ms(10_000, 2_000, 2_500), 2_500);
        assert_eq!(earliest_admission_ms(1_000, 2_000, 2_500), 0);
        assert_eq!(
            earliest_admission_ms(10, 0, 0),
            10_000,
            "no rate reads as 1/s"
        );
        assert_eq!(earliest_admission_ms(u64::MAX, 1, 0), u64::MAX);
        // Asked at the hint's latest (+20 %, then a client's +25 %), a buyer still asks
        // no later than the earliest moment they could be let in.
        for ahead in [8_000u64, 20_000, 60_000] {
            let earliest = earliest_admission_ms(ahead, 2_000, 2_500);
            let hint = poll_after_ms(0, u64::MAX, Some(earliest));
            assert!(
                hint * 6 / 5 * 5 / 4 <= earliest,
                "{ahead}: {hint} {earliest}"
            );
        }
    }

    #[test]
    fn seats_left_untaken_let_in_twice_as_many_buyers_for_every_grace_period() {
        assert_eq!(no_show_factor(0, 8_000), 1);
        assert_eq!(no_show_factor(7_999, 8_000), 1);
        assert_eq!(no_show_factor(8_000, 8_000), 2);
        assert_eq!(no_show_factor(17_000, 8_000), 4);
        assert_eq!(no_show_factor(i64::MAX, 8_000), 1 << 16);
        assert_eq!(no_show_factor(-5, 8_000), 1, "a clock that went back");
        assert_eq!(no_show_factor(60_000, 0), 1, "no grace, no factor");
    }

    #[test]
    fn a_batch_lets_in_no_more_buyers_than_the_seats_left_allow() {
        // 100 seats, 60 sold, 30 held, 2 kept back: 8 free.
        let free = free_units(100, 60, 30, 2);
        assert_eq!(free, 8);
        assert_eq!(batch_for_free_units(4_000, free, 2), 16);
        assert_eq!(
            batch_for_free_units(10, free, 2),
            10,
            "the rate's batch when smaller"
        );
        assert_eq!(
            free_units(100, 60, 45, 0),
            0,
            "more held than free never wraps"
        );
        assert!(sold_out(100, 60, 38, 2));
        assert!(!sold_out(100, 60, 37, 2));
        assert_eq!(batch_for_free_units(u64::MAX, u64::MAX, u32::MAX), u64::MAX);
    }

    #[test]
    fn the_rate_narrows_while_a_signal_is_bad_and_widens_back_when_it_recovers() {
        let t = Thresholds::default();
        assert_eq!(
            adapt(1000, 1000, &slow_holds(), &t),
            (500, RateReason::HoldLatencyHigh)
        );
        let errors = Health {
            payment_error_rate: Some(0.2),
            ..Health::default()
        };
        assert_eq!(
            adapt(500, 1000, &errors, &t),
            (250, RateReason::PaymentErrorsHigh)
        );
        assert_eq!(
            adapt(2, 1000, &slow_holds(), &t).0,
            1,
            "never below the floor"
        );
        assert_eq!(
            adapt(500, 1000, &Health::default(), &t),
            (625, RateReason::Recovering)
        );
        assert_eq!(
            adapt(900, 1000, &Health::default(), &t),
            (1000, RateReason::Configured)
        );
        assert_eq!(
            adapt(1, 1000, &Health::default(), &t).0,
            2,
            "a rate of 1 still grows"
        );
    }

    #[test]
    fn batches_sold_out_and_waits_follow_the_numbers() {
        assert_eq!(batch_size(2000, 3000), 6000);
        assert_eq!(batch_size(1, 100), 1);
        assert_eq!(paced_batch(1, 2_013), (2, 13), "2 due, 13 ms kept");
        assert_eq!(paced_batch(8, 50), (0, 50), "not a whole buyer yet");
        assert_eq!(paced_batch(8, 130), (1, 5));
        assert_eq!(paced_batch(3, 1_000), (3, 0));
        assert_eq!(paced_batch(7, 1_000), (7, 0));
        assert_eq!(paced_batch(7, 999), (6, 141));
        assert_eq!(longest_window_ms(1, 50), 1_050);
        assert_eq!(longest_window_ms(100, 2_000), 4_000);
        assert!(sold_out(100, 60, 40, 0));
        assert!(!sold_out(100, 60, 39, 0));
        assert!(sold_out(100, 60, 35, 5), "the margin tells the line early");
        assert_eq!(eta_s(1001, 500), 3);
    }

    #[test]
    fn poll_hints_spread_within_twenty_percent() {
        let hints: Vec<u64> = (0..1000)
            .map(|r| jittered_poll_ms(3000, r * 7919))
            .collect();
        assert!(hints.iter().all(|&h| (2400..=3600).contains(&h)));
        assert!(hints.iter().collect::<std::collections::HashSet<_>>().len() > 100);
    }

    #[test]
    fn gcra_allows_the_burst_then_spaces_requests_by_the_rate() {
        let limit = Limit {
            per_s: 10,
            burst: 3,
        };
        let mut tat = Millis(0);
        for _ in 0..3 {
            tat = gcra(tat, Millis(1000), limit).expect("within the burst");
        }
        let wait = gcra(tat, Millis(1000), limit).expect_err("burst spent");
        assert_eq!(wait, 100);
        assert!(gcra(tat, Millis(1000 + wait as i64), limit).is_ok());
    }
}
