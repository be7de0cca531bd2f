//! Payment velocity and buyer signals (docs/ARCHITECTURE.md §13): before a checkout
//! calls the provider, the event's limits on attempts and declines per buyer, per
//! payment method and per client network are checked in one atomic step of the
//! velocity store, a buyer with many declines is locked out, and the buyer joins the
//! clusters of their device key, network and payment method, which refuse or flag past
//! the event's thresholds. The buyer joins the device and network clusters at queue
//! join and at each hold as well, so a farm of accounts on one device or network is
//! refused before it reaches checkout. A decline that settles a checkout later (3-D
//! Secure, an uncertain payment found declined) is counted like one the provider gave
//! at once, from what the checkout stashed. A purchase on the face-value exchange is a
//! payment like a checkout: the same gate before the provider, the same stash and the
//! same count of its decline (`Payment`). Nothing here runs unless the event's sale
//! settings name velocity rules and the engine was given a store.

use std::net::IpAddr;
use std::sync::Arc;

use boxoffice_domain::velocity::{SignalThreshold, VelocityRules};
use boxoffice_domain::{BuyerId, EventId, Millis, OrderId};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::catalog::EventEntry;
use crate::ports::{Admission, Counter, Dimension, Join, Links, Order, Swap, VelocityStore};
use crate::{Engine, EngineError};

/// The most clusters one signals page lists.
pub const MAX_SIGNALS_PAGE: usize = 200;

/// Where a checkout comes from, as far as the edge can tell.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Origin {
    /// The client's address (behind trusted proxies, the one they name).
    pub ip: Option<IpAddr>,
    /// The buyer app's device key (its public key's thumbprint), when it proves one.
    pub device: Option<String>,
}

/// One cluster of an event: the distinct buyers one device key, network or payment
/// method served.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct SignalCluster {
    pub dimension: Dimension,
    /// The network as text (`203.0.113.0/24`); for a device key or a payment method,
    /// a hash of it (32 hex digits).
    pub key: String,
    /// Distinct buyers seen (counting stops past the event's largest threshold).
    pub buyers: u32,
    /// At or past the event's flag threshold for this dimension.
    pub flagged: bool,
    /// At the event's refusal threshold: further buyers are refused.
    pub refusing: bool,
}

/// A payment whose decline counts toward velocity: a checkout's order, or the buyer's
/// charge of an exchange swap. `id` is the payment's key at the provider, under which
/// its subjects are stashed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Payment {
    pub event: EventId,
    pub buyer: BuyerId,
    pub id: OrderId,
}

impl From<&Order> for Payment {
    fn from(o: &Order) -> Payment {
        Payment {
            event: o.event,
            buyer: o.buyer,
            id: o.id,
        }
    }
}

impl From<&Swap> for Payment {
    fn from(s: &Swap) -> Payment {
        Payment {
            event: s.event,
            buyer: s.buyer,
            id: s.charge,
        }
    }
}

/// What a checkout is counted under: hashes of what the client sent or is.
struct Subjects {
    buyer: String,
    card: Option<String>,
    network: Option<String>,
    device: Option<String>,
}

/// How long past its payment grace a checkout's stashed card and network are kept for
/// a decline that settles it: an order still pending later than that is settled
/// without counting.
const STASH_AFTER_GRACE_S: u64 = 3_600;

/// Which limit a counter of a check enforces.
#[derive(Clone, Copy)]
enum Kind {
    Lockout,
    Limit(&'static str),
}

impl Engine {
    /// Enforces the events' velocity rules with this store (shared by the nodes of a
    /// cluster when it is Redis).
    pub fn with_velocity(mut self, store: Arc<dyn VelocityStore>) -> Engine {
        self.velocity = Some(store);
        self
    }

    /// Refuses a payment (a checkout, an exchange purchase) over a velocity limit or a
    /// signal threshold, before the provider is called. Counts the attempt when it
    /// passes.
    pub(crate) async fn velocity_gate(
        &self,
        event: EventId,
        rules: Option<&VelocityRules>,
        buyer: BuyerId,
        payment_method: &str,
        origin: &Origin,
    ) -> Result<(), EngineError> {
        let (Some(rules), Some(store)) = (rules, &self.velocity) else {
            return Ok(());
        };
        let now = self.now();
        let subjects = Subjects::of(rules, buyer, Some(payment_method), origin);
        let (counters, kinds) = attempt_counters(rules, &subjects);
        match store.check(event, &counters, now).await? {
            Admission::Admitted => {}
            Admission::Refused { index, until } => {
                return Err(refusal(kinds[index], until, now));
            }
        }
        self.join_clusters(event, rules, &subjects, now).await
    }

