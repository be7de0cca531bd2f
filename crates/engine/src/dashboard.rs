//! The operator's live view of one event: the waiting room's figures, holds won and
//! lost per second, this node's hold and checkout latencies and payment errors, and
//! the event's orders by state from the ledger. Computed at most once per
//! `FRESH_MS` per event however many consoles watch, so a console polling every second
//! costs one ledger count query per event per interval, not one per viewer.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use boxoffice_domain::{EventId, Millis, SaleStatus};
use parking_lot::Mutex;
use serde::Serialize;

use crate::per_thread::PerThread;
use crate::ports::{QueueState, SeatCounts};
use crate::tail_hash::TailMap;
use crate::waiting::{AdmissionControl, CurrentRate, WaitingRules};
use crate::{Engine, EngineError};

/// How long a computed dashboard is served as is.
const FRESH_MS: i64 = 500;
/// Seconds of hold outcomes kept per event; the rate is read over the last full ones.
const SECONDS_KEPT: usize = 8;
/// Full seconds the hold rates average over.
const RATE_SECONDS: i64 = 3;
/// Events whose hold outcomes a thread's shard tallies at once; the shard drops its
/// least recently active beyond this, so memory stays bounded.
const MAX_TALLIED_EVENTS: usize = 1_024;

/// One event's sale as the operator's console shows it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Dashboard {
    pub event_id: EventId,
    /// When these figures were read.
    pub at: Millis,
    pub status: SaleStatus,
    pub capacity: u32,
    pub seats: Option<SeatCounts>,
    pub queue: QueueState,
    /// Buyers let in so far (queue positions served).
    pub admitted: u64,
    pub active_shoppers: u64,
    /// The admission rate now in force, and why.
    pub rate: CurrentRate,
    pub control: AdmissionControl,
    pub rules: WaitingRules,
    pub holds: HoldRates,
    pub latency: Latency,
    pub payments: PaymentHealth,
    /// The event's orders by state (states with none left out).
    pub orders: BTreeMap<&'static str, u64>,
}

/// Holds won and lost on this node: per second over the last full seconds, and since
/// the node started.
#[derive(Clone, Copy, Debug, Default, Serialize, utoipa::ToSchema)]
pub struct HoldRates {
    pub won_per_s: f64,
    pub lost_per_s: f64,
    pub won_total: u64,
    pub lost_total: u64,
}

/// This node's hold and checkout times over the health window, in milliseconds (None
/// without samples). Node-wide: the engine times requests, not events.
#[derive(Clone, Copy, Debug, Default, Serialize, utoipa::ToSchema)]
pub struct Latency {
    pub hold_p50_ms: Option<f64>,
    pub hold_p99_ms: Option<f64>,
    pub checkout_p50_ms: Option<f64>,
    pub checkout_p99_ms: Option<f64>,
}

/// Checkouts over the health window on this node, and how many the provider failed
/// (an error or no answer; a decline is the provider working).
#[derive(Clone, Copy, Debug, Default, Serialize, utoipa::ToSchema)]
pub struct PaymentHealth {
    pub checkouts: u64,
    pub errors: u64,
    pub error_rate: Option<f64>,
}

#[derive(Default)]
struct Tally {
    /// (second, won, lost), oldest first.
    seconds: VecDeque<(i64, u32, u32)>,
    won_total: u64,
    lost_total: u64,
    last_s: i64,
}

impl Tally {
    fn add(&mut self, second: i64, won: bool) {
        match self.seconds.back_mut() {
            Some(last) if last.0 == second => {}
            _ => {
                if self.seconds.len() == SECONDS_KEPT {
                    self.seconds.pop_front();
                }
                self.seconds.push_back((second, 0, 0));
            }
        }
        if let Some(last) = self.seconds.back_mut() {
            if won {
                last.1 += 1;
            } else {
                last.2 += 1;
            }
        }
        if won {
            self.won_total += 1;
        } else {
            self.lost_total += 1;
        }
        self.last_s = second;
    }

    fn rates(&self, now_s: i64) -> HoldRates {
        let window = (now_s - RATE_SECONDS)..now_s;
        let (won, lost) = (self.seconds.iter())
            .filter(|(s, _, _)| window.contains(s))
            .fold((0u64, 0u64), |(w, l), (_, a, b)| {
                (w + u64::from(*a), l + u64::from(*b))
            });
        HoldRates {
            won_per_s: won as f64 / RATE_SECONDS as f64,
            lost_per_s: lost as f64 / RATE_SECONDS as f64,
            won_total: self.won_total,
            lost_total: self.lost_total,
        }
    }
}

/// Hold outcomes per event and the dashboards last computed.
#[derive(Default)]
pub(crate) struct Dashboards {
    /// Every hold counts in one: in shards each thread keeps to itself (`PerThread`),
    /// summed when read.
    tallies: PerThread<TailMap<EventId, Tally>>,
    computed: Mutex<HashMap<EventId, Arc<Dashboard>>>,
}

