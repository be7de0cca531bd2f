//! Settings of the Stripe adapter. Defaults fit a local stand-in, not production: the
//! secret key and webhook secret must be set for real use.

use std::path::PathBuf;

use serde::Deserialize;

/// Settings of the Stripe adapter.
#[derive(Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StripeConfig {
    /// API base URL (default `https://api.stripe.com`).
    pub base_url: String,
    /// Secret API key, sent as a bearer token.
    pub secret_key: String,
    /// Webhook signing secret (`whsec_…`).
    pub webhook_secret: String,
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
            secret_key: String::new(),
            webhook_secret: String::new(),
            webhook_tolerance_s: 300,
            timeout_ms: 10_000,
            ca_file: None,
            search_settle_s: 300,
        }
    }
}

/// Secrets stay out of logs and error reports.
impl std::fmt::Debug for StripeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hidden = |s: &str| if s.is_empty() { "" } else { "***" };
        f.debug_struct("StripeConfig")
            .field("base_url", &self.base_url)
            .field("secret_key", &hidden(&self.secret_key))
            .field("webhook_secret", &hidden(&self.webhook_secret))
            .field("webhook_tolerance_s", &self.webhook_tolerance_s)
            .field("timeout_ms", &self.timeout_ms)
            .field("ca_file", &self.ca_file)
            .field("search_settle_s", &self.search_settle_s)
            .finish()
    }
}
