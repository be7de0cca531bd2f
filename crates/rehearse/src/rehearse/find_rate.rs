//! `rehearse --find-rate`: runs the rehearsal again at rising admission rates (the
//! operator's override, on a fresh event each time) and reports the highest rate at
//! which hold and checkout p99 stayed under their objectives and failures under the
//! threshold — the rate to set for the real on-sale. Rates grow by a factor until one
//! fails, then the gap is halved a few times.

use serde::Serialize;

use super::Settings;
use super::record::Step;
use super::report::Report;

#[derive(Clone, Debug, Serialize)]
pub struct Search {
    /// The first rate tried (buyers let in per second).
    pub start: u32,
    /// Each passing rate is followed by this many times it.
    pub factor: f64,
    pub max: u32,
    /// Halvings of the gap between the last pass and the first failure.
    pub refine: u32,
    /// Seconds of admissions each run aims at: its crowd is rate × this (at least
    /// `min_buyers`).
    pub seconds_per_run: f64,
    pub min_buyers: u32,
    pub hold_p99_ms: f64,
    pub checkout_p99_ms: f64,
    /// Largest share of holds and checkouts that may fail (5xx or no answer).
    pub max_failure_rate: f64,
}

impl Default for Search {
    fn default() -> Self {
        Search {
            start: 50,
            factor: 2.0,
            max: 10_000,
            refine: 2,
            seconds_per_run: 10.0,
            min_buyers: 100,
            hold_p99_ms: 500.0,
            checkout_p99_ms: 2_000.0,
            max_failure_rate: 0.01,
        }
    }
}

/// One run of the search.
#[derive(Clone, Debug, Serialize)]
pub struct Trial {
    pub rate: u32,
    pub buyers: u32,
    pub hold_p99_ms: f64,
    pub checkout_p99_ms: f64,
    pub failure_rate: f64,
    pub sold: u64,
    pub passed: bool,
    /// What failed, when something did.
    pub why: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Found {
    pub search: Search,
    pub trials: Vec<Trial>,
    /// The highest rate that passed.
    pub rate: Option<u32>,
}

/// Judges a run against the objectives.
pub fn judge(rate: u32, buyers: u32, r: &Report, s: &Search) -> Trial {
    let p99 = |step: Step| {
        r.steps
            .iter()
            .find(|x| x.step == step)
            .map_or(0.0, |x| x.p99_ms)
    };
    // What the admission rate drives: holds and checkouts.
    let crowd: Vec<_> = (r.steps.iter())
        .filter(|x| matches!(x.step, Step::Hold | Step::Checkout))
        .collect();
    let requests: u64 = crowd.iter().map(|x| x.requests).sum();
    let failures: u64 = crowd.iter().map(|x| x.failures).sum();
    let failure_rate = failures as f64 / requests.max(1) as f64;
    let (hold, checkout) = (p99(Step::Hold), p99(Step::Checkout));
    let mut why = Vec::new();
    if hold > s.hold_p99_ms {
        why.push(format!("hold p99 {hold:.0} ms > {:.0} ms", s.hold_p99_ms));
    }
    if checkout > s.checkout_p99_ms {
        why.push(format!(
            "checkout p99 {checkout:.0} ms > {:.0} ms",
            s.checkout_p99_ms
        ));
    }
    if failure_rate > s.max_failure_rate {
        why.push(format!(
            "{:.2} % of holds and checkouts failed",
            failure_rate * 100.0
        ));
    }
    if let Some(stopped) = &r.stopped {
        why.push(format!("stopped early: {stopped}"));
    }
    Trial {
        rate,
        buyers,
        hold_p99_ms: hold,
        checkout_p99_ms: checkout,
        failure_rate,
        sold: r.sold.hot_store,
        passed: why.is_empty(),
        why,
    }
}

/// The rates to try after `trials`: up by the factor while passing, then halving the
/// gap; `None` when the search is done.
pub fn next_rate(trials: &[Trial], s: &Search) -> Option<u32> {
    let Some(last) = trials.last() else {
        return Some(s.start);
    };
    let best = trials.iter().filter(|t| t.passed).map(|t| t.rate).max();
    let worst = trials.iter().filter(|t| !t.passed).map(|t| t.rate).min();
    let halvings = trials.iter().skip_while(|t| t.passed).count() as u32;
    match (best, worst) {
        (_, None) if last.rate >= s.max => None,
        (_, None) => {
            Some(((f64::from(last.rate) * s.factor).round() as u32).clamp(last.rate + 1, s.max))
        }
        (Some(b), Some(w)) if halvings <= s.refine && w - b > 1 => Some(b + (w - b) / 2),
        _ => None,
    }
}

/// Searches; each run sells a fresh event to a crowd sized for the rate.
pub async fn search(
    base: &Settings,
    s: &Search,
    mut interrupted: impl FnMut() -> bool,
) -> anyhow::Result<Found> {
    let mut trials = Vec::new();
    while let Some(rate) = next_rate(&trials, s) {
        if interrupted() {
            break;
        }
        let buyers = ((f64::from(rate) * s.seconds_per_run) as u32).max(s.min_buyers);
        let mut settings = base.clone();
        settings.event = None;
        settings.admission_rate = Some(rate);
        settings.arrivals.buyers = buyers;
        let report = super::run(&settings, None, std::future::pending()).await?;
        trials.push(judge(rate, buyers, &report, s));
    }
    let rate = trials.iter().filter(|t| t.passed).map(|t| t.rate).max();
    Ok(Found {
        search: s.clone(),
        trials,
        rate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(rate: u32, passed: bool) -> Trial {
        Trial {
            rate,
            buyers: 0,
            hold_p99_ms: 0.0,
            checkout_p99_ms: 0.0,
            failure_rate: 0.0,
            sold: 0,
            passed,
            why: vec![],
        }
    }

    #[test]
    fn the_rate_doubles_while_passing_then_the_gap_is_halved() {
        let s = Search {
            start: 10,
            refine: 2,
            ..Search::default()
        };
        let mut t = vec![];
        assert_eq!(next_rate(&t, &s), Some(10));
        t.push(trial(10, true));
        assert_eq!(next_rate(&t, &s), Some(20));
        t.push(trial(20, true));
        t.push(trial(40, false));
        assert_eq!(next_rate(&t, &s), Some(30));
        t.push(trial(30, true));
        assert_eq!(next_rate(&t, &s), Some(35));
        t.push(trial(35, false));
        assert_eq!(
            next_rate(&t, &s),
            None,
            "two halvings after the first failure"
        );
        let mut capped = vec![trial(10, true)];
        let s = Search {
            start: 10,
            max: 15,
            ..s
        };
        assert_eq!(next_rate(&capped, &s), Some(15));
        capped.push(trial(15, true));
        assert_eq!(next_rate(&capped, &s), None);
    }
}
