//! The server's tests in cluster mode: several `boxoffice` processes sharing a fresh
//! PostgreSQL database (the ledger) and a Redis key prefix (the hot store), with faults
//! injected between them. PostgreSQL and Redis are required; these tests never skip.

#[path = "../common/mod.rs"]
mod common;

mod checkout_retry;
mod failover;
mod faults;
mod line_restart;
mod lost_event;
mod nodes;
mod operator_mistakes;
mod order_events;
mod possession;
mod round_trips;
mod sweeps;
mod waiting;
mod webhooks;

use std::path::PathBuf;

use boxoffice_testkit::harness::path_str;
use boxoffice_testkit::harness::postgres::TestDatabase;
use boxoffice_testkit::harness::redis::{RedisPrefix, redis_url};

/// What the nodes of one cluster share: a data directory holding their config file, a
/// fresh PostgreSQL database (the ledger) and a Redis key prefix (the hot store). All
/// three go away with it.
pub struct Backing {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    pub db: TestDatabase,
    pub redis: RedisPrefix,
}

impl Backing {
    /// On the machine's Redis; the config names `operator`'s key, the stand-in provider,
    /// the prefix, then `extra` (TOML, tables allowed).
    pub fn new(operator: &str, extra: &str) -> Backing {
        Backing::on(&redis_url(), operator, extra)
    }

    /// As [`Backing::new`], on the Redis at `redis`.
    pub fn on(redis: &str, operator: &str, extra: &str) -> Backing {
        let dir = tempfile::tempdir().expect("a temp directory");
        let db = TestDatabase::create();
        let redis = RedisPrefix::new(redis);
        let config = dir.path().join("boxoffice.toml");
        let toml = format!(
            "operator_key = \"{operator}\"\npayments = \"fake\"\nredis_prefix = \"{}\"\n{extra}",
            redis.prefix
        );
        std::fs::write(&config, toml).expect("the config file is written");
        Backing {
            dir,
            config,
            db,
            redis,
        }
    }

    /// The arguments that put a `boxoffice` subcommand on this backing.
    pub fn args(&self) -> Vec<String> {
        let args = [
            "--data-dir",
            path_str(self.dir.path()),
            "--config",
            path_str(&self.config),
            "--ledger",
            &self.db.url,
            "--hot",
            &self.redis.url,
        ];
        args.map(String::from).to_vec()
    }
}

/// `args` as a command line takes them.
pub fn argv(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}
