//! Downstream health as this node sees it: recent hold and checkout latencies and
//! checkout outcomes, fed by the HTTP layer, read by the adaptive admission mode.

use std::collections::VecDeque;
use std::ops::DerefMut;

use boxoffice_domain::Millis;
use boxoffice_domain::admission::Health;
use parking_lot::Mutex;

use crate::dashboard::{Latency, PaymentHealth};
use crate::per_thread::PerThread;

/// Samples kept per signal (of hold times: per thread), whatever their age, so memory
/// stays bounded.
const MAX_SAMPLES: usize = 4_096;

/// One observation of the system behind the waiting room.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Signal {
    /// A hold request took this long.
    Hold { ms: f64 },
    /// A checkout took this long; `provider_failed` when the payment provider errored
    /// or did not answer (a decline is not a failure).
    Checkout { ms: f64, provider_failed: bool },
}

#[derive(Default)]
pub(crate) struct HealthWindow {
    /// Every hold adds one: in shards each thread keeps to itself (`PerThread`).
    holds: PerThread<VecDeque<(Millis, f64)>>,
    checkouts: Mutex<VecDeque<(Millis, f64, bool)>>,
}

fn push<T>(mut q: impl DerefMut<Target = VecDeque<T>>, v: T) {
    if q.len() == MAX_SAMPLES {
        q.pop_front();
    }
    q.push_back(v);
}

fn p99(v: Vec<f64>) -> Option<f64> {
    quantile(v, 0.99)
}

/// The nearest-rank quantile `q` of the samples.
fn quantile(mut v: Vec<f64>, q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64) * q).ceil() as usize;
    v.get(i.saturating_sub(1)).copied()
}

impl HealthWindow {
    /// The hold times of every thread newer than `since`.
    fn holds_since(&self, since: Millis) -> Vec<f64> {
        let mut holds = Vec::new();
        for shard in self.holds.each() {
            let newer = shard.iter().filter(|(at, _)| *at > since);
            holds.extend(newer.map(|(_, ms)| *ms));
        }
        holds
    }

    pub(crate) fn record(&self, at: Millis, s: Signal) {
        match s {
            Signal::Hold { ms } => push(self.holds.mine(), (at, ms)),
            Signal::Checkout {
                ms,
                provider_failed,
            } => push(self.checkouts.lock(), (at, ms, provider_failed)),
        }
    }

    /// The operator's view of the same window: medians beside the p99s, and the
    /// checkouts and provider failures counted.
    pub(crate) fn detail(&self, now: Millis, window_ms: u64) -> (Latency, PaymentHealth) {
        let since = now.plus_millis(-(window_ms as i64));
        let holds = self.holds_since(since);
        let checkouts: Vec<(f64, bool)> = (self.checkouts.lock().iter())
            .filter(|(at, _, _)| *at > since)
            .map(|(_, ms, failed)| (*ms, *failed))
            .collect();
        let errors = checkouts.iter().filter(|(_, f)| *f).count() as u64;
        let times: Vec<f64> = checkouts.iter().map(|(ms, _)| *ms).collect();
        let latency = Latency {
            hold_p50_ms: quantile(holds.clone(), 0.5),
            hold_p99_ms: quantile(holds, 0.99),
            checkout_p50_ms: quantile(times.clone(), 0.5),
            checkout_p99_ms: quantile(times, 0.99),
        };
        let payments = PaymentHealth {
            checkouts: checkouts.len() as u64,
            errors,
            error_rate: (!checkouts.is_empty()).then(|| errors as f64 / checkouts.len() as f64),
        };
        (latency, payments)
    }

    /// The signals over samples newer than `now - window_ms`.
    pub(crate) fn read(&self, now: Millis, window_ms: u64) -> Health {
        let since = now.plus_millis(-(window_ms as i64));
        let holds = self.holds_since(since);
        let checkouts: Vec<(f64, bool)> = self
            .checkouts
            .lock()
            .iter()
            .filter(|(at, _, _)| *at > since)
            .map(|(_, ms, failed)| (*ms, *failed))
            .collect();
        let failed = checkouts.iter().filter(|(_, f)| *f).count();
        Health {
            hold_p99_ms: p99(holds),
            checkout_p99_ms: p99(checkouts.iter().map(|(ms, _)| *ms).collect()),
            payment_error_rate: (!checkouts.is_empty())
                .then(|| failed as f64 / checkouts.len() as f64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_samples_fall_out_of_the_window() {
        let h = HealthWindow::default();
        h.record(Millis(0), Signal::Hold { ms: 900.0 });
        h.record(Millis(50_000), Signal::Hold { ms: 10.0 });
        h.record(
            Millis(50_000),
            Signal::Checkout {
                ms: 100.0,
                provider_failed: true,
            },
        );
        let read = h.read(Millis(60_000), 30_000);
        assert_eq!(read.hold_p99_ms, Some(10.0));
        assert_eq!(read.payment_error_rate, Some(1.0));
        assert_eq!(h.read(Millis(200_000), 30_000), Health::default());
    }

    #[test]
    fn hold_times_recorded_on_other_threads_are_read_with_this_ones() {
        let h = std::sync::Arc::new(HealthWindow::default());
        h.record(Millis(50_000), Signal::Hold { ms: 10.0 });
        let other = h.clone();
        std::thread::spawn(move || other.record(Millis(50_000), Signal::Hold { ms: 900.0 }))
            .join()
            .unwrap();
        assert_eq!(h.read(Millis(60_000), 30_000).hold_p99_ms, Some(900.0));
        let (latency, _) = h.detail(Millis(60_000), 30_000);
        assert_eq!(latency.hold_p50_ms, Some(10.0));
    }
}
