//! The rehearsal's report as data (the JSON file, and what the HTML page draws): per
//! step requests per second and latency percentiles over time, the line and the sales
//! over time, errors by code, fairness, the audit, and the per-node figures
//! `boxoffice plan --figures` reads.

use std::collections::BTreeMap;

use serde::Serialize;

use super::buyer::{BuyerResult, Outcome};
use super::crowd::Profile;
use super::observe::Point;
use super::record::{Sample, Step};
use super::resell::Resale;
use crate::fairness::{self, BotAdvantage};
use crate::plan::NodeFigures;

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub event: i64,
    pub targets: Vec<String>,
    pub settings: serde_json::Value,
    pub duration_s: f64,
    /// Why the run ended before every buyer was done (`interrupted`, `time limit`,
    /// `request limit`), if it did.
    pub stopped: Option<String>,
    pub requests: u64,
    /// Requests the generator sent per second over the run.
    pub generator_requests_per_s: f64,
    /// CPU the generator's process used (user and system).
    pub generator_cpu_s: f64,
    /// Requests per CPU-second of the generator: what one core of it can drive.
    pub generator_requests_per_cpu_s: Option<f64>,
    /// The generator's own bound on sockets and how long requests waited for it: waits
    /// that grow mean the generator, not the server, set the pace.
    pub generator_slots: Slots,
    pub buyers: Buyers,
    pub sold: Sold,
    pub steps: Vec<StepStats>,
    pub timeline: Vec<Point>,
    /// Buyers let in per second, from "serving up to" between readings.
    pub admitted_per_s: Vec<(f64, f64)>,
    pub errors: BTreeMap<String, u64>,
    pub fairness: Fairness,
    pub audit: Option<Audit>,
    /// The highest rates each node served in this run (a floor on what it can take;
    /// a rehearsal that saturates the nodes measures their capacity).
    pub node_figures: NodeFigures,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Slots {
    /// Connections (and requests in flight) the generator kept to at once.
    pub max_connections: u32,
    /// Share of the requests that waited for a slot at all (over 1 ms).
    pub waited_share: f64,
    pub wait_p50_ms: f64,
    pub wait_p99_ms: f64,
    pub wait_max_ms: f64,
}

