//! How the fake provider behaves: its latency and how often it misbehaves on its own.
//! Read by the binary from its config file, so every field has a documented default.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use boxoffice_domain::Secret;
use serde::Deserialize;

/// Behaviour of a [`FakeGateway`](crate::FakeGateway). The defaults make a fast, honest
/// provider: no latency, no random declines, no random timeouts.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FakeGatewayConfig {
    /// Delay before every call answers, in milliseconds (default 0). Slept with
    /// `tokio::time::sleep`, so tests with paused time do not really wait.
    pub latency_ms: u64,
    /// Share (0.0–1.0) of otherwise-approved first authorizations that are declined with
    /// `card_declined` (default 0.0). For soaks.
    pub decline_rate: f64,
    /// Share (0.0–1.0) of otherwise-approved first authorizations that time out
    /// (default 0.0). Half of them time out after the charge was recorded, half before,
    /// because a real timeout does not say which happened and the engine must cope with
    /// both.
    pub timeout_rate: f64,
    /// Seed of the random draws behind the rates (default 0), so a soak that found
    /// a bug can be replayed.
    pub seed: u64,
    /// Share (0.0–1.0) of webhooks written to the outbox twice under the same event id,
    /// as a provider retrying a delivery it thinks failed (default 0.0).
    pub duplicate_webhook_rate: f64,
    /// The secret webhooks are signed with (default `whsec_fake_boxoffice`). Not a real
    /// secret: the fake exists for tests and rehearsals.
    pub webhook_secret: Secret,
    /// How old (or how far in the future) a webhook signature may be, in seconds, before
    /// it is refused as a replay (default 300, Stripe's own default).
    pub webhook_tolerance_s: u64,
    /// The first `n` captures after start fail as if the provider were down (default 0),
    /// to rehearse a capture outage: orders wait in `pending_capture` and the sweep
    /// retries them with backoff.
    pub capture_failures: u32,
    /// Where the fake POSTs its own webhooks (default none: they wait in the outbox for
    /// a test or a script). An http(s):// URL, or a path such as
    /// `/v1/payments/webhook` meaning the server that opened the fake.
    pub webhook_url: Option<String>,
    /// How often the outbox is read when nothing is waiting, in milliseconds (default 200).
    pub webhook_poll_ms: u64,
    /// The wait after a first failed delivery, in milliseconds, doubling with each
    /// further failure of that webhook (default 500).
    pub webhook_retry_min_ms: u64,
    /// The longest wait between two attempts at one webhook, in milliseconds (default
    /// 60,000).
    pub webhook_retry_max_ms: u64,
    /// How long one delivery may take before it counts as failed, in milliseconds
    /// (default 5,000).
    pub webhook_timeout_ms: u64,
}

impl Default for FakeGatewayConfig {
    fn default() -> Self {
        FakeGatewayConfig {
            latency_ms: 0,
            decline_rate: 0.0,
            timeout_rate: 0.0,
            seed: 0,
            duplicate_webhook_rate: 0.0,
            webhook_secret: "whsec_fake_boxoffice".into(),
            webhook_tolerance_s: 300,
            capture_failures: 0,
            webhook_url: None,
            webhook_poll_ms: 200,
            webhook_retry_min_ms: 500,
            webhook_retry_max_ms: 60_000,
            webhook_timeout_ms: 5_000,
        }
    }
}

/// A configuration the fake refuses to start with.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum ConfigError {
    #[error("{field} must be between 0.0 and 1.0, got {value}")]
    RateOutOfRange { field: &'static str, value: f64 },
    #[error("decline_rate + timeout_rate must not exceed 1.0, got {0}")]
    RatesTooHigh(f64),
    #[error("webhook_url must be an http(s):// URL or a path starting with /, got {0:?}")]
    BadWebhookUrl(String),
}

impl FakeGatewayConfig {
    pub fn latency(&self) -> Duration {
        Duration::from_millis(self.latency_ms)
    }

    /// Checks the rates once at startup rather than misbehaving oddly mid-soak.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (field, value) in [
            ("decline_rate", self.decline_rate),
            ("timeout_rate", self.timeout_rate),
            ("duplicate_webhook_rate", self.duplicate_webhook_rate),
        ] {
            // Written so that NaN fails too.
            if !(0.0..=1.0).contains(&value) {
                return Err(ConfigError::RateOutOfRange { field, value });
            }
        }
        let total = self.decline_rate + self.timeout_rate;
        if total > 1.0 {
            return Err(ConfigError::RatesTooHigh(total));
        }
        if let Some(url) = &self.webhook_url {
            let ok = ["http://", "https://", "/"]
                .iter()
                .any(|p| url.starts_with(p));
            if !ok {
                return Err(ConfigError::BadWebhookUrl(url.clone()));
            }
        }
        Ok(())
    }

    /// Where webhooks go, if anywhere: `webhook_url` with a bare path resolved against
    /// `own`, the address of the server that opened the fake (a wildcard address is
    /// reached on loopback).
    pub fn webhook_target(&self, own: SocketAddr) -> Option<String> {
        let url = self.webhook_url.as_deref()?;
        if !url.starts_with('/') {
            return Some(url.to_owned());
        }
        let host = match own.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        Some(format!("http://{}{url}", SocketAddr::new(host, own.port())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_outside_zero_to_one_are_refused() {
        let bad = FakeGatewayConfig {
            decline_rate: 1.5,
            ..Default::default()
        };
        assert!(bad.validate().is_err());
        let nan = FakeGatewayConfig {
            timeout_rate: f64::NAN,
            ..Default::default()
        };
        assert!(nan.validate().is_err());
        let sum = FakeGatewayConfig {
            decline_rate: 0.6,
            timeout_rate: 0.6,
            ..Default::default()
        };
        assert_eq!(sum.validate(), Err(ConfigError::RatesTooHigh(1.2)));
        assert!(FakeGatewayConfig::default().validate().is_ok());
    }

    #[test]
    fn a_webhook_path_is_resolved_against_the_server_that_opened_the_fake() {
        let at = |url: &str| FakeGatewayConfig {
            webhook_url: Some(url.into()),
            ..Default::default()
        };
        let own: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert_eq!(
            at("/v1/payments/webhook").webhook_target(own).as_deref(),
            Some("http://127.0.0.1:8080/v1/payments/webhook")
        );
        let remote = "https://shop.example/hook";
        assert_eq!(at(remote).webhook_target(own).as_deref(), Some(remote));
        assert_eq!(FakeGatewayConfig::default().webhook_target(own), None);
        assert!(at("ftp://x").validate().is_err());
    }
}
