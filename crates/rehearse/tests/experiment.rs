//! The inventory-update experiment, run small against the machine's PostgreSQL: the
//! naive read-then-write oversells, and the atomic UPDATE, optimistic versioning,
//! sub-counters and boxoffice's hold + commit sell exactly the units; the database the
//! experiment made is gone afterwards.

use boxoffice_rehearse::experiment::{self, Settings, Variant};
use boxoffice_testkit::harness::postgres::admin_url;

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 180)]
async fn the_naive_variant_oversells_and_the_atomic_ones_sell_exactly_the_units() {
    let settings = Settings {
        units: 10,
        buyers: 300,
        connections: 16,
        variants: Variant::ALL.to_vec(),
    };
    let before = experiment_databases().await;
    let rows = experiment::run(&admin_url(), &settings).await.unwrap();
    let after = experiment_databases().await;
    assert!(
        after.iter().all(|d| before.contains(d)),
        "the experiment left its database behind: {after:?}"
    );
    eprintln!("{}", experiment::table(&rows));
    let row = |v: Variant| rows.iter().find(|r| r.variant == v).unwrap();
    let naive = row(Variant::Naive);
    assert!(
        naive.oversold > 0 && naive.sold > 10,
        "16 buyers reading the same counter at once must oversell: {naive:?}"
    );
    for v in [
        Variant::Atomic,
        Variant::Optimistic,
        Variant::Sharded,
        Variant::Boxoffice,
    ] {
        let r = row(v);
        assert_eq!((r.sold, r.oversold, r.counter_left), (10, 0, 0), "{r:?}");
    }
    assert!(
        row(Variant::Optimistic).conflicts > 0,
        "racing versions conflict"
    );
}

/// Experiment databases on the server now.
async fn experiment_databases() -> Vec<String> {
    use sqlx::Connection;
    let mut c = sqlx::PgConnection::connect(&admin_url()).await.unwrap();
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT datname::text FROM pg_database WHERE datname LIKE 'boxoffice_experiment_%'",
    )
    .fetch_all(&mut c)
    .await
    .unwrap();
    names
}