impl Slots {
    /// From the crowd's requests (the operator's have a slot of their own, and wait
    /// only for each other).
    pub fn of(samples: &[Sample], max_connections: u32) -> Slots {
        let crowd = samples.iter().filter(|s| s.step != Step::Observe);
        let mut waits: Vec<u32> = crowd.map(|s| s.waited_us).collect();
        let waited = waits.iter().filter(|&&w| w > 1_000).count();
        Slots {
            max_connections,
            waited_share: waited as f64 / waits.len().max(1) as f64,
            wait_p50_ms: quantile_ms(&mut waits, 0.50),
            wait_p99_ms: quantile_ms(&mut waits, 0.99),
            wait_max_ms: quantile_ms(&mut waits, 1.0),
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Buyers {
    pub planned: u64,
    pub arrived: u64,
    pub joined: u64,
    pub admitted: u64,
    pub outcomes: BTreeMap<String, u64>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Sold {
    /// Tickets the buyers were told are theirs.
    pub by_buyers: u64,
    /// Sold seats as the event's stats (the hot store) count them at the end.
    pub hot_store: u64,
    /// Sold seats the ledger's audit counts (when the audit ran).
    pub ledger: Option<u64>,
    pub capacity: u64,
    /// Seconds from the start until every seat was sold, if they were.
    pub sold_out_at_s: Option<f64>,
    /// Seconds from the start until no seat was free (sold or held).
    pub nothing_free_at_s: Option<f64>,
    /// The most seats sold within any minute of the run.
    pub best_minute: Option<Pace>,
    /// The most seats sold within any 10 seconds, as a rate a minute: the sale's pace
    /// when the whole inventory sells in about a minute or less, which a minute's
    /// window cannot show (it holds the whole sale).
    pub best_10_s: Option<Pace>,
    /// The sale's own pace: seats sold between the first readings at 10 % and at 80 % of
    /// the capacity sold, as a rate a minute. Steadier than the best 10 s, which one
    /// fast stretch lifts; it leaves out the opening's first holds and the last seats,
    /// which wait on lapsed holds and slow payments.
    pub sale: Option<Pace>,
}

/// Sales within one window of the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Pace {
    /// Where the window starts, in seconds from the start.
    pub from_s: f64,
    pub window_s: f64,
    pub seats: u64,
    /// Orders, estimated as seats ÷ the tickets a buyer who bought got on average.
    pub orders: f64,
    pub orders_per_min: f64,
}

impl Pace {
    /// `seats` sold in `window_s` from `from_s`; `tickets_per_order` turns them into
    /// orders.
    fn of(from_s: f64, window_s: f64, seats: u64, tickets_per_order: f64) -> Pace {
        let orders = seats as f64 / tickets_per_order.max(1.0);
        Pace {
            from_s,
            window_s,
            seats,
            orders,
            orders_per_min: orders * 60.0 / window_s,
        }
    }
}

/// The window of `window_s` (between two readings at most that far apart) in which the
/// hot store's sold count rose most; `tickets_per_order` turns seats into orders.
pub fn best_window(timeline: &[Point], window_s: f64, tickets_per_order: f64) -> Option<Pace> {
    let mut best: Option<(f64, u64)> = None;
    let mut j = 0;
    for (i, p) in timeline.iter().enumerate() {
        j = j.max(i);
        while j + 1 < timeline.len() && timeline[j + 1].t - p.t <= window_s {
            j += 1;
        }
        let seats = timeline[j].sold.saturating_sub(p.sold);
        if seats > best.map_or(0, |b| b.1) {
            best = Some((p.t, seats));
        }
    }
    let (from_s, seats) = best?;
    Some(Pace::of(from_s, window_s, seats, tickets_per_order))
}

/// Seats sold from the first reading at 10 % of `capacity` sold to the first at 80 %;
/// `None` when the run did not sell that far.
pub fn sale_window(timeline: &[Point], capacity: u64, tickets_per_order: f64) -> Option<Pace> {
    let reached = |share: u64| {
        let seats = capacity * share / 100;
        timeline.iter().find(|p| capacity > 0 && p.sold >= seats)
    };
    let (from, to) = (reached(10)?, reached(80)?);
    let window_s = to.t - from.t;
    if window_s <= 0.0 {
        return None;
    }
    Some(Pace::of(
        from.t,
        window_s,
        to.sold - from.sold,
        tickets_per_order,
    ))
}

#[derive(Clone, Debug, Serialize)]
pub struct StepStats {
    pub step: Step,
    pub name: &'static str,
    pub requests: u64,
    /// Server failures and requests with no answer.
    pub failures: u64,
    pub peak_per_s: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub series: Vec<Bucket>,
}

#[derive(Clone, Copy, Debug, Serialize)]
pub struct Bucket {
    pub t: f64,
    pub per_s: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Fairness {
    /// Spearman's ρ between the order buyers joined after the opening and the order
    /// they were let in (1: first come, first served).
    pub arrival_vs_admission: Option<f64>,
    /// The same against their places in line.
    pub arrival_vs_position: Option<f64>,
    /// ρ between arrival and drawn place in the pre-opening pool (near 0 by design:
    /// the pool is shuffled).
    pub pool_arrival_vs_position: Option<f64>,
    pub bots: BotAdvantage,
    pub profiles: Vec<ProfileRow>,
    /// (arrival rank, admission rank, adversary) of up to 2,000 admitted buyers.
    pub ranks: Vec<(u32, u32, bool)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ProfileRow {
    pub profile: Profile,
    pub name: &'static str,
    pub buyers: u64,
    pub admitted: u64,
    pub bought: u64,
    pub tickets: u64,
    pub mean_wait_s: Option<f64>,
    /// Requests sent per person of this profile (all their identities and clients).
    pub requests_per_person: f64,
    /// CPU seconds per person spent solving proofs of work.
    pub solve_cpu_s_per_person: f64,
    /// What this profile alone gained over honest buyers (none for the honest).
    pub advantage: Option<BotAdvantage>,
    /// What its people got out of reselling, summed (reselling scalpers only).
    pub resale: Option<Resale>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Audit {
    pub clean: bool,
    pub seats_sold: Option<u64>,
    pub orders_in_flight: Option<u64>,
    pub report: serde_json::Value,
}

impl Audit {
    /// From `boxoffice audit --json`'s report.
    pub fn of(report: serde_json::Value) -> Audit {
        let clean = report["violations"].as_array().is_some_and(Vec::is_empty);
        Audit {
            clean,
            seats_sold: report["seats_sold"].as_u64(),
            orders_in_flight: report["orders_in_flight"].as_u64(),
            report,
        }
    }
}

/// Steps with their time series, buckets of `bucket_s` seconds.
pub fn steps(samples: &[Sample], duration_s: f64, targets: usize) -> (Vec<StepStats>, NodeFigures) {
    let bucket_s = (duration_s / 120.0).ceil().max(1.0);
    let mut out = Vec::new();
    for step in Step::ALL {
        let mine: Vec<&Sample> = samples.iter().filter(|s| s.step == step).collect();
        if mine.is_empty() {
            continue;
        }
        let mut all: Vec<u32> = mine.iter().map(|s| s.latency_us).collect();
        let mut buckets: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
        for s in &mine {
            let b = (f64::from(s.at_ms) / 1e3 / bucket_s) as u64;
            buckets.entry(b).or_default().push(s.latency_us);
        }
        let series: Vec<Bucket> = buckets
            .into_iter()
            .map(|(b, mut l)| Bucket {
                t: b as f64 * bucket_s,
                per_s: l.len() as f64 / bucket_s,
                p50_ms: quantile_ms(&mut l, 0.50),
                p95_ms: quantile_ms(&mut l, 0.95),
                p99_ms: quantile_ms(&mut l, 0.99),
            })
            .collect();
        out.push(StepStats {
            step,
            name: step.name(),
            requests: mine.len() as u64,
            failures: mine
                .iter()
                .filter(|s| s.status == 0 || s.status >= 500)
                .count() as u64,
            peak_per_s: series.iter().map(|b| b.per_s).fold(0.0, f64::max),
            p50_ms: quantile_ms(&mut all, 0.50),
            p95_ms: quantile_ms(&mut all, 0.95),
            p99_ms: quantile_ms(&mut all, 0.99),
            series,
        });
    }
    let peak = |step: Step| {
        let p = out
            .iter()
            .find(|s| s.step == step)
            .map_or(0.0, |s| s.peak_per_s);
        p / targets.max(1) as f64
    };
    let figures = NodeFigures {
        status_per_s: peak(Step::Status),
        joins_per_s: peak(Step::Join),
        holds_per_s: peak(Step::Hold),
        checkouts_per_s: peak(Step::Checkout),
        source: "the highest rates per node seen in a rehearsal".into(),
        ..NodeFigures::default()
    };
    (out, figures)
}

/// The `q` quantile (nearest rank) of microsecond samples, in milliseconds.
pub fn quantile_ms(samples: &mut [u32], q: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    samples.sort_unstable();
    let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
    f64::from(samples[rank - 1]) / 1e3
}

/// Admissions per second between consecutive readings.
pub fn admitted_per_s(timeline: &[Point]) -> Vec<(f64, f64)> {
    timeline
        .windows(2)
        .map(|w| {
            let let_in = |p: &Point| p.serving_up_to.min(p.queue_length);
            let dt = (w[1].t - w[0].t).max(1e-3);
            let n = let_in(&w[1]).saturating_sub(let_in(&w[0]));
            (w[1].t, n as f64 / dt)
        })
        .collect()
}

pub fn sold(timeline: &[Point], buyers: &[BuyerResult]) -> Sold {
    let last = timeline.last().copied().unwrap_or_default();
    let first = |f: &dyn Fn(&Point) -> bool| timeline.iter().find(|p| f(p)).map(|p| p.t);
    let capacity = last.capacity;
    let by_buyers: u64 = buyers.iter().map(|b| u64::from(b.tickets)).sum();
    let bought = buyers.iter().filter(|b| b.tickets > 0).count();
    let per_order = if bought == 0 {
        1.0
    } else {
        by_buyers as f64 / bought as f64
    };
    Sold {
        by_buyers,
        hot_store: last.sold,
        ledger: None,
        capacity,
        sold_out_at_s: first(&|p| capacity > 0 && p.sold >= capacity),
        nothing_free_at_s: first(&|p| capacity > 0 && p.free == 0 && p.sold + p.held >= capacity),
        best_minute: best_window(timeline, 60.0, per_order),
        best_10_s: best_window(timeline, 10.0, per_order),
        sale: sale_window(timeline, capacity, per_order),
    }
}

pub fn buyer_counts(planned: u64, buyers: &[BuyerResult]) -> Buyers {
    let mut outcomes = BTreeMap::new();
    for b in buyers {
        let name = serde_json::to_value(b.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        *outcomes.entry(name).or_default() += 1;
    }
    Buyers {
        planned,
        arrived: buyers
            .iter()
            .filter(|b| b.outcome != Outcome::Stopped || b.joined_s.is_some())
            .count() as u64,
        joined: buyers.iter().filter(|b| b.joined_s.is_some()).count() as u64,
        admitted: buyers.iter().filter(|b| b.admitted_s.is_some()).count() as u64,
        outcomes,
    }
}

pub fn fairness(buyers: &[BuyerResult]) -> Fairness {
    let after: Vec<&BuyerResult> = buyers.iter().filter(|b| !b.pooled).collect();
    let pooled: Vec<&BuyerResult> = buyers.iter().filter(|b| b.pooled).collect();
    let pairs = |group: &[&BuyerResult], f: &dyn Fn(&BuyerResult) -> Option<f64>| {
        let (a, b): (Vec<f64>, Vec<f64>) = group
            .iter()
            .filter_map(|x| Some((x.joined_s?, f(x)?)))
            .unzip();
        fairness::spearman(&a, &b)
    };
    let outcomes = outcomes(buyers, |_| true);
    Fairness {
        arrival_vs_admission: pairs(&after, &|b| b.admitted_s),
        arrival_vs_position: pairs(&after, &|b| b.position.map(|p| p as f64)),
        pool_arrival_vs_position: pairs(&pooled, &|b| b.position.map(|p| p as f64)),
        bots: fairness::bot_advantage(&outcomes),
        profiles: profiles(buyers),
        ranks: ranks(buyers),
    }
}

/// Buyers who joined, as fairness sees them, of the profiles `keep` keeps.
fn outcomes(buyers: &[BuyerResult], keep: impl Fn(Profile) -> bool) -> Vec<fairness::Outcome> {
    buyers
        .iter()
        .filter(|b| keep(b.profile))
        .filter_map(|b| {
            Some(fairness::Outcome {
                arrived: b.joined_s?,
                admitted: b.admitted_s,
                tickets: b.tickets,
                adversary: b.profile.adversary(),
            })
        })
        .collect()
}

fn profiles(buyers: &[BuyerResult]) -> Vec<ProfileRow> {
    Profile::ALL
        .iter()
        .filter_map(|&p| {
            let mine: Vec<&BuyerResult> = buyers.iter().filter(|b| b.profile == p).collect();
            if mine.is_empty() {
                return None;
            }
            let waits: Vec<f64> = mine
                .iter()
                .filter_map(|b| Some(b.admitted_s? - b.joined_s?))
                .collect();
            let people = mine.len() as f64;
            let advantage = p.adversary().then(|| {
                fairness::bot_advantage(&outcomes(buyers, |q| q == p || q == Profile::Honest))
            });
            let resale =
                mine.iter()
                    .filter_map(|b| b.resale.as_ref())
                    .fold(None::<Resale>, |sum, r| {
                        let mut sum = sum.unwrap_or_default();
                        sum.add(r);
                        Some(sum)
                    });
            Some(ProfileRow {
                resale,
                requests_per_person: mine.iter().map(|b| b.requests as f64).sum::<f64>() / people,
                solve_cpu_s_per_person: mine.iter().map(|b| b.solve_cpu_s).sum::<f64>() / people,
                advantage,
                profile: p,
                name: p.name(),
                buyers: mine.len() as u64,
                admitted: waits.len() as u64,
                bought: mine.iter().filter(|b| b.tickets > 0).count() as u64,
                tickets: mine.iter().map(|b| u64::from(b.tickets)).sum(),
                mean_wait_s: (!waits.is_empty())
                    .then(|| waits.iter().sum::<f64>() / waits.len() as f64),
            })
        })
        .collect()
}

/// Arrival and admission ranks of the admitted, every k-th so at most 2,000.
fn ranks(buyers: &[BuyerResult]) -> Vec<(u32, u32, bool)> {
    let admitted: Vec<&BuyerResult> = buyers
        .iter()
        .filter(|b| b.joined_s.is_some() && b.admitted_s.is_some())
        .collect();
    let arrival: Vec<f64> = admitted.iter().filter_map(|b| b.joined_s).collect();
    let admission: Vec<f64> = admitted.iter().filter_map(|b| b.admitted_s).collect();
    let (ra, rb) = (fairness::ranks(&arrival), fairness::ranks(&admission));
    let every = admitted.len().div_ceil(2_000).max(1);
    (0..admitted.len())
        .step_by(every)
        .map(|i| (ra[i] as u32, rb[i] as u32, admitted[i].profile.adversary()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t: f64, sold: u64) -> Point {
        Point {
            t,
            sold,
            ..Point::default()
        }
    }

    /// Readings every half second: 100 seats a second for 20 s from t = 5, then 400 a
    /// second for 5 s, then nothing.
    #[test]
    fn the_best_window_is_where_the_sold_count_rose_most() {
        let mut timeline = Vec::new();
        let mut sold = 0;
        for i in 0..200 {
            let t = f64::from(i) * 0.5;
            timeline.push(at(t, sold));
            sold += match t {
                t if (5.0..25.0).contains(&t) => 50,
                t if (25.0..30.0).contains(&t) => 200,
                _ => 0,
            };
        }
        let ten = best_window(&timeline, 10.0, 2.0).expect("sales");
        // 5 s at 400 and 5 s at 100 before them.
        assert_eq!((ten.from_s, ten.seats), (20.0, 2_500));
        assert_eq!(ten.orders, 1_250.0);
        assert_eq!(ten.orders_per_min, 7_500.0);
        let minute = best_window(&timeline, 60.0, 2.0).expect("sales");
        assert_eq!(
            (minute.from_s, minute.seats),
            (0.0, 4_000),
            "the whole sale"
        );
        assert_eq!(minute.orders_per_min, 2_000.0);
        assert_eq!(best_window(&[at(0.0, 0), at(1.0, 0)], 10.0, 2.0), None);
        assert_eq!(best_window(&[], 10.0, 2.0), None);

        // Of 4,000 seats: 400 sold first at 9 s, 3,200 at 28 s.
        let sale = sale_window(&timeline, 4_000, 2.0).expect("sold past 80 %");
        assert_eq!((sale.from_s, sale.window_s, sale.seats), (9.0, 19.0, 2_800));
        assert_eq!(sale.orders, 1_400.0);
        assert!((sale.orders_per_min - 1_400.0 * 60.0 / 19.0).abs() < 1e-9);
        assert_eq!(sale_window(&timeline, 10_000, 2.0), None, "never 80 % sold");
        assert_eq!(sale_window(&timeline, 0, 2.0), None);
    }
}
