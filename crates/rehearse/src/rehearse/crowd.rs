//! Who comes, when, and how they behave: a rush before the sale opens, then a
//! decaying Poisson tail; honest buyers with a mix of choices and cards, and the
//! adversaries (aggressive pollers, buyers with many sessions, clients that retry
//! without backoff, bots that solve the proof of work, line-sitters who hand their
//! admission to other clients, and account farms on one device and one card).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

/// When buyers arrive.
#[derive(Clone, Debug, Serialize)]
pub struct Arrivals {
    pub buyers: u32,
    /// Share of buyers who arrive before the sale opens (the rush).
    pub rush_share: f64,
    /// Seconds of rush before the opening (the sale opens at this moment).
    pub rush_s: f64,
    /// Time constant of the tail after opening: arrivals per second fall by e every
    /// `tail_tau_s`.
    pub tail_tau_s: f64,
    /// The tail stops after this many seconds past the opening.
    pub tail_s: f64,
}

/// What honest buyers do once let in.
#[derive(Clone, Debug, Serialize)]
pub struct Mix {
    /// Weights of named seats, best available and general admission.
    pub named: f64,
    pub best: f64,
    pub ga: f64,
    /// Weights of 1, 2, 3 and 4 tickets.
    pub quantity: [f64; 4],
    pub think_min_ms: u64,
    pub think_max_ms: u64,
    /// Share who hold and walk away (the hold expires).
    pub abandon: f64,
    /// Share who hold and release at once.
    pub release: f64,
    /// Weights of cards that approve, decline, ask for 3-D Secure, and time out.
    pub approve: f64,
    pub decline: f64,
    pub three_ds: f64,
    pub timeout: f64,
    /// Each buyer whose card approves pays with a card of their own
    /// (`pm_card_visa_<buyer>`, which the stand-in provider approves as it approves any
    /// method it has no script for) rather than everyone with `pm_card_visa`: needed
    /// when the event's buyer signals count distinct buyers per card.
    pub own_cards: bool,
}

impl Default for Mix {
    fn default() -> Self {
        Mix {
            named: 0.3,
            best: 0.4,
            ga: 0.3,
            quantity: [0.25, 0.5, 0.15, 0.1],
            think_min_ms: 200,
            think_max_ms: 1_500,
            abandon: 0.05,
            release: 0.05,
            approve: 0.8,
            decline: 0.08,
            three_ds: 0.07,
            timeout: 0.05,
            own_cards: false,
        }
    }
}

/// Shares of the crowd that are adversaries.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Adversaries {
    /// Poll every 100 ms whatever the server says.
    pub aggressive_pollers: f64,
    /// One person behind several buyer identities from one address.
    pub many_sessions: f64,
    /// Sessions each of those (and each account farm) opens.
    pub sessions_each: u32,
    /// Retry refusals (429, 503) at once, ignoring Retry-After.
    pub no_backoff: f64,
    /// Solve the proof of work at machine speed, join the instant they arrive, take
    /// the most tickets allowed and never think.
    pub pow_bots: f64,
    /// A line-sitter: one identity waits in line, then hands its buyer token and
    /// admission token (not its key: the customers' clients make their own, as the buyer
    /// app does) to `clients_each` other clients, who hold and pay with it.
    pub token_sharers: f64,
    pub clients_each: u32,
    /// An account farm: `sessions_each` buyer identities on one device (one key proving
    /// possession), one client address and one card; every account that is let in
    /// takes the most tickets allowed.
    pub farms: f64,
    /// A reselling scalper: takes the most tickets allowed, then tries to sell them on
    /// (moves them to another identity of its own, renames them, lists them above face
    /// value on the exchange; see `resell`).
    pub scalpers: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    Honest,
    AggressivePoller,
    ManySessions,
    NoBackoff,
    PowBot,
    TokenSharer,
    Farm,
    Scalper,
}

impl Profile {
    pub const ALL: [Profile; 8] = [
        Profile::Honest,
        Profile::AggressivePoller,
        Profile::ManySessions,
        Profile::NoBackoff,
        Profile::PowBot,
        Profile::TokenSharer,
        Profile::Farm,
        Profile::Scalper,
    ];

    pub fn adversary(self) -> bool {
        self != Profile::Honest
    }

    pub fn name(self) -> &'static str {
        match self {
            Profile::Honest => "honest",
            Profile::AggressivePoller => "aggressive poller",
            Profile::ManySessions => "many sessions",
            Profile::NoBackoff => "no-backoff retries",
            Profile::PowBot => "proof-of-work bot",
            Profile::TokenSharer => "token-sharing line-sitter",
            Profile::Farm => "account farm",
            Profile::Scalper => "reselling scalper",
        }
    }

    /// Takes the most tickets allowed, pays with the first card and never thinks.
    pub fn greedy(self) -> bool {
        matches!(
            self,
            Profile::PowBot | Profile::TokenSharer | Profile::Farm | Profile::Scalper
        )
    }
}

