//! The ledger over TLS, against a throw-away PostgreSQL cluster with `ssl=on` that the
//! test makes (certificate from its own CA, TCP accepted only over TLS): `sslmode` and
//! `sslrootcert` in the URL are honoured. `verify-full` with the right CA connects and
//! the ledger migrates and commits; with another CA it fails saying why; `require`
//! encrypts without checking the certificate.

mod common;

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use boxoffice_engine::ports::Ledger;
use boxoffice_store_postgres::PostgresLedger;
use boxoffice_testkit::tls::TestCa;
use common::tls_cluster::TlsPostgres;
use sqlx::{Connection, PgConnection};

/// One cluster for the tests running at the same time; stopped when the last is done.
static SHARED: Mutex<Weak<TlsPostgres>> = Mutex::new(Weak::new());

fn cluster() -> Arc<TlsPostgres> {
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(pg) = shared.upgrade() {
        return pg;
    }
    let pg = Arc::new(TlsPostgres::start(&TestCa::new("postgres test CA")));
    *shared = Arc::downgrade(&pg);
    pg
}

fn verify_full(pg: &TlsPostgres, ca: &std::path::Path) -> String {
    pg.url(&format!("sslmode=verify-full&sslrootcert={}", ca.display()))
}

async fn ledger(url: &str) -> Result<PostgresLedger, String> {
    let options = common::test_options(true);
    let connecting = PostgresLedger::connect(url, options);
    let done = tokio::time::timeout(Duration::from_secs(20), connecting).await;
    done.expect("connecting hung").map_err(|e| e.to_string())
}

/// Whether the server sees this connection as TLS.
async fn over_tls(url: &str) -> bool {
    let mut conn = PgConnection::connect(url).await.expect("a connection");
    let ssl: bool = sqlx::query_scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        .fetch_one(&mut conn)
        .await
        .expect("pg_stat_ssl");
    let _ = conn.close().await;
    ssl
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ledger_reaches_postgres_over_tls_verified_against_a_private_ca() {
    let pg = cluster();
    let url = verify_full(&pg, &pg.files.ca);
    let ledger: Arc<dyn Ledger> = Arc::new(ledger(&url).await.expect("verify-full connects"));
    boxoffice_testkit::ledger::a_committed_order_has_its_seats_sold_to_its_buyer(ledger).await;
    assert!(over_tls(&url).await);
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_full_against_another_ca_fails_saying_why() {
    let pg = cluster();
    let dir = tempfile::tempdir().unwrap();
    let wrong = TestCa::new("another CA").write_files(dir.path()).ca;
    let refused = ledger(&verify_full(&pg, &wrong)).await.err();
    let why = refused.expect("a certificate from an unknown CA must be refused");
    assert!(why.contains("certificate") && why.contains("TLS"), "{why}");
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmode_require_encrypts_without_checking_the_certificate() {
    let pg = cluster();
    let url = pg.url("sslmode=require");
    ledger(&url).await.expect("require connects");
    assert!(over_tls(&url).await);
}
