//! Typed configuration: defaults, then a TOML file, then `BOXOFFICE_*` environment
//! variables (nested keys with `__`, e.g. `BOXOFFICE_ENGINE__POLL_AFTER_MS`), then flags.
//! Every default is written once, in the doc comment and `Default` of its struct; the
//! README's configuration reference lists them.

mod choices;
mod workers;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use boxoffice_domain::Secret;
use boxoffice_domain::token::EdgeAlgorithm;
use boxoffice_engine::relay::RelayConfig;
use boxoffice_engine::{BuyersConfig, EngineConfig};
use boxoffice_http::HttpConfig;
use boxoffice_oidc::OidcConfig;
use boxoffice_payment_fake::FakeGatewayConfig;
use boxoffice_payment_stripe::StripeConfig;
use boxoffice_sinks::NatsConfig;
use boxoffice_store_postgres::PostgresOptions;
use boxoffice_store_redis::RedisOptions;
use boxoffice_store_sqlite::SqliteOptions;
use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

pub use choices::{HotChoice, LedgerChoice, LogFormat, PaymentsChoice, redact_urls};
pub use workers::WorkerConfig;

use crate::human_check::HumanCheckConfig;
use crate::replays::IdempotencyConfig;

/// The shortest operator key accepted: a key anyone may guess opens every operator
/// call.
pub const MIN_OPERATOR_KEY_LEN: usize = 16;

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address to listen on; port 0 picks a free port. Default 127.0.0.1:8080.
    pub listen: SocketAddr,
    /// Where the ledger, the fake provider's book and the keys live. Default ./boxoffice-data.
    pub data_dir: PathBuf,
    /// The operator's bearer key, at least [`MIN_OPERATOR_KEY_LEN`] characters.
    /// Default: generated on first start and kept in `<data_dir>/operator.key`.
    pub operator_key: Option<Secret>,
    /// The ledger: "sqlite" (a file in `data_dir`) or a postgres:// URL. Default "sqlite".
    pub ledger: LedgerChoice,
    /// The hot store and queue: "memory" (in-process) or redis:// URL(s), comma-separated
    /// for a Redis Cluster. Default "memory".
    pub hot: HotChoice,
    /// Prefix of every Redis key, so several deployments can share one Redis.
    /// Default "boxoffice".
    pub redis_prefix: String,
    /// A PEM file of CA certificates trusted for `rediss://` besides the system's
    /// store, for a Redis behind a private CA. Default none.
    pub redis_ca_file: Option<PathBuf>,
    /// The Redis connection's timeouts and the Redis arbiter's limits.
    pub redis: RedisOptions,
    pub postgres: PostgresOptions,
    pub engine: EngineConfig,
    pub sqlite: SqliteOptions,
    /// The payment provider: "stripe" (a Stripe-compatible API, settings in `stripe`)
    /// or "fake" (the stand-in with its own book in `data_dir`, which approves
    /// payments without taking money). No default: `serve` refuses to start
    /// without a choice, except `serve --demo`, which picks the fake.
    pub payments: Option<PaymentsChoice>,
    /// The stand-in payment provider's behaviour.
    pub fake_payments: FakeGatewayConfig,
    /// The Stripe-compatible provider: base URL, secret key, webhook secret, timeouts.
    pub stripe: StripeConfig,
    /// How often each background worker runs.
    pub workers: WorkerConfig,
    /// Replays of retried writes: lease, retention, the hot store's cap, dead nodes.
    pub idempotency: IdempotencyConfig,
    /// Anonymous self sign-up (POST /v1/buyers): off unless set, or `serve --demo`.
    pub buyers: BuyersConfig,
    /// How queue tickets and admission tokens are signed.
    pub tokens: TokensConfig,
    /// Buyers signing in with an OpenID Connect provider's access tokens. Default none.
    pub oidc: Option<OidcConfig>,
    /// The HTTP edge: trusted proxies, timeouts, load shedding, stream caps, shutdown.
    pub http: HttpConfig,
    /// "text" (default) or "json": one JSON object per log line, with the fields of
    /// the event and of every span it is in.
    pub log_format: LogFormat,
    /// Traces exported to an OpenTelemetry collector (builds with `--features otel`).
    pub otel: OtelConfig,
    /// How order events are delivered to webhook endpoints and NATS: batches, leases,
    /// retries, dead letters.
    pub relay: RelayConfig,
    /// NATS JetStream as a sink of order events. Default none.
    pub nats: Option<NatsConfig>,
    /// Hosted human-check verifiers (Turnstile, hCaptcha, reCAPTCHA): site keys,
    /// secrets, siteverify URLs, the timeout. Default none.
    pub human_check: HumanCheckConfig,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TokensConfig {
    /// "hs256" (the shared key in `signing.key`; default) or "eddsa" (Ed25519 keys in
    /// `signing-ed25519.key`, public keys at /.well-known/jwks.json for edges).
    pub edge_algorithm: EdgeAlgorithm,
}

/// `[otel]`: where spans go besides the logs.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OtelConfig {
    /// The collector's OTLP/HTTP traces endpoint, e.g.
    /// `http://127.0.0.1:4318/v1/traces`. Default none: nothing is exported. Only a
    /// binary built with `--features otel` can export; another refuses to start with
    /// this set.
    pub endpoint: Option<String>,
    /// The `service.name` of the exported spans. Default "boxoffice".
    pub service_name: String,
}

