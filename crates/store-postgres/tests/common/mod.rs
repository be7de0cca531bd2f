//! The ledger on a throw-away database of the machine's PostgreSQL, shared by the tests
//! that run at the same time and dropped when the last ledger using it is dropped
//! (`boxoffice_testkit::harness::postgres`), with pools sized for tests. PostgreSQL is
//! required: if it cannot be reached the test fails, saying how to fix it.

#![allow(dead_code)] // each test binary uses a different part

pub mod pgbouncer;
pub mod tls_cluster;

use boxoffice_store_postgres::{PostgresLedger, PostgresOptions};

#[allow(unused_imports)] // each test binary uses a different part
pub use boxoffice_testkit::harness::postgres::{TestDatabase, shared_database};

/// Small pools: many tests run at once on a 2-core machine.
/// `BOXOFFICE_TEST_POSTGRES_STATEMENT_CACHE=0` runs the suites as a transaction-mode
/// PgBouncer needs them (see the README).
pub fn test_options(group_commit: bool) -> PostgresOptions {
    let defaults = PostgresOptions::default();
    let statement_cache_capacity = std::env::var("BOXOFFICE_TEST_POSTGRES_STATEMENT_CACHE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(defaults.statement_cache_capacity);
    PostgresOptions {
        pool_size: 2,
        connect_timeout_ms: 5_000,
        // The race suites queue 2,000 commits at once on these two connections; on a
        // loaded machine the last waits longer than the production default of 5 s, and
        // a refusal there would test the pool, not the ledger.
        acquire_timeout_ms: 60_000,
        group_commit,
        statement_cache_capacity,
        ..defaults
    }
}

/// A ledger on the shared test database, keeping it alive.
pub async fn ledger(group_commit: bool) -> PostgresLedger {
    let db = shared_database();
    let ledger = PostgresLedger::connect(&db.url, test_options(group_commit))
        .await
        .unwrap_or_else(|e| panic!("could not open a ledger on {}: {e}", db.url));
    ledger.keep_alive(db);
    ledger
}
