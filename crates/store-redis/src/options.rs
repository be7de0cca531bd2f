//! Tuning knobs of the Redis stores, with the defaults the server uses. The struct
//! deserializes from the binary's config (`[redis]`, every field optional, durations
//! in milliseconds or seconds as named); [`ConnectConfig`] and [`RedisArbiterConfig`]
//! take their defaults from here.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::{ConnectConfig, RedisArbiterConfig};

/// `[redis]`: timeouts of the connection and limits of the arbiter.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedisOptions {
    /// How long opening a TCP (or TLS) connection may take. Default 2,000 ms.
    pub connect_timeout_ms: u64,
    /// How long a call waits for Redis's answer before it fails (the client then
    /// retries or answers 503). Default 2,000 ms: a Redis on the same network answers
    /// in well under a millisecond, and a longer wait only piles requests up.
    pub response_timeout_ms: u64,
    /// Finished holds kept per event so a buyer can still read what became of one
    /// (and unreported expiries kept for the sweep); the oldest are forgotten beyond
    /// this. Default 100,000.
    pub keep_finished_holds: usize,
    /// Seats loaded per script while an event is rebuilt from the ledger: small enough
    /// not to stall Redis, large enough to be few. Default 1,000, at most
    /// `MAX_LOAD_CHUNK`.
    pub load_chunk: usize,
    /// How long an unfinished rebuild's token lives, so a node that died while
    /// rebuilding blocks no other for longer. Default 600 s.
    pub load_ttl_s: u64,
    /// How long a node's claim to rebuild a lost event lives: while it does, the other
    /// nodes wait for that rebuild instead of starting their own; a node that died
    /// holding one delays the rebuild by at most this. Default 10 s.
    pub rebuild_claim_s: u64,
    /// Several `hot` URLs name one primary and its replicas, tried in order: a node
    /// writes only to the one that answers `ROLE` as the primary and looks for it again
    /// when it fails, so it follows a failover (Sentinel's or an operator's
    /// `REPLICAOF NO ONE`) by itself. Default false: several URLs name the nodes of a
    /// Redis Cluster.
    pub failover: bool,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            connect_timeout_ms: 2_000,
            response_timeout_ms: 2_000,
            keep_finished_holds: 100_000,
            load_chunk: 1_000,
            load_ttl_s: 600,
            rebuild_claim_s: 10,
            failover: false,
        }
    }
}

/// Most seats a load script takes: it hands Redis's Lua two values a seat in one call
/// (`unpack`), and Lua refuses a call of more than about 8,000.
pub const MAX_LOAD_CHUNK: usize = 2_000;

impl RedisOptions {
    /// Refuses settings the stores cannot work with, naming the setting.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=MAX_LOAD_CHUNK).contains(&self.load_chunk) {
            return Err(format!(
                "redis.load_chunk must be 1-{MAX_LOAD_CHUNK} (it is {}): a load script \
                 passes Redis's Lua two values a seat, and Lua refuses more than about 8,000",
                self.load_chunk
            ));
        }
        let zero = [
            ("connect_timeout_ms", self.connect_timeout_ms),
            ("response_timeout_ms", self.response_timeout_ms),
            ("load_ttl_s", self.load_ttl_s),
            ("rebuild_claim_s", self.rebuild_claim_s),
        ]
        .into_iter()
        .find(|(_, v)| *v == 0);
        if let Some((name, _)) = zero {
            return Err(format!("redis.{name} must be above 0"));
        }
        Ok(())
    }

    /// The connection settings, trusting `ca_file` for `rediss://` besides the
    /// system's store.
    pub fn connect(&self, ca_file: Option<PathBuf>) -> ConnectConfig {
        ConnectConfig {
            connect_timeout: Duration::from_millis(self.connect_timeout_ms),
            response_timeout: Duration::from_millis(self.response_timeout_ms),
            ca_file,
            failover: self.failover,
        }
    }

    pub fn arbiter(&self) -> RedisArbiterConfig {
        RedisArbiterConfig {
            keep_finished: self.keep_finished_holds,
            load_chunk: self.load_chunk,
            load_ttl: Duration::from_secs(self.load_ttl_s),
            rebuild_claim: Duration::from_secs(self.rebuild_claim_s),
        }
    }
}
