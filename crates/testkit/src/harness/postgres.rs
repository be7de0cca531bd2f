//! Throw-away databases on the machine's PostgreSQL: created with a random name through
//! the maintenance database and dropped (with their connections) when the test is done.
//! `BOXOFFICE_TEST_POSTGRES_URL` names the maintenance database; it defaults to the
//! local server's `postgres` database as user `postgres`.

use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, Executor, Row};

const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The maintenance database URL: `BOXOFFICE_TEST_POSTGRES_URL` or the local default.
pub fn admin_url() -> String {
    std::env::var("BOXOFFICE_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_URL.to_string())
}

/// A database of the test's own, dropped when this is.
pub struct TestDatabase {
    pub name: String,
    pub url: String,
}

impl TestDatabase {
    /// Creates a database named with a random suffix.
    pub fn create() -> TestDatabase {
        let name = format!("boxoffice_test_{}", uuid::Uuid::new_v4().simple());
        admin(format!("CREATE DATABASE {name}"));
        let url = with_database(&admin_url(), &name);
        TestDatabase { name, url }
    }

    /// Ends every connection to this database (a failover, a pooler restart); returns
    /// the server processes that were told to end.
    pub fn terminate_connections(&self) -> Vec<u32> {
        // The victims are chosen in a materialized CTE first: in one WHERE, PostgreSQL
        // may call pg_terminate_backend before the other conditions, on every backend.
        admin(format!(
            "WITH victims AS MATERIALIZED (SELECT pid FROM pg_stat_activity \
             WHERE datname = '{}' AND pid <> pg_backend_pid()) \
             SELECT pid FROM victims WHERE pg_terminate_backend(pid)",
            self.name
        ))
    }

    /// Runs `sql` on this database (not the maintenance one); the first column of its
    /// rows as text (cast it in the query), for tests that look into the ledger.
    pub fn texts(&self, sql: &str) -> Vec<String> {
        let (url, sql) = (self.url.clone(), sql.to_string());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for a test database query");
            runtime.block_on(async move {
                let options: PgConnectOptions = url.parse().expect("the test database URL");
                let mut conn = options.connect().await.expect("the test database answers");
                let rows = conn
                    .fetch_all(sqlx::AssertSqlSafe(sql.clone()))
                    .await
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
                let _ = conn.close().await;
                rows.iter()
                    .map(|r| {
                        r.try_get::<String, _>(0)
                            .unwrap_or_else(|e| panic!("{sql}: {e}"))
                    })
                    .collect()
            })
        })
        .join()
        .expect("a test database query (see the message above)")
    }

    /// The server processes connected to this database now.
    pub fn connections(&self) -> Vec<u32> {
        admin(format!(
            "SELECT pid FROM pg_stat_activity WHERE datname = '{}' AND pid <> pg_backend_pid()",
            self.name
        ))
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        // FORCE ends the connections that pools are still closing.
        admin(format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        ));
    }
}

/// The database shared by the tests running right now; a new one once all are done.
pub fn shared_database() -> Arc<TestDatabase> {
    static SHARED: Mutex<Weak<TestDatabase>> = Mutex::new(Weak::new());
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(db) = shared.upgrade() {
        return db;
    }
    let db = Arc::new(TestDatabase::create());
    *shared = Arc::downgrade(&db);
    db
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

/// Runs `sql` on the maintenance database; returns the first column of its rows as
/// process ids (empty for DDL). On a thread and runtime of its own: callers may be
/// inside a runtime already, or in a `Drop`.
fn admin(sql: String) -> Vec<u32> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for test database statements");
        runtime.block_on(admin_exec(admin_url(), sql))
    })
    .join()
    .expect("a test database statement (see the message above)")
}

fn admin_exec(admin: String, sql: String) -> Pin<Box<dyn Future<Output = Vec<u32>>>> {
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
        let rows = conn
            .fetch_all(sqlx::AssertSqlSafe(sql.clone()))
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let _ = conn.close().await;
        let pid = |r: &sqlx::postgres::PgRow| r.try_get::<i32, _>(0).ok();
        rows.iter().filter_map(pid).map(|p| p as u32).collect()
    })
}

fn unreachable_message(url: &str, why: &str) -> String {
    format!(
        "PostgreSQL is required for these tests and is unreachable at {url}: {why}. \
         Start it (e.g. `service postgresql start`) or point BOXOFFICE_TEST_POSTGRES_URL \
         at a server where this user may CREATE DATABASE."
    )
}
