//! A throw-away database on the machine's PostgreSQL for each group of tests that run
//! at the same time: created with a random name through the maintenance database and
//! dropped when the last ledger using it is dropped. PostgreSQL is required: if it
//! cannot be reached the test fails, saying how to fix it (never a silent skip).

#![allow(dead_code)] // each test binary uses a different part

pub mod tls_cluster;

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use boxoffice_store_postgres::{PostgresLedger, PostgresOptions};
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, Executor};

const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The maintenance database URL: `BOXOFFICE_TEST_POSTGRES_URL` or the local default.
pub fn admin_url() -> String {
    std::env::var("BOXOFFICE_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_URL.to_string())
}

/// Drops its database when the last holder lets go.
pub struct TestDatabase {
    pub name: String,
    pub url: String,
}

impl TestDatabase {
    /// Creates a database named with a random suffix.
    pub fn create() -> TestDatabase {
        let name = format!("boxoffice_test_{}", uuid::Uuid::new_v4().simple());
        let admin = admin_url();
        // DDL on a thread of its own: callers may be inside a runtime already.
        let sql = format!("CREATE DATABASE {name}");
        on_own_runtime(move || admin_exec(admin, sql));
        let url = with_database(&admin_url(), &name);
        TestDatabase { name, url }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        // FORCE ends the connections that pools are still closing.
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        let admin = admin_url();
        on_own_runtime(move || admin_exec(admin, sql));
    }
}

fn on_own_runtime(
    work: impl FnOnce() -> std::pin::Pin<Box<dyn Future<Output = ()>>> + Send + 'static,
) {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for test database DDL");
        runtime.block_on(work());
    })
    .join()
    .expect("test database DDL (see the message above)");
}

fn admin_exec(admin: String, sql: String) -> std::pin::Pin<Box<dyn Future<Output = ()>>> {
    Box::pin(async move {
        let options: PgConnectOptions = admin
            .parse()
            .unwrap_or_else(|e| panic!("BOXOFFICE_TEST_POSTGRES_URL {admin:?} is not a URL: {e}"));
        let connect = tokio::time::timeout(Duration::from_secs(5), options.connect()).await;
        let mut conn = match connect {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => panic!("{}", unreachable_message(&admin, &e.to_string())),
            Err(_) => panic!("{}", unreachable_message(&admin, "timed out after 5 s")),
        };
        conn.execute(sqlx::AssertSqlSafe(sql.clone()))
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let _ = conn.close().await;
    })
}

fn unreachable_message(url: &str, why: &str) -> String {
    format!(
        "PostgreSQL is required for these tests and is unreachable at {url}: {why}. \
         Start it (e.g. `service postgresql start`) or point BOXOFFICE_TEST_POSTGRES_URL \
         at a server where this user may CREATE DATABASE."
    )
}

/// `url` with its database replaced by `name` (query parameters kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (url, String::new()),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[authority_start..]
        .find('/')
        .map_or(base.len(), |i| authority_start + i);
    format!("{}/{name}{query}", &base[..host_end])
}

/// The database shared by the tests running right now; a new one once all are done.
static SHARED: Mutex<Weak<TestDatabase>> = Mutex::new(Weak::new());

pub fn shared_database() -> Arc<TestDatabase> {
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(db) = shared.upgrade() {
        return db;
    }
    let db = Arc::new(TestDatabase::create());
    *shared = Arc::downgrade(&db);
    db
}

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
