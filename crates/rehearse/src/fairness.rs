//! Fairness figures of a rehearsal: whether buyers were let in in the order they
//! arrived (Spearman's rank correlation between arrival and admission), and what the
//! adversaries gained over honest buyers, in place and in tickets.

use serde::Serialize;

/// Ranks of `xs` from 1, ties given the mean of the ranks they span.
pub fn ranks(xs: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..xs.len()).collect();
    order.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    let mut out = vec![0.0; xs.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && xs[order[j + 1]] == xs[order[i]] {
            j += 1;
        }
        // Ranks i+1 ..= j+1 share their mean.
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            out[k] = mean;
        }
        i = j + 1;
    }
    out
}

/// Spearman's rank correlation of paired samples: Pearson's on their ranks (so ties
/// are handled). `None` with fewer than two pairs or when either side is constant.
pub fn spearman(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() != b.len() || a.len() < 2 {
        return None;
    }
    pearson(&ranks(a), &ranks(b))
}

fn pearson(a: &[f64], b: &[f64]) -> Option<f64> {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let (mut cov, mut va, mut vb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        cov += (x - ma) * (y - mb);
        va += (x - ma).powi(2);
        vb += (y - mb).powi(2);
    }
    (va > 0.0 && vb > 0.0).then(|| cov / (va * vb).sqrt())
}

/// One buyer as fairness sees them.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    /// Seconds since the start when they joined.
    pub arrived: f64,
    /// Seconds since the start when they were let in, if they were.
    pub admitted: Option<f64>,
    pub tickets: u32,
    pub adversary: bool,
}

/// What the adversaries gained over honest buyers. Zero gain and a ratio of 1 mean
/// nothing measurable.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BotAdvantage {
    pub honest: u64,
    pub adversaries: u64,
    /// Mean over adversaries of (arrival percentile − admission percentile) among the
    /// admitted, minus the same for honest buyers: how many percentage points of the
    /// line they jumped beyond what honest buyers did.
    pub position_gain_pct: f64,
    /// Tickets per adversary ÷ tickets per honest buyer (1: the same).
    pub ticket_ratio: Option<f64>,
    /// Share of each group that was let in.
    pub honest_admitted_share: f64,
    pub adversary_admitted_share: f64,
}

