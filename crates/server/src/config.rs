//! Typed configuration: defaults, then a TOML file, then `BOXOFFICE_*` environment
//! variables (nested keys with `__`, e.g. `BOXOFFICE_ENGINE__POLL_AFTER_MS`), then flags.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use boxoffice_domain::token::EdgeAlgorithm;
use boxoffice_engine::{BuyersConfig, EngineConfig};
use boxoffice_http::HttpConfig;
use boxoffice_oidc::OidcConfig;
use boxoffice_payment_fake::FakeGatewayConfig;
use boxoffice_payment_stripe::StripeConfig;
use boxoffice_store_postgres::PostgresOptions;
use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

use crate::replays::IdempotencyConfig;

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address to listen on; port 0 picks a free port. Default 127.0.0.1:8080.
    pub listen: SocketAddr,
    /// Where the ledger, the fake provider's book and the keys live. Default ./boxoffice-data.
    pub data_dir: PathBuf,
    /// The operator's bearer key. Default: generated on first start and kept in
    /// `<data_dir>/operator.key`.
    pub operator_key: Option<Secret>,
    /// The ledger: "sqlite" (a file in `data_dir`) or a postgres:// URL. Default "sqlite".
    pub ledger: String,
    /// The hot store and queue: "memory" (in-process) or redis:// URL(s), comma-separated
    /// for a Redis Cluster. Default "memory".
    pub hot: String,
    /// Prefix of every Redis key, so several deployments can share one Redis.
    /// Default "boxoffice".
    pub redis_prefix: String,
    /// A PEM file of CA certificates trusted for `rediss://` besides the system's
    /// store, for a Redis behind a private CA. Default none.
    pub redis_ca_file: Option<PathBuf>,
    pub postgres: PostgresOptions,
    pub engine: EngineConfig,
    pub sqlite: SqliteConfig,
    /// The payment provider: "stripe" (a Stripe-compatible API, settings in `stripe`)
    /// or "fake" (the stand-in with its own book in `data_dir`, which approves
    /// payments without taking money). No default: `serve` refuses to start
    /// without a choice, except `serve --demo`, which picks the fake.
    pub payments: Option<PaymentsChoice>,
    /// The stand-in payment provider's behaviour.
    pub fake_payments: FakeGatewayConfig,
    /// The Stripe-compatible provider: base URL, secret key, webhook secret, timeouts.
    pub stripe: StripeConfig,
    pub workers: WorkerConfig,
    /// Replays of retried writes: lease, retention, the hot store's cap, heartbeats.
    pub idempotency: IdempotencyConfig,
    /// Anonymous self sign-up (POST /v1/buyers): off unless set, or `serve --demo`.
    pub buyers: BuyersConfig,
    /// How queue tickets and admission tokens are signed.
    pub tokens: TokensConfig,
    /// Buyers signing in with an OpenID Connect provider's access tokens. Default none.
    pub oidc: Option<OidcConfig>,
    /// The HTTP edge: trusted proxies, timeouts, load shedding, stream caps, shutdown.
    pub http: HttpConfig,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TokensConfig {
    /// "hs256" (the shared key in `signing.key`; default) or "eddsa" (Ed25519 keys in
    /// `signing-ed25519.key`, public keys at /.well-known/jwks.json for edges).
    pub edge_algorithm: EdgeAlgorithm,
}

/// Which payment provider takes the money.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PaymentsChoice {
    /// The stand-in: approves payments without taking money, signs its webhooks
    /// with a published secret. For tests, rehearsals and the demo only.
    Fake,
    /// A Stripe-compatible provider.
    Stripe,
}

impl std::str::FromStr for PaymentsChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fake" => Ok(PaymentsChoice::Fake),
            "stripe" => Ok(PaymentsChoice::Stripe),
            other => Err(format!(
                "payments must be \"fake\" or \"stripe\", not {other:?}"
            )),
        }
    }
}

/// A value that is never printed.
#[derive(Clone, Deserialize, Serialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SqliteConfig {
    /// Share one transaction among concurrent commits. Default true.
    pub group_commit: bool,
    /// Most commits per transaction. Default 512.
    pub max_batch: usize,
    /// WAL reader connections. Default 4.
    pub read_connections: usize,
}

impl Default for SqliteConfig {
    fn default() -> Self {
        SqliteConfig {
            group_commit: true,
            max_batch: 512,
            read_connections: 4,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerConfig {
    /// How often expired holds are swept. Default 1000 ms.
    pub expiry_interval_ms: u64,
    /// How often unfinished orders are driven on. Default 5000 ms.
    pub recovery_interval_ms: u64,
    /// How often seats the ledger sold but the hot store still offers or holds are
    /// marked sold there (`boxoffice_drift_repairs_total` counts them). Default 30000 ms.
    pub drift_repair_interval_ms: u64,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            expiry_interval_ms: 1_000,
            recovery_interval_ms: 5_000,
            drift_repair_interval_ms: 30_000,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: "127.0.0.1:8080".parse().expect("a valid default address"),
            data_dir: PathBuf::from("./boxoffice-data"),
            operator_key: None,
            ledger: "sqlite".into(),
            hot: "memory".into(),
            redis_prefix: "boxoffice".into(),
            redis_ca_file: None,
            postgres: PostgresOptions::default(),
            engine: EngineConfig::default(),
            sqlite: SqliteConfig::default(),
            payments: None,
            fake_payments: FakeGatewayConfig::default(),
            stripe: StripeConfig::default(),
            workers: WorkerConfig::default(),
            buyers: BuyersConfig::default(),
            tokens: TokensConfig::default(),
            oidc: None,
            idempotency: IdempotencyConfig::default(),
            http: HttpConfig::default(),
        }
    }
}

/// Flags that override the file and the environment.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Overrides {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<SocketAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ledger: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hot: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payments: Option<PaymentsChoice>,
}

