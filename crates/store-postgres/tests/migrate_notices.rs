//! PostgreSQL's notices reach an operator's terminal through the client's logs
//! (`sqlx::postgres::notice`): migrating a brand-new database, or one already current,
//! must not print that something "already exists". A binary of its own, so the
//! process-wide log subscriber sees this test's connections and no other test's.

mod common;

use std::sync::{Arc, Mutex};

use boxoffice_store_postgres::migrate;

/// Everything logged in this process, as text.
#[derive(Clone, Default)]
struct Printed(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Printed {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[boxoffice_testkit::test]
async fn migrating_a_fresh_database_prints_no_notice() {
    let printed = Printed::default();
    let writer = printed.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();
    let db = common::TestDatabase::create();
    let options = common::test_options(true);
    assert_eq!(
        migrate(&db.url, &options).await.unwrap(),
        (1..=20).collect::<Vec<_>>()
    );
    assert!(migrate(&db.url, &options).await.unwrap().is_empty());
    tracing::info!("migrated twice");
    let text = String::from_utf8(printed.0.lock().unwrap().clone()).unwrap();
    assert!(text.contains("migrated twice"), "the capture works: {text}");
    assert!(!text.contains("sqlx::postgres::notice"), "{text}");
}
