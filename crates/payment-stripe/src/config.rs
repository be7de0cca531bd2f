//! Settings of the Stripe adapter. Defaults fit a local stand-in, not production: the
//! secret key and webhook secret must be set for real use.

use std::path::PathBuf;

use boxoffice_domain::Secret;
use serde::Deserialize;

/// Settings of the Stripe adapter.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StripeConfig {
    /// API base URL (default `https://api.stripe.com`).
    pub base_url: String,
    /// Secret API key, sent as a bearer token.
    pub secret_key: Secret,
    /// Webhook signing secret (`whsec_…`).
    pub webhook_secret: Secret,
    /// Oldest accepted webhook signature, in seconds (default 300, as Stripe's SDKs).
    pub webhook_tolerance_s: u64,
    /// Per-call timeout in milliseconds (default 10,000). A timeout is reported as
    /// `PaymentError::Timeout`: the engine then asks rather than assumes.
    pub timeout_ms: u64,
    /// A PEM file of CA certificates trusted besides the system's store, for a
    /// provider (or an egress proxy) behind a private CA. Default none.
    pub ca_file: Option<PathBuf>,
    /// How long Stripe's search may take to list a new PaymentIntent, in seconds
    /// (default 300). Search is eventually consistent (Stripe: usually under a minute),
    /// so an order with no provider reference that the search misses is reported as
    /// not known yet, and asked about again, until it is this old.
    pub search_settle_s: u64,
}

impl Default for StripeConfig {
    fn default() -> Self {
        StripeConfig {
            base_url: "https://api.stripe.com".into(),
            secret_key: Secret::default(),
            webhook_secret: Secret::default(),
            webhook_tolerance_s: 300,
            timeout_ms: 10_000,
            ca_file: None,
            search_settle_s: 300,
        }
    }
}