impl Config {
    /// `serve --demo` turns self sign-up on unless the operator said otherwise.
    pub fn for_demo(mut self, demo: bool) -> Config {
        self.buyers.self_signup.get_or_insert(demo);
        self
    }

    /// Embedded mode: the hot store and queue live in this process.
    pub fn embedded(&self) -> bool {
        self.hot == "memory"
    }

    pub fn load(file: Option<&Path>, overrides: &Overrides) -> Result<Config, Box<figment::Error>> {
        let mut fig = Figment::new();
        if let Some(f) = file {
            fig = fig.merge(Toml::file_exact(f));
        }
        fig.merge(
            Env::prefixed("BOXOFFICE_")
                .filter(|k| is_config_key(k.as_str()))
                .split("__"),
        )
        .merge(Serialized::defaults(overrides))
        .extract()
        .map_err(Box::new)
    }
}

/// Top-level keys, so other `BOXOFFICE_*` variables (the log filter, the config file
/// path, test settings) are not read as configuration.
const TOP_LEVEL: [&str; 19] = [
    "listen",
    "data_dir",
    "operator_key",
    "ledger",
    "hot",
    "redis_prefix",
    "redis_ca_file",
    "postgres",
    "engine",
    "sqlite",
    "payments",
    "fake_payments",
    "stripe",
    "workers",
    "buyers",
    "tokens",
    "oidc",
    "idempotency",
    "http",
];

fn is_config_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    TOP_LEVEL.iter().any(|t| {
        key == *t
            || key
                .strip_prefix(t)
                .is_some_and(|rest| rest.starts_with("__"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_override_the_file_and_defaults_fill_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("boxoffice.toml");
        std::fs::write(
            &file,
            "listen = \"127.0.0.1:9000\"\n[engine]\npoll_after_ms = 1234\n",
        )
        .unwrap();
        let flags = Overrides {
            data_dir: Some("/tmp/x".into()),
            ..Default::default()
        };
        let c = Config::load(Some(&file), &flags).unwrap();
        assert_eq!(c.listen.port(), 9000);
        assert_eq!(c.engine.poll_after_ms, 1234);
        assert_eq!(c.data_dir, PathBuf::from("/tmp/x"));
        assert!(c.sqlite.group_commit);
    }

    #[test]
    fn only_configuration_variables_are_read_from_the_environment() {
        assert!(
            is_config_key("ENGINE__POLL_AFTER_MS")
                && is_config_key("operator_key")
                && is_config_key("LEDGER")
        );
        assert!(
            !is_config_key("LOG")
                && !is_config_key("CONFIG")
                && !is_config_key("TEST_POSTGRES_URL")
                && !is_config_key("ledgerx")
        );
    }

    #[test]
    fn the_payment_provider_has_no_default_and_names_only_the_two_providers() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("boxoffice.toml");
        std::fs::write(&file, "").unwrap();
        let none = Config::load(Some(&file), &Overrides::default()).unwrap();
        assert_eq!(none.payments, None);
        std::fs::write(&file, "payments = \"fake\"\n").unwrap();
        let fake = Config::load(Some(&file), &Overrides::default()).unwrap();
        assert_eq!(fake.payments, Some(PaymentsChoice::Fake));
        std::fs::write(&file, "payments = \"paypal\"\n").unwrap();
        assert!(Config::load(Some(&file), &Overrides::default()).is_err());
    }

    #[test]
    fn trusted_proxies_are_read_as_cidrs_and_a_bad_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("boxoffice.toml");
        let text = "[http]\ntrusted_proxies = [\"10.0.0.0/8\", \"2001:db8::/32\"]\n";
        std::fs::write(&file, text).unwrap();
        let c = Config::load(Some(&file), &Overrides::default()).unwrap();
        assert_eq!(c.http.trusted_proxies.len(), 2);
        assert_eq!(
            c.http.max_streams, 10_000,
            "the other keys keep their defaults"
        );
        std::fs::write(&file, "[http]\ntrusted_proxies = [\"10.0.0.0/33\"]\n").unwrap();
        assert!(Config::load(Some(&file), &Overrides::default()).is_err());
    }

    #[test]
    fn an_unknown_key_is_an_error_not_a_silent_default() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("boxoffice.toml");
        std::fs::write(&file, "lisen = \"127.0.0.1:9000\"\n").unwrap();
        assert!(Config::load(Some(&file), &Overrides::default()).is_err());
    }
}
