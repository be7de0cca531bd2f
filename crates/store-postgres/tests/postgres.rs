//! What only the PostgreSQL adapter can show: the schema's own guards, the migrations,
//! the grouping of writes, the suite's races with group commit off, and the audit
//! catching violations seeded behind the port's back with raw SQL.

mod common;

use std::sync::Arc;

use boxoffice_domain::{BuyerId, Event, OrderEvent};
use boxoffice_engine::ports::{
    Begin, Claimant, CommitOutcome, IdempotencyStore, Incarnation, KnownWrite, Ledger, Order,
    ReplayKey, StoredResponse,
};
use boxoffice_store_postgres::{PostgresLedger, PostgresOptions, migrate};
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

#[boxoffice_testkit::test]
async fn migrating_twice_applies_each_migration_once() {
    // A database of its own: the shared one is migrated by whichever test came first.
    let db = common::TestDatabase::create();
    let options = common::test_options(true);
    assert_eq!(
        migrate(&db.url, &options).await.unwrap(),
        (1..=20).collect::<Vec<i64>>()
    );
    assert_eq!(migrate(&db.url, &options).await.unwrap(), Vec::<i64>::new());
    let ledger = PostgresLedger::connect(&db.url, options).await.unwrap();
    assert_eq!(ledger.migrate().await.unwrap(), Vec::<i64>::new());
    assert!(ledger.audit_facts().await.unwrap().events.is_empty());
    ledger.pool().close().await;
}