    /// Joins the buyer to the clusters of their device key and network at queue join
    /// or hold, refusing with `too_many_buyers` a buyer who would take a cluster to its
    /// refusal threshold. One atomic step of the store, made after every other check of
    /// the request and before anything of it is kept: a refused join or hold changes
    /// nothing, in the store or elsewhere.
    pub async fn signals_at_entry(
        &self,
        entry: &EventEntry,
        buyer: BuyerId,
        origin: &Origin,
    ) -> Result<(), EngineError> {
        if self.velocity.is_none() {
            return Ok(());
        }
        let Some(rules) = entry.event.sale.velocity.as_ref() else {
            return Ok(());
        };
        let s = Subjects::of(rules, buyer, None, origin);
        self.join_clusters(entry.event.id, rules, &s, self.now())
            .await
    }

    /// Stashes what a payment's declines count under (its payment method and network,
    /// hashed), before the provider hears of it, so that a decline arriving later by
    /// webhook or found by a sweep is counted as this one would be. Best effort: a
    /// payment is not refused because its stash failed.
    pub(crate) async fn velocity_stash(
        &self,
        payment: Payment,
        rules: Option<&VelocityRules>,
        grace_s: u64,
        payment_method: &str,
        origin: &Origin,
    ) {
        let (Some(rules), Some(store)) = (rules, &self.velocity) else {
            return;
        };
        let s = Subjects::of(rules, payment.buyer, Some(payment_method), origin);
        let value = format!(
            "{} {}",
            s.card.as_deref().unwrap_or_default(),
            s.network.as_deref().unwrap_or_default()
        );
        let ttl_ms = grace_s.saturating_add(STASH_AFTER_GRACE_S) * 1000;
        let key = stash_key(payment);
        if let Err(e) = store
            .stash(payment.event, &key, &value, ttl_ms, self.now())
            .await
        {
            tracing::warn!(payment = %payment.id, error = %e, "could not stash a payment's velocity subjects");
        }
    }