/// One person of the crowd, decided before the run.
#[derive(Clone, Debug)]
pub struct Planned {
    pub index: usize,
    pub arrive_s: f64,
    pub profile: Profile,
    /// A seed of this person's own choices.
    pub seed: u64,
}

/// The crowd of a run, in arrival order.
pub fn crowd(a: &Arrivals, adv: &Adversaries, seed: u64) -> Vec<Planned> {
    let mut rng = StdRng::seed_from_u64(seed);
    let n = a.buyers as usize;
    let rush = ((n as f64) * a.rush_share).round() as usize;
    let mut times: Vec<f64> = (0..n)
        .map(|i| {
            if i < rush {
                rng.random::<f64>() * a.rush_s
            } else {
                a.rush_s + decaying(rng.random::<f64>(), a.tail_tau_s, a.tail_s)
            }
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times
        .into_iter()
        .enumerate()
        .map(|(index, arrive_s)| Planned {
            index,
            arrive_s,
            profile: profile(rng.random::<f64>(), adv),
            seed: rng.random(),
        })
        .collect()
}

/// The `u` quantile of an exponential decay with time constant `tau` cut at `within`:
/// the arrival times of a Poisson process whose rate falls as e^(−t/τ), given how many
/// arrive.
pub fn decaying(u: f64, tau: f64, within: f64) -> f64 {
    if tau <= 0.0 {
        return 0.0;
    }
    let mass = 1.0 - (-within / tau).exp();
    -tau * (1.0 - u * mass).ln()
}

fn profile(u: f64, adv: &Adversaries) -> Profile {
    let mut edge = 0.0;
    for (share, p) in [
        (adv.aggressive_pollers, Profile::AggressivePoller),
        (adv.many_sessions, Profile::ManySessions),
        (adv.no_backoff, Profile::NoBackoff),
        (adv.pow_bots, Profile::PowBot),
        (adv.token_sharers, Profile::TokenSharer),
        (adv.farms, Profile::Farm),
        (adv.scalpers, Profile::Scalper),
    ] {
        edge += share;
        if u < edge {
            return p;
        }
    }
    Profile::Honest
}

/// Picks an index by weight.
pub fn pick(rng: &mut StdRng, weights: &[f64]) -> usize {
    let total: f64 = weights.iter().sum();
    let mut u = rng.random::<f64>() * total;
    for (i, w) in weights.iter().enumerate() {
        if u < *w {
            return i;
        }
        u -= w;
    }
    weights.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rush_comes_before_the_opening_and_the_tail_decays_after_it() {
        let a = Arrivals {
            buyers: 10_000,
            rush_share: 0.4,
            rush_s: 2.0,
            tail_tau_s: 3.0,
            tail_s: 30.0,
        };
        let c = crowd(&a, &Adversaries::default(), 7);
        let before = c.iter().filter(|p| p.arrive_s < 2.0).count();
        assert_eq!(before, 4_000);
        assert!(c.windows(2).all(|w| w[0].arrive_s <= w[1].arrive_s));
        // With τ = 3 s, about 1 − e^(−1) = 63 % of the tail comes in its first 3 s.
        let first = c
            .iter()
            .filter(|p| (2.0..5.0).contains(&p.arrive_s))
            .count();
        let share = first as f64 / 6_000.0;
        assert!((0.60..0.67).contains(&share), "{share}");
        assert!(c.iter().all(|p| p.arrive_s <= 32.0));
        assert!(c.iter().all(|p| p.profile == Profile::Honest));
    }

    #[test]
    fn adversaries_take_their_shares() {
        let a = Arrivals {
            buyers: 20_000,
            rush_share: 0.5,
            rush_s: 1.0,
            tail_tau_s: 1.0,
            tail_s: 5.0,
        };
        let adv = Adversaries {
            aggressive_pollers: 0.1,
            pow_bots: 0.05,
            token_sharers: 0.03,
            farms: 0.02,
            scalpers: 0.02,
            ..Adversaries::default()
        };
        let c = crowd(&a, &adv, 1);
        let share = |p| c.iter().filter(|b| b.profile == p).count() as f64 / 20_000.0;
        assert!((share(Profile::AggressivePoller) - 0.1).abs() < 0.01);
        assert!((share(Profile::PowBot) - 0.05).abs() < 0.01);
        assert!((share(Profile::TokenSharer) - 0.03).abs() < 0.005);
        assert!((share(Profile::Farm) - 0.02).abs() < 0.005);
        assert!((share(Profile::Scalper) - 0.02).abs() < 0.005);
        assert_eq!(share(Profile::ManySessions), 0.0);
    }
}