/// The bot advantage of a run.
pub fn bot_advantage(buyers: &[Outcome]) -> BotAdvantage {
    let admitted: Vec<&Outcome> = buyers.iter().filter(|b| b.admitted.is_some()).collect();
    let arrivals: Vec<f64> = admitted.iter().map(|b| b.arrived).collect();
    let admissions: Vec<f64> = admitted.iter().filter_map(|b| b.admitted).collect();
    let (ra, rb) = (ranks(&arrivals), ranks(&admissions));
    let n = admitted.len().max(1) as f64;
    let mut gain = [(0.0, 0u64); 2];
    for (i, b) in admitted.iter().enumerate() {
        let g = &mut gain[usize::from(b.adversary)];
        g.0 += (ra[i] - rb[i]) / n * 100.0;
        g.1 += 1;
    }
    let mean = |(sum, count): (f64, u64)| if count == 0 { 0.0 } else { sum / count as f64 };
    let group = |adversary: bool| buyers.iter().filter(move |b| b.adversary == adversary);
    let count = |adversary: bool| group(adversary).count() as u64;
    let tickets = |adversary: bool| group(adversary).map(|b| f64::from(b.tickets)).sum::<f64>();
    let share = |adversary: bool| {
        let all = count(adversary).max(1) as f64;
        group(adversary).filter(|b| b.admitted.is_some()).count() as f64 / all
    };
    let (honest, adversaries) = (count(false), count(true));
    let per = |adversary: bool, of: u64| tickets(adversary) / of.max(1) as f64;
    let ticket_ratio = (honest > 0 && adversaries > 0 && per(false, honest) > 0.0)
        .then(|| per(true, adversaries) / per(false, honest));
    BotAdvantage {
        honest,
        adversaries,
        position_gain_pct: mean(gain[1]) - mean(gain[0]),
        ticket_ratio,
        honest_admitted_share: share(false),
        adversary_admitted_share: share(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64) {
        assert!((got - want).abs() < 1e-9, "{got} is not {want}");
    }

    #[test]
    fn ties_share_the_mean_of_their_ranks() {
        assert_eq!(ranks(&[10.0, 20.0, 20.0, 5.0]), vec![2.0, 3.5, 3.5, 1.0]);
    }

    #[test]
    fn the_rank_correlation_is_right_on_orders_whose_correlation_is_known() {
        let arrival: Vec<f64> = (1..=5).map(f64::from).collect();
        close(spearman(&arrival, &arrival).unwrap(), 1.0);
        let reversed: Vec<f64> = arrival.iter().rev().copied().collect();
        close(spearman(&arrival, &reversed).unwrap(), -1.0);
        // Neighbours swapped twice: d² = 1 + 1 + 1 + 1 + 0 = 4, and with no ties
        // ρ = 1 − 6·Σd² / (n(n² − 1)) = 1 − 24 / 120 = 0.8.
        close(spearman(&arrival, &[2.0, 1.0, 4.0, 3.0, 5.0]).unwrap(), 0.8);
        // Ten buyers admitted in two batches of five: within a batch the admission
        // moment ties. Ranks 3 for the first five and 8 for the others; Pearson of
        // 1..10 against that step is √(75/82.5) = 0.870 (worked: Σ(x−x̄)(y−ȳ) =
        // 2.5·(−(4.5+3.5+2.5+1.5+0.5) + (0.5+1.5+2.5+3.5+4.5)) = 62.5, Σ(x−x̄)² = 82.5,
        // Σ(y−ȳ)² = 10·2.5² = 62.5; 62.5 / √(82.5·62.5) = √(62.5/82.5)).
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        let batches: Vec<f64> = (0..10).map(|i| if i < 5 { 1.0 } else { 2.0 }).collect();
        close(spearman(&ten, &batches).unwrap(), (62.5f64 / 82.5).sqrt());
        assert_eq!(
            spearman(&ten, &[1.0; 10]),
            None,
            "a constant side has no rank order"
        );
    }

    #[test]
    fn the_bot_advantage_is_right_on_a_run_that_favours_bots() {
        // Eight buyers arrive one a second, bots at the odd seconds. The server (here
        // made up) lets every bot in first, then the honest, and gives bots two tickets
        // each and honest buyers one.
        let buyers: Vec<Outcome> = (0..8)
            .map(|i| {
                let bot = i % 2 == 1;
                let order = if bot { i / 2 } else { 4 + i / 2 };
                Outcome {
                    arrived: f64::from(i),
                    admitted: Some(100.0 + f64::from(order)),
                    tickets: if bot { 2 } else { 1 },
                    adversary: bot,
                }
            })
            .collect();
        let a = bot_advantage(&buyers);
        // Arrival ranks of bots 2, 4, 6, 8 → admission ranks 1, 2, 3, 4: gains 1, 2, 3,
        // 4 places, mean 2.5 of 8 = 31.25 %. Honest arrival ranks 1, 3, 5, 7 →
        // admission 5, 6, 7, 8: −4, −3, −2, −1 places, mean −2.5 of 8 = −31.25 %.
        // Difference 62.5 points.
        close(a.position_gain_pct, 62.5);
        close(a.ticket_ratio.unwrap(), 2.0);
        assert_eq!((a.honest, a.adversaries), (4, 4));
        close(a.honest_admitted_share, 1.0);

        // Fair: admitted in arrival order, one ticket each: nothing gained.
        let fair: Vec<Outcome> = buyers
            .iter()
            .map(|b| Outcome {
                admitted: Some(100.0 + b.arrived),
                tickets: 1,
                ..*b
            })
            .collect();
        let a = bot_advantage(&fair);
        close(a.position_gain_pct, 0.0);
        close(a.ticket_ratio.unwrap(), 1.0);
    }
}