    /// Counts the decline that ended `payment` (the caller's move of its order or swap
    /// to declined or undone won, so each payment's decline is counted once): from the
    /// buyer's own request when it is at hand (`now`: the provider declined while the
    /// buyer waited), or from the payment's stash, taken once, when the decline came
    /// later.
    pub(crate) async fn velocity_declined(&self, payment: Payment, now: Option<(&str, &Origin)>) {
        let Some(store) = &self.velocity else {
            return;
        };
        let rules = match self.event(payment.event).await {
            Ok(entry) => entry.event.sale.velocity.clone(),
            Err(e) => {
                tracing::warn!(payment = %payment.id, error = %e, "could not count a decline");
                return;
            }
        };
        let Some(rules) = rules else {
            return;
        };
        let subjects = match now {
            Some((payment_method, origin)) => {
                Subjects::of(&rules, payment.buyer, Some(payment_method), origin)
            }
            None => match store
                .take(payment.event, &stash_key(payment), self.now())
                .await
            {
                Ok(Some(stashed)) => Subjects::stashed(payment.buyer, &stashed),
                Ok(None) => {
                    tracing::info!(payment = %payment.id, "a late decline with nothing stashed; not counted");
                    return;
                }
                Err(e) => {
                    tracing::warn!(payment = %payment.id, error = %e, "could not count a decline");
                    return;
                }
            },
        };
        let counters = decline_counters(&rules, &subjects);
        match store.record(payment.event, &counters, self.now()).await {
            Ok(counts) => {
                let lockout = rules.lockout_declines.and_then(|n| {
                    let at = counters.iter().position(|c| c.key.starts_with("bl:"))?;
                    Some(counts.get(at).copied()? >= n)
                });
                if lockout == Some(true) {
                    tracing::info!(event = %payment.event, buyer = %payment.buyer, "buyer locked out after declines");
                    metrics::counter!("boxoffice_velocity_lockouts_total").increment(1);
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not count a declined payment"),
        }
    }

    /// Joins the buyer to every cluster of the subjects in one atomic step.
    async fn join_clusters(
        &self,
        event: EventId,
        rules: &VelocityRules,
        s: &Subjects,
        now: Millis,
    ) -> Result<(), EngineError> {
        let Some(store) = &self.velocity else {
            return Ok(());
        };
        let signals = &rules.signals;
        let wanted = [
            (Dimension::Device, s.device.as_deref(), signals.per_device),
            (
                Dimension::Network,
                s.network.as_deref(),
                signals.per_network,
            ),
            (Dimension::Card, s.card.as_deref(), signals.per_card),
        ];
        let ttl_ms = u64::from(rules.lockout_s.max(rules.window_s)) * 1000;
        let mut joins = Vec::with_capacity(wanted.len());
        let mut thresholds = Vec::with_capacity(wanted.len());
        for (dimension, key, threshold) in wanted {
            let (Some(key), Some(cap)) = (key, cap_of(&threshold)) else {
                continue;
            };
            joins.push(Join {
                dimension,
                key,
                member: &s.buyer,
                most: threshold.refuse_at.map(|r| r.saturating_sub(1)),
                cap,
                ttl_ms,
            });
            thresholds.push(threshold);
        }
        if joins.is_empty() {
            return Ok(());
        }
        match store.link_all(event, &joins, now).await? {
            Links::Joined(counts) => {
                for ((join, threshold), n) in joins.iter().zip(&thresholds).zip(counts) {
                    if threshold.flags(n) {
                        let dimension = join.dimension.as_str();
                        metrics::counter!("boxoffice_signal_flags_total", "dimension" => dimension)
                            .increment(1);
                    }
                }
                Ok(())
            }
            Links::Refused { index, .. } => {
                let dimension = joins.get(index).map_or(Dimension::Device, |j| j.dimension);
                metrics::counter!("boxoffice_velocity_refusals_total", "limit" => signal_limit(dimension))
                    .increment(1);
                Err(EngineError::TooManyBuyers(dimension.as_str()))
            }
        }
    }

    /// GET /v1/events/{id}/signals: the largest clusters of the event over every
    /// dimension, largest first, at most `limit` (at most `MAX_SIGNALS_PAGE`).
    pub async fn signals(
        &self,
        event: EventId,
        limit: usize,
    ) -> Result<Vec<SignalCluster>, EngineError> {
        let entry = self.event(event).await?;
        let Some(store) = &self.velocity else {
            return Ok(Vec::new());
        };
        let limit = limit.clamp(1, MAX_SIGNALS_PAGE);
        let rules = entry.event.sale.velocity.clone().unwrap_or_default();
        let mut out = Vec::new();
        for dimension in Dimension::ALL {
            let threshold = threshold_of(&rules, dimension);
            for c in store.clusters(event, dimension, limit).await? {
                out.push(SignalCluster {
                    dimension,
                    flagged: threshold.flags(c.buyers),
                    refusing: threshold.refuse_at.is_some_and(|r| c.buyers + 1 >= r),
                    key: c.key,
                    buyers: c.buyers,
                });
            }
        }
        out.sort_by(|a, b| b.buyers.cmp(&a.buyers).then_with(|| a.key.cmp(&b.key)));
        out.truncate(limit);
        Ok(out)
    }
}

impl Subjects {
    /// A request's subjects; `payment_method` only at checkout.
    fn of(
        rules: &VelocityRules,
        buyer: BuyerId,
        payment_method: Option<&str>,
        o: &Origin,
    ) -> Subjects {
        Subjects {
            buyer: buyer_hash(buyer),
            card: payment_method.map(|m| hashed("card", m.as_bytes())),
            network: o.ip.map(|ip| rules.network_of(ip)),
            device: o.device.as_deref().map(|d| hashed("device", d.as_bytes())),
        }
    }

    /// A checkout's subjects from its stash (`<card hash> <network>`).
    fn stashed(buyer: BuyerId, stashed: &str) -> Subjects {
        let mut parts = stashed.splitn(2, ' ');
        let mut next = || parts.next().filter(|p| !p.is_empty()).map(str::to_owned);
        Subjects {
            buyer: buyer_hash(buyer),
            card: next(),
            network: next(),
            device: None,
        }
    }
}

fn buyer_hash(buyer: BuyerId) -> String {
    hashed("buyer", buyer.to_string().as_bytes())
}

/// Where a payment's subjects are stashed: its key at the provider (an order's id, or
/// a swap's charge), unique across both.
fn stash_key(payment: Payment) -> String {
    format!("o:{}", payment.id)
}

/// 32 hex digits of a SHA-256 of what and the value: short, fixed-length and
/// free of any text a client chose.
fn hashed(what: &str, value: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(what.as_bytes());
    h.update([0]);
    h.update(value);
    h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The counters a checkout is checked against, each with the limit it enforces.
fn attempt_counters(r: &VelocityRules, s: &Subjects) -> (Vec<Counter>, Vec<Kind>) {
    let window_ms = u64::from(r.window_s) * 1000;
    let mut counters = Vec::new();
    let mut kinds = Vec::new();
    let mut push = |key: String, limit: Option<u32>, window_ms, add, kind| {
        if let Some(limit) = limit {
            counters.push(Counter {
                key,
                limit,
                window_ms,
                add,
            });
            kinds.push(kind);
        }
    };
    let lockout_ms = u64::from(r.lockout_s) * 1000;
    push(
        format!("bl:{}", s.buyer),
        r.lockout_declines,
        lockout_ms,
        false,
        Kind::Lockout,
    );
    let buyer = r.per_buyer;
    push(
        format!("ba:{}", s.buyer),
        buyer.attempts,
        window_ms,
        true,
        Kind::Limit("buyer_attempts"),
    );
    push(
        format!("bd:{}", s.buyer),
        buyer.declines,
        window_ms,
        false,
        Kind::Limit("buyer_declines"),
    );
    if let Some(c) = &s.card {
        let card = r.per_card;
        push(
            format!("ca:{c}"),
            card.attempts,
            window_ms,
            true,
            Kind::Limit("card_attempts"),
        );
        push(
            format!("cd:{c}"),
            card.declines,
            window_ms,
            false,
            Kind::Limit("card_declines"),
        );
    }
    if let Some(net) = &s.network {
        let n = r.per_network;
        push(
            format!("na:{net}"),
            n.attempts,
            window_ms,
            true,
            Kind::Limit("network_attempts"),
        );
        push(
            format!("nd:{net}"),
            n.declines,
            window_ms,
            false,
            Kind::Limit("network_declines"),
        );
    }
    (counters, kinds)
}

/// The counters a decline adds to: the decline limits' and the lockout's.
fn decline_counters(r: &VelocityRules, s: &Subjects) -> Vec<Counter> {
    let (counters, _) = attempt_counters(r, s);
    counters
        .into_iter()
        .filter(|c| !c.add)
        .map(|c| Counter { add: true, ..c })
        .collect()
}

fn refusal(kind: Kind, until: Millis, now: Millis) -> EngineError {
    match kind {
        Kind::Lockout => {
            metrics::counter!("boxoffice_velocity_refusals_total", "limit" => "lockout")
                .increment(1);
            EngineError::BuyerLocked
        }
        Kind::Limit(limit) => {
            metrics::counter!("boxoffice_velocity_refusals_total", "limit" => limit).increment(1);
            let wait_ms = u64::try_from(until.0.saturating_sub(now.0)).unwrap_or(0);
            EngineError::PaymentVelocity {
                retry_after_s: wait_ms.div_ceil(1000).max(1),
            }
        }
    }
}

fn threshold_of(r: &VelocityRules, dimension: Dimension) -> SignalThreshold {
    match dimension {
        Dimension::Device => r.signals.per_device,
        Dimension::Network => r.signals.per_network,
        Dimension::Card => r.signals.per_card,
    }
}

/// How many members a cluster must count for its thresholds; None: nothing to count.
fn cap_of(t: &SignalThreshold) -> Option<u32> {
    t.flag_at.max(t.refuse_at)
}

fn signal_limit(dimension: Dimension) -> &'static str {
    match dimension {
        Dimension::Device => "buyers_per_device",
        Dimension::Network => "buyers_per_network",
        Dimension::Card => "buyers_per_card",
    }
}
