//! Redis backends for the cluster deployment (docs/ARCHITECTURE.md §4): the seat
//! arbiter (hot store), the waiting-room queue, the idempotency-key store and the
//! velocity counters, on a single Redis or a Redis Cluster.
//!
//! Every atomic operation is one Lua script (`src/lua/`) run with EVALSHA. All keys of
//! one event share a hash tag, so an event lives in one Cluster slot and a script can
//! touch all of them atomically. Idempotency records are spread over shards by a hash
//! of (scope, key), so no client text chooses a slot. Nothing here is the source of
//! truth: the engine rebuilds an event from the ledger with `load` when `is_loaded` says
//! it is gone (P5).

mod arbiter;
mod claimed;
mod conn;
mod failover;
mod hold_states;
mod idempotency;
mod keys;
mod options;
mod proofs;
mod queue;
mod reply;
mod scripts;
mod tls;
mod velocity;

pub use arbiter::{RedisArbiter, RedisArbiterConfig};
pub use claimed::{RedisClaimedHolds, RedisClaimedJoins};
pub use conn::{ConnectConfig, RedisConn};
pub use failover::FailoverConn;
pub use idempotency::{
    MAX_RECORDS as IDEMPOTENCY_MAX_RECORDS, RETENTION as IDEMPOTENCY_RETENTION, RedisIdempotency,
};
pub use keys::Prefix;
pub use options::RedisOptions;
pub use proofs::{MAX_PER_WINDOW as PROOF_MAX_PER_WINDOW, RedisProofs};
pub use queue::RedisQueue;
pub use scripts::{claimed_hold_script_source, hashes as script_hashes, hold_script_source};
pub use tls::install_ring_provider;
pub use velocity::RedisVelocity;