impl Dashboards {
    /// Counts one hold request that reached the hot store.
    pub(crate) fn hold(&self, event: EventId, now: Millis, won: bool) {
        let mut tallies = self.tallies.mine();
        if tallies.len() >= MAX_TALLIED_EVENTS && !tallies.contains_key(&event) {
            let stalest = tallies
                .iter()
                .min_by_key(|(_, t)| t.last_s)
                .map(|(e, _)| *e);
            if let Some(e) = stalest {
                tallies.remove(&e);
            }
        }
        tallies
            .entry(event)
            .or_default()
            .add(now.0.div_euclid(1000), won);
    }

    fn rates(&self, event: EventId, now: Millis) -> HoldRates {
        let now_s = now.0.div_euclid(1000);
        let mut sum = HoldRates::default();
        for tallies in self.tallies.each() {
            if let Some(r) = tallies.get(&event).map(|t| t.rates(now_s)) {
                sum.won_per_s += r.won_per_s;
                sum.lost_per_s += r.lost_per_s;
                sum.won_total += r.won_total;
                sum.lost_total += r.lost_total;
            }
        }
        sum
    }

    fn fresh(&self, event: EventId, now: Millis) -> Option<Arc<Dashboard>> {
        (self.computed.lock().get(&event))
            .filter(|d| now.0 - d.at.0 < FRESH_MS && d.at.0 <= now.0)
            .cloned()
    }

    fn keep(&self, d: Arc<Dashboard>) {
        let mut computed = self.computed.lock();
        if computed.len() >= MAX_TALLIED_EVENTS {
            computed.clear();
        }
        computed.insert(d.event_id, d);
    }
}

impl Engine {
    /// GET /v1/events/{id}/dashboard: the event's live figures (see the module).
    pub async fn dashboard(&self, event: EventId) -> Result<Arc<Dashboard>, EngineError> {
        let now = self.now();
        if let Some(d) = self.dashboards.fresh(event, now) {
            return Ok(d);
        }
        let entry = self.event(event).await?;
        let stats = self.waiting_stats(event).await?;
        let orders = self.ports.ledger.order_states(event).await?;
        let window = self.config.waiting.health_window_ms;
        let (latency, payments) = self.waiting.health.detail(now, window);
        let d = Arc::new(Dashboard {
            event_id: event,
            at: now,
            status: entry.event.status,
            capacity: entry.event.capacity(),
            seats: stats.seats,
            queue: stats.queue,
            admitted: stats.admitted,
            active_shoppers: stats.active_shoppers,
            rate: stats.rate,
            control: stats.control,
            rules: stats.rules,
            holds: self.dashboards.rates(event, now),
            latency,
            payments,
            orders: orders.into_iter().map(|(s, n)| (s.as_str(), n)).collect(),
        });
        self.dashboards.keep(d.clone());
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hold_rates_count_the_last_full_seconds_only() {
        let mut t = Tally::default();
        for s in 10..=14 {
            for _ in 0..6 {
                t.add(s, true);
            }
            t.add(s, false);
        }
        // At second 15 the full seconds 12, 13, 14 count: 18 won and 3 lost over 3 s.
        let r = t.rates(15);
        assert_eq!((r.won_per_s, r.lost_per_s), (6.0, 1.0));
        assert_eq!((r.won_total, r.lost_total), (30, 5));
        // Long after, nothing is recent but the totals remain.
        let r = t.rates(100);
        assert_eq!((r.won_per_s, r.won_total), (0.0, 30));
    }

    #[test]
    fn tallies_stay_bounded_by_event() {
        let d = Dashboards::default();
        for e in 0..(MAX_TALLIED_EVENTS as i64 + 10) {
            d.hold(EventId(e), Millis(e * 1000), true);
        }
        assert_eq!(d.tallies.mine().len(), MAX_TALLIED_EVENTS);
        assert!(
            d.tallies
                .mine()
                .contains_key(&EventId(MAX_TALLIED_EVENTS as i64 + 9))
        );
    }

    #[test]
    fn holds_counted_on_other_threads_are_summed_with_this_ones() {
        let d = std::sync::Arc::new(Dashboards::default());
        let (event, at) = (EventId(7), Millis(10_500));
        d.hold(event, at, true);
        let other = d.clone();
        std::thread::spawn(move || {
            other.hold(event, at, true);
            other.hold(event, at, false);
        })
        .join()
        .unwrap();
        let r = d.rates(event, Millis(11_000));
        assert_eq!((r.won_total, r.lost_total), (2, 1));
        assert_eq!((r.won_per_s, r.lost_per_s), (2.0 / 3.0, 1.0 / 3.0));
        assert_eq!(d.rates(EventId(8), Millis(11_000)).won_total, 0);
    }
}
