//! What only the PostgreSQL adapter can show: the schema's own guards, the migrations,
//! the grouping of writes, the suite's races with group commit off, and the audit
//! catching violations seeded behind the port's back with raw SQL.

mod common;

use std::sync::Arc;

use boxoffice_domain::{BuyerId, Event, OrderEvent};
use boxoffice_engine::ports::{CommitOutcome, Ledger, Order};
use boxoffice_store_postgres::{PostgresLedger, migrate};
use boxoffice_testkit::ledger as suite;
use boxoffice_testkit::ledger::fixtures::{T0, authorized, commit_of, event};

/// An event with one committed order of two seats (seats 0 and 1) for `buyer`.
async fn one_sale(ledger: &Arc<dyn Ledger>, buyer: BuyerId) -> (Event, Order) {
    let e = event(ledger, 10, 4).await;
    let o = authorized(ledger, &e, buyer, &[0, 1]).await;
    assert_eq!(
        ledger.commit(&commit_of(&o, 4)).await.unwrap(),
        CommitOutcome::Committed
    );
    (e, o)
}

#[tokio::test]
async fn migrating_twice_applies_each_migration_once() {
    // A database of its own: the shared one is migrated by whichever test came first.
    let db = common::TestDatabase::create();
    let options = common::test_options(true);
    assert_eq!(migrate(&db.url, &options).await.unwrap(), vec![1]);
    assert_eq!(migrate(&db.url, &options).await.unwrap(), Vec::<i64>::new());
    let ledger = PostgresLedger::connect(&db.url, options).await.unwrap();
    assert_eq!(ledger.migrate().await.unwrap(), Vec::<i64>::new());
    assert!(ledger.audit_facts().await.unwrap().events.is_empty());
    ledger.pool().close().await;
}

#[tokio::test]
async fn the_order_history_cannot_be_rewritten() {
    let pg = common::ledger(true).await;
    let pool = pg.pool().clone();
    let ledger: Arc<dyn Ledger> = Arc::new(pg);
    let (_, o) = one_sale(&ledger, BuyerId::random()).await;
    let id = o.id.to_string();
    let lines: i64 = sqlx::query_scalar("SELECT count(*) FROM order_events WHERE order_id = $1")
        .bind(&id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(lines, 3, "created, authorized, committed");
    for sql in [
        "UPDATE order_events SET to_state = 'voided' WHERE order_id = $1",
        "DELETE FROM order_events WHERE order_id = $1",
    ] {
        let refused = sqlx::query(sql).bind(&id).execute(&pool).await;
        assert!(refused.is_err(), "{sql} must be refused");
    }
    assert!(
        sqlx::raw_sql("TRUNCATE order_events CASCADE")
            .execute(&pool)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn concurrent_commits_share_transactions() {
    let pg = Arc::new(common::ledger(true).await);
    let ledger: Arc<dyn Ledger> = pg.clone();
    let before = pg.write_stats();
    suite::one_conflicting_commit_in_a_batch_does_not_undo_the_others(ledger).await;
    let (transactions, writes) = pg.write_stats();
    let (transactions, writes) = (transactions - before.0, writes - before.1);
    assert!(
        transactions < writes,
        "{writes} writes in {transactions} transactions: nothing was grouped"
    );
}

#[tokio::test]
async fn without_group_commit_k_seats_still_sell_exactly_k_times() {
    suite::k_seats_and_many_more_orders_sell_exactly_k_seats(Arc::new(common::ledger(false).await))
        .await;
}

#[tokio::test]
async fn without_group_commit_a_refused_commit_writes_nothing() {
    let ledger: Arc<dyn Ledger> = Arc::new(common::ledger(false).await);
    suite::a_second_order_for_a_sold_seat_gets_seat_taken_and_writes_nothing(ledger.clone()).await;
    suite::a_buyer_over_the_limit_gets_limit_exceeded_and_no_seats(ledger.clone()).await;
    suite::apply_cannot_commit_an_order_without_selling_its_seats(ledger).await;
}

#[tokio::test]
async fn the_audit_reports_violations_seeded_behind_the_ports_back() {
    let pg = common::ledger(true).await;
    let pool = pg.pool().clone();
    let ledger: Arc<dyn Ledger> = Arc::new(pg);
    let buyer = BuyerId::random();
    let (e, o) = one_sale(&ledger, buyer).await;
    // A careless operator: the guard row drifts and a seat loses its sale.
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("UPDATE buyer_tickets SET tickets = 0 WHERE event_id = $1 AND buyer_id = $2")
        .bind(e.id.0)
        .bind(buyer.to_string())
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query("DELETE FROM sold_seats WHERE event_id = $1 AND seat_id = $2")
        .bind(e.id.0)
        .bind(&e.seats[1].label)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let facts = ledger.audit_facts().await.unwrap();
    assert!(facts.orders_missing_seats.contains(&o.id));
    assert!(
        facts
            .buyers_over_limit
            .iter()
            .any(|(ev, b, _)| *ev == e.id && *b == buyer)
    );
    ledger
        .apply(o.id, OrderEvent::Captured, Some("cap_1"), T0.plus_secs(3))
        .await
        .unwrap();
}
