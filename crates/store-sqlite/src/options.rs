//! Tuning knobs of the SQLite ledger, with the defaults the server uses. The struct
//! deserializes from the binary's config (`[sqlite]`, every field optional, durations
//! in milliseconds).

use std::time::Duration;

use serde::Deserialize;

/// How the ledger uses its database file.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SqliteOptions {
    /// Share one transaction (and so one fsync) among every write queued at the same
    /// time. Off runs each write in its own transaction: only for comparison. Default on.
    pub group_commit: bool,
    /// Most writes one transaction may carry, so one huge batch cannot delay its first
    /// caller without bound. Default 512.
    pub max_batch: usize,
    /// Reader connections (WAL readers never block the writer). Default 4.
    pub read_connections: usize,
    /// How long a connection waits for a lock held by another process (e.g. a
    /// `boxoffice migrate` running beside the server). Default 5,000 ms.
    pub busy_timeout_ms: u64,
    /// Writes that may wait for the writer before callers are slowed down. Default 8,192.
    pub queue_capacity: usize,
    /// Frames in the write-ahead log at which the writer, between two batches, copies
    /// the rest of the log into the database and starts the log again from its first
    /// frame (see `checkpoint`). Default 4,096 (16 MiB of 4 KiB pages).
    pub wal_restart_frames: u64,
    /// How far ahead of the server's other threads the kernel runs the writer when both
    /// are ready to run, in nice steps below the process's own (Linux; 0 leaves it at the
    /// process's priority). The writer is the one serial step of every sale: on a busy
    /// machine a writer waiting for a CPU behind request threads holds up every commit.
    /// Raising a thread needs CAP_SYS_NICE (root) or an RLIMIT_NICE that allows it;
    /// without, the writer runs at the process's priority and the server says so once.
    /// Default 0: on the 2-core stadium rehearsal a writer ten steps ahead waited less
    /// for a CPU but the sale went slower (docs/BENCHMARKS.md).
    pub writer_priority: i32,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            group_commit: true,
            max_batch: 512,
            read_connections: 4,
            busy_timeout_ms: 5_000,
            queue_capacity: 8_192,
            wal_restart_frames: 4_096,
            writer_priority: 0,
        }
    }
}

impl SqliteOptions {
    pub fn busy_timeout(&self) -> Duration {
        Duration::from_millis(self.busy_timeout_ms)
    }
}