/// A node that starts while another migrates waits for it, however long the other's
/// migration takes: the wait (and each migration's statements) was bound by the
/// connection's statement timeout, so a migration longer than it failed the start of
/// every node waiting behind it.
#[boxoffice_testkit::test(timeout_s = 60)]
async fn a_migration_waits_for_another_nodes_past_the_statement_timeout() {
    use sqlx::Connection;
    let db = common::TestDatabase::create();
    let options = PostgresOptions {
        statement_timeout_ms: 300,
        ..common::test_options(true)
    };
    // Another node's migration, holding the migration lock for longer than that.
    let mut other = sqlx::PgConnection::connect(&db.url).await.unwrap();
    sqlx::raw_sql("BEGIN").execute(&mut other).await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(0x626f_786f_6666_6963_i64) // the migrations' lock
        .execute(&mut other)
        .await
        .unwrap();
    let migrating = tokio::spawn({
        let url = db.url.clone();
        async move { migrate(&url, &options).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    sqlx::raw_sql("COMMIT").execute(&mut other).await.unwrap();
    let applied = migrating.await.expect("the task ran");
    assert_eq!(applied.expect("migrated"), (1..=20).collect::<Vec<i64>>());
}

/// A sign-up under its Idempotency-Key is one job of the writer: the claim, the buyer's
/// row and the kept answer (three jobs when made as `begin`, `create_buyer`, `finish`).
/// A refused claim writes no buyer.
#[boxoffice_testkit::test]
async fn a_sign_up_is_claimed_written_and_kept_in_one_write() {
    let pg = common::ledger(true).await;
    let (pool, replays) = (pg.pool().clone(), pg.idempotency());
    let me = Claimant {
        node: Incarnation::random(),
        lease_ms: 30_000,
        dead_after_ms: 10_000,
    };
    let key = ReplayKey::new("secrets", format!("digest-{}", BuyerId::random()));
    let answer = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    let (first, second) = (BuyerId::random(), BuyerId::random());
    let buyers = |b: BuyerId| {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM buyers WHERE id = $1")
            .bind(b.to_string())
            .fetch_one(&pool)
    };
    let (_, jobs_before) = pg.write_stats();
    let sign_up = |buyer| KnownWrite::SignUp { buyer, at: T0 };
    let written = replays
        .write_claimed(&key, &[1; 32], T0, &me, sign_up(first), &answer)
        .await
        .unwrap();
    assert_eq!(written, Some(Begin::Proceed));
    let (_, jobs) = pg.write_stats();
    assert_eq!(jobs - jobs_before, 1, "writer jobs for one sign-up");
    assert_eq!(buyers(first).await.unwrap(), 1);
    let retried = replays
        .write_claimed(&key, &[1; 32], T0, &me, sign_up(second), &answer)
        .await
        .unwrap();
    assert_eq!(retried, Some(Begin::Replay(answer)));
    assert_eq!(
        buyers(second).await.unwrap(),
        0,
        "a replayed sign-up wrote a second buyer"
    );
}

#[boxoffice_testkit::test]
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

#[boxoffice_testkit::test]
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

#[boxoffice_testkit::test]
async fn without_group_commit_k_seats_still_sell_exactly_k_times() {
    suite::k_seats_and_many_more_orders_sell_exactly_k_seats(Arc::new(common::ledger(false).await))
        .await;
}

#[boxoffice_testkit::test]
async fn without_group_commit_a_refused_commit_writes_nothing() {
    let ledger: Arc<dyn Ledger> = Arc::new(common::ledger(false).await);
    suite::a_second_order_for_a_sold_seat_gets_seat_taken_and_writes_nothing(ledger.clone()).await;
    suite::a_buyer_over_the_limit_gets_limit_exceeded_and_no_seats(ledger.clone()).await;
    suite::apply_cannot_commit_an_order_without_selling_its_seats(ledger).await;
}

#[boxoffice_testkit::test]
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

/// `ledger_commit_batch` in one open transaction; the outcome of each commit.
async fn call_batch(conn: &mut sqlx::PgConnection, orders: &[&Order]) -> Vec<(String, String)> {
    let ids: Vec<String> = orders.iter().map(|o| o.id.to_string()).collect();
    sqlx::query_as(
        "SELECT outcome, coalesce(detail, '') FROM ledger_commit_batch($1, array_fill(4, ARRAY[cardinality($1)]), array_fill(0::bigint, ARRAY[cardinality($1)]))",
    )
    .bind(&ids)
    .fetch_all(conn)
    .await
    .unwrap()
}

#[boxoffice_testkit::test]
async fn two_batches_waiting_for_each_other_undo_a_commit_for_a_retry() {
    use sqlx::{Connection, PgConnection};
    let db = common::shared_database();
    let pg = common::ledger(true).await;
    let ledger: Arc<dyn Ledger> = Arc::new(pg);
    let e = event(&ledger, 4, 4).await;
    let mut o = Vec::new();
    for seat in [0, 1, 1, 0] {
        o.push(authorized(&ledger, &e, BuyerId::random(), &[seat]).await);
    }
    let (mut one, mut two) = (
        PgConnection::connect(&db.url).await.unwrap(),
        PgConnection::connect(&db.url).await.unwrap(),
    );
    // Each batch sells one seat, then wants the seat the other batch sold.
    for conn in [&mut one, &mut two] {
        sqlx::raw_sql("BEGIN").execute(conn).await.unwrap();
    }
    assert_eq!(call_batch(&mut one, &[&o[0]]).await[0].0, "committed");
    assert_eq!(call_batch(&mut two, &[&o[2]]).await[0].0, "committed");
    let (o1, o3) = (o[1].clone(), o[3].clone());
    let first = tokio::spawn(async move {
        let out = call_batch(&mut one, &[&o1]).await;
        (one, out)
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let second = tokio::spawn(async move {
        let out = call_batch(&mut two, &[&o3]).await;
        (two, out)
    });
    // The first wait runs out (lock_timeout) long before PostgreSQL would look for a
    // deadlock; that batch goes on and commits, and the other commit then finds its
    // seat sold.
    let (victim, survivor) = match futures::future::select(first, second).await {
        futures::future::Either::Left((v, other)) => (v.unwrap(), other),
        futures::future::Either::Right((v, other)) => (v.unwrap(), other),
    };
    let (mut victim_conn, victim_out) = victim;
    assert_eq!(victim_out[0].0, "retry");
    sqlx::raw_sql("COMMIT")
        .execute(&mut victim_conn)
        .await
        .unwrap();
    let (mut survivor_conn, survivor_out) = survivor.await.unwrap();
    assert_eq!(survivor_out[0].0, "refused", "{survivor_out:?}");
    sqlx::raw_sql("COMMIT")
        .execute(&mut survivor_conn)
        .await
        .unwrap();
    assert_eq!(ledger.sold_seats(e.id).await.unwrap().len(), 2);
}

/// A sink that fails holds back every later event of each order it failed on, and
/// those deliveries stayed due: every claim (one a relay interval) read them all and
/// found each waiting for its order's first, so a claim cost the failing sink's whole
/// backlog. They now wait with the failed one, and no claim reads them before then.
#[boxoffice_testkit::test]
async fn a_failing_sinks_held_back_deliveries_wait_with_the_failed_one() {
    use boxoffice_domain::Millis;
    use boxoffice_engine::ports::{ClaimDeliveries, Failure, Outbox, Sink, SinkKind};

    // A database of its own: a sink receives every event written after it was added.
    let db = common::TestDatabase::create();
    let pg = PostgresLedger::connect(&db.url, common::test_options(true))
        .await
        .unwrap();
    pg.keep_alive(db);
    let pool = pg.pool().clone();
    let pg = Arc::new(pg);
    let ledger: Arc<dyn Ledger> = pg.clone();
    let sink = Sink {
        id: "we_a".into(),
        kind: SinkKind::Webhook {
            url: "http://127.0.0.1:9/we_a".into(),
            secret: "whsec_we_a".into(),
        },
        created_at: T0,
    };
    pg.add_sink(&sink).await.unwrap();
    // Five orders, each with 200 events more than its own: 1,000 and more deliveries.
    let e = event(&ledger, 10, 4).await;
    for _ in 0..5 {
        let o = authorized(&ledger, &e, BuyerId::random(), &[0]).await;
        sqlx::query(
            "INSERT INTO outbox (order_id, kind, payload, created_at, seq, sale_event_id)
             SELECT $1, 'order.moved', '{}', $2, 2 + n, $3 FROM generate_series(1, 200) n",
        )
        .bind(o.id.to_string())
        .bind(T0.0)
        .bind(e.id.0)
        .execute(&pool)
        .await
        .unwrap();
    }
    let now = Millis(T0.0 + 60_000);
    let claim = |at: Millis| ClaimDeliveries {
        owner: "r1",
        now: at,
        lease_until: Millis(at.0 + 30_000),
        limit: 100,
        nats: true,
    };
    let heads = pg.claim(&claim(now)).await.unwrap();
    assert_eq!(heads.len(), 5, "each order's first event");
    let retry_at = Millis(now.0 + 10_000);
    for head in &heads {
        let f = Failure {
            owner: "r1",
            retry_at,
            dead: false,
            error: "503 from the endpoint",
            now,
        };
        pg.failed("we_a", head.event.row, &f).await.unwrap();
    }
    // What a claim now has to read: the due deliveries of the sink.
    let due: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM outbox_deliveries WHERE dead_at IS NULL AND next_attempt_at <= $1",
    )
    .bind(now.0 + 1)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(
        due, 0,
        "every held-back delivery waits with its order's first"
    );
    // They go with their order's first, once it went.
    let again = pg.claim(&claim(retry_at)).await.unwrap();
    assert_eq!(again.len(), 5);
    for head in &again {
        pg.delivered("we_a", head.event.row).await.unwrap();
    }
    let next = pg.claim(&claim(retry_at)).await.unwrap();
    assert_eq!(next.len(), 5, "each order's second event");
    assert!(next.iter().all(|d| d.event.sequence == 2), "{next:?}");
}
