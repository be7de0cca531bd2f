//! Waiting-room settings of the engine (`[engine.waiting]`), every one with a default.

use boxoffice_domain::admission::{Limit, Thresholds};
use serde::Deserialize;

use super::settings::WaitingRules;

#[derive(Clone, Debug, Deserialize)]
#[serde(default)]
pub struct WaitingConfig {
    /// Rules for events that have none of their own (PUT /v1/events/{id}/waiting-room).
    pub rules: WaitingRules,
    /// Joins and challenges per client address. Generous: carrier NAT puts many
    /// people behind one address; this stops floods, not people. `per_s = 0` disables.
    pub join_per_ip: Limit,
    /// Joins and challenges per buyer.
    pub join_per_buyer: Limit,
    /// Status polls per buyer (the hint is one every ~3 s).
    pub status_per_buyer: Limit,
    /// Hold attempts per buyer, won or lost. A person picking seats tries a few in a
    /// row and then pays; a script hammering the hot store gets 429 with Retry-After.
    pub hold_per_buyer: Limit,
    /// Transfer writes per buyer (offers, accepts, withdrawals), each a ledger
    /// transaction; beyond it 429 with Retry-After.
    pub transfer_per_buyer: Limit,
    /// How long a proof-of-work challenge may be solved.
    pub challenge_ttl_s: u64,
    /// How long a used hosted human check is remembered (refused to any other buyer):
    /// longer than any provider keeps its tokens valid (Turnstile 300 s).
    pub human_check_remember_s: u64,
    /// How long a node serves the pre-serialized public document before rebuilding it,
    /// and its copy of an event's waiting-room settings (the rules joins are checked
    /// against) before reading them again: a change made on another node reaches this
    /// node's checks within this time.
    pub public_doc_ttl_ms: u64,
    /// Holds must carry the buyer's session token (`X-Buyer-Session`) whose session
    /// matches the admission token's. Off by default so plain API clients keep working;
    /// turn on for a real on-sale.
    pub require_session_on_hold: bool,
    /// Thresholds of the adaptive admission mode.
    pub thresholds: Thresholds,
    /// Health samples older than this are ignored.
    pub health_window_ms: u64,
}

impl Default for WaitingConfig {
    fn default() -> Self {
        WaitingConfig {
            rules: WaitingRules::default(),
            join_per_ip: Limit {
                per_s: 200,
                burst: 5_000,
            },
            join_per_buyer: Limit { per_s: 1, burst: 5 },
            status_per_buyer: Limit {
                per_s: 2,
                burst: 10,
            },
            hold_per_buyer: Limit {
                per_s: 1,
                burst: 10,
            },
            transfer_per_buyer: Limit {
                per_s: 1,
                burst: 10,
            },
            challenge_ttl_s: 300,
            human_check_remember_s: 900,
            public_doc_ttl_ms: 500,
            require_session_on_hold: false,
            thresholds: Thresholds::default(),
            health_window_ms: 30_000,
        }
    }
}