impl Default for OtelConfig {
    fn default() -> Self {
        OtelConfig {
            endpoint: None,
            service_name: "boxoffice".into(),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: "127.0.0.1:8080".parse().expect("a valid default address"),
            data_dir: PathBuf::from("./boxoffice-data"),
            operator_key: None,
            ledger: LedgerChoice::Sqlite,
            hot: HotChoice::Memory,
            redis_prefix: "boxoffice".into(),
            redis_ca_file: None,
            redis: RedisOptions::default(),
            postgres: PostgresOptions::default(),
            engine: EngineConfig::default(),
            sqlite: SqliteOptions::default(),
            payments: None,
            fake_payments: FakeGatewayConfig::default(),
            stripe: StripeConfig::default(),
            workers: WorkerConfig::default(),
            buyers: BuyersConfig::default(),
            tokens: TokensConfig::default(),
            oidc: None,
            idempotency: IdempotencyConfig::default(),
            http: HttpConfig::default(),
            log_format: LogFormat::default(),
            otel: OtelConfig::default(),
            relay: RelayConfig::default(),
            nats: None,
            human_check: HumanCheckConfig::default(),
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
    pub ledger: Option<LedgerChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hot: Option<HotChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payments: Option<PaymentsChoice>,
}

impl Config {
    /// The engine's settings, with what it learns of the ledger's: the longest a
    /// PostgreSQL statement may run (`postgres.statement_timeout_ms`).
    pub fn engine_config(&self) -> EngineConfig {
        let timeout_ms = match self.ledger {
            LedgerChoice::Postgres(_) => self.postgres.statement_timeout_ms,
            LedgerChoice::Sqlite => 0,
        };
        EngineConfig {
            ledger_statement_timeout_ms: timeout_ms,
            ..self.engine.clone()
        }
    }

    /// `serve --demo` turns self sign-up on unless the operator said otherwise.
    pub fn for_demo(mut self, demo: bool) -> Config {
        self.buyers.self_signup.get_or_insert(demo);
        // The stand-in provider reports to this server, so a payment the buyer confirms
        // on its page (3-D Secure, bank redirect) settles at once.
        if demo && self.fake_payments.webhook_url.is_none() {
            self.fake_payments.webhook_url = Some("/v1/payments/webhook".into());
        }
        self
    }

    /// Embedded mode: the hot store and queue live in this process.
    pub fn embedded(&self) -> bool {
        self.hot == HotChoice::Memory
    }

    /// Whether this process is the only one on its ledger, so whatever the ledger says
    /// is in flight is an earlier incarnation's: an embedded node whose ledger is the
    /// SQLite file of its locked data directory. A PostgreSQL ledger may have another
    /// process on it even beside an in-process hot store (the next process of a
    /// rolling deploy, with a data directory of its own).
    pub fn sole_on_its_ledger(&self) -> bool {
        self.embedded() && self.ledger == LedgerChoice::Sqlite
    }

    /// Reads the layers and checks the result (see [`Config::check`]).
    pub fn load(file: Option<&Path>, overrides: &Overrides) -> anyhow::Result<Config> {
        let mut fig = Figment::new();
        if let Some(f) = file {
            fig = fig.merge(Toml::file_exact(f));
        }
        let config: Config = fig
            .merge(
                Env::prefixed("BOXOFFICE_")
                    .filter(|k| is_config_key(k.as_str()))
                    .split("__"),
            )
            .merge(Serialized::defaults(overrides))
            .extract()?;
        config.check()?;
        Ok(config)
    }

    /// Refuses settings the node cannot work with, naming the key and the rule.
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(key) = &self.operator_key {
            anyhow::ensure!(
                key.len() >= MIN_OPERATOR_KEY_LEN,
                "operator_key must be at least {MIN_OPERATOR_KEY_LEN} characters (it has {}); \
                 set a longer one, or leave it unset and a random key is generated into \
                 {}",
                key.len(),
                self.data_dir.join("operator.key").display()
            );
        }
        self.workers.check()?;
        self.idempotency.check()?;
        anyhow::ensure!(
            self.idempotency.node_dead_after_ms
                >= 2 * i64::try_from(self.workers.heartbeat_interval_ms).unwrap_or(i64::MAX / 2),
            "idempotency.node_dead_after_ms ({}) must be at least twice \
             workers.heartbeat_interval_ms ({})",
            self.idempotency.node_dead_after_ms,
            self.workers.heartbeat_interval_ms
        );
        self.relay.validate().map_err(anyhow::Error::msg)?;
        self.redis.validate().map_err(anyhow::Error::msg)?;
        self.human_check.check()?;
        if let Some(nats) = &self.nats {
            nats.validate().map_err(anyhow::Error::msg)?;
            (self.relay)
                .lease_outlasts_a_step(nats.ack_timeout_ms, "nats.ack_timeout_ms")
                .map_err(anyhow::Error::msg)?;
        }
        self.http.validate().map_err(anyhow::Error::msg)
    }
}

/// Top-level keys, so other `BOXOFFICE_*` variables (the log filter, the config file
/// path, test settings) are not read as configuration.
const TOP_LEVEL: [&str; 25] = [
    "listen",
    "data_dir",
    "operator_key",
    "ledger",
    "hot",
    "redis_prefix",
    "redis_ca_file",
    "redis",
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
    "log_format",
    "otel",
    "relay",
    "nats",
    "human_check",
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
mod tests;
