//! Tuning knobs of the PostgreSQL ledger, with the defaults the server uses. The struct
//! deserializes from the binary's config (every field optional, durations in
//! milliseconds) so operators set it next to the database URL.

use std::time::Duration;

use serde::Deserialize;

/// How the ledger uses its database.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PostgresOptions {
    /// Connections for reads, and for writes when group commit is off. The writer's
    /// own connection comes on top. Default 8: a node rarely needs more, and many nodes
    /// share the server's `max_connections`.
    pub pool_size: u32,
    /// How long opening one connection may take before the store is called
    /// unavailable. Default 5,000 ms.
    pub connect_timeout_ms: u64,
    /// How long a request may wait for a free pooled connection. Default 5,000 ms.
    pub acquire_timeout_ms: u64,
    /// Server-side `statement_timeout` set on every connection, so a stuck statement
    /// (a lock held by a wedged node) fails instead of hanging a sale. 0 leaves the
    /// server's or role's setting alone, as a transaction-mode pooler needs. Default
    /// 10,000 ms.
    pub statement_timeout_ms: u64,
    /// Share one transaction (one WAL flush, one COMMIT) among every write queued at
    /// the same time. Off runs each write in its own transaction on the pool: only for
    /// comparison. Default on.
    pub group_commit: bool,
    /// Writer connections, each running its own batches: while one waits for its
    /// COMMIT, the next gathers what queued meanwhile, so the server works on two
    /// batches at once. Default 2 (about 1.5× one writer in `benches/commit.rs`). The
    /// price: a write may wait for another batch's COMMIT on a shared row; one that
    /// waits too long or deadlocks (e.g. two batches each waiting for the other) is
    /// undone and runs again in the writer's next batch.
    pub writers: usize,
    /// Most writes one transaction may carry. Default 64: each write is a savepoint
    /// with its own subtransaction id, and PostgreSQL caches 64 of them per backend;
    /// beyond that every other session's snapshot pays for `pg_subtrans` lookups.
    pub max_batch: usize,
    /// Writes that may wait for the writer before callers are slowed down. Default 8,192.
    pub queue_capacity: usize,
    /// Prepared statements kept per connection. 0 turns statement caching off, which a
    /// transaction-mode PgBouncer older than 1.21 needs. Default 100.
    pub statement_cache_capacity: usize,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            pool_size: 8,
            connect_timeout_ms: 5_000,
            acquire_timeout_ms: 5_000,
            statement_timeout_ms: 10_000,
            group_commit: true,
            writers: 2,
            max_batch: 64,
            queue_capacity: 8_192,
            statement_cache_capacity: 100,
        }
    }
}

impl PostgresOptions {
    pub(crate) fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }

    pub(crate) fn acquire_timeout(&self) -> Duration {
        Duration::from_millis(self.acquire_timeout_ms)
    }
}
