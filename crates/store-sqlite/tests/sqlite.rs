//! What only the SQLite adapter can show: the schema's own guards, the migrations, the
//! grouping of writes, and the audit catching violations seeded behind the port's back
//! with raw SQL (the engine has no way to create them).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use boxoffice_domain::{BuyerId, Event, OrderEvent};
use boxoffice_engine::ports::{
    AuditFacts, Begin, Claimant, CommitOutcome, IdempotencyStore, Incarnation, KnownWrite, Ledger,
    Order, ReplayKey, StoredResponse,
};
use boxoffice_store_sqlite::{SqliteLedger, SqliteOptions, migrate};
use boxoffice_testkit::ledger::fixtures::{T0, authorized, commit_of, event};
use rusqlite::Connection;
use tempfile::TempDir;

struct Fixture {
    ledger: Arc<dyn Ledger>,
    sqlite: Arc<SqliteLedger>,
    path: PathBuf,
    _dir: TempDir,
}

fn open() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let sqlite = Arc::new(SqliteLedger::open(&path, SqliteOptions::default()).unwrap());
    Fixture {
        ledger: sqlite.clone(),
        sqlite,
        path,
        _dir: dir,
    }
}

/// A connection that bypasses the foreign keys, as a careless operator's would.
fn backdoor(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = OFF; PRAGMA busy_timeout = 5000;")
        .unwrap();
    conn
}

/// An event with one committed order of two seats (seats 0 and 1) for `buyer`.
async fn one_sale(f: &Fixture, buyer: BuyerId) -> (Event, Order) {
    let e = event(&f.ledger, 10, 4).await;
    let o = authorized(&f.ledger, &e, buyer, &[0, 1]).await;
    assert_eq!(
        f.ledger.commit(&commit_of(&o, 4)).await.unwrap(),
        CommitOutcome::Committed
    );
    (e, o)
}

fn is_clean(facts: &AuditFacts) -> bool {
    facts
        .events
        .iter()
        .all(|e| e.sold <= e.capacity && e.unknown_seats.is_empty())
        && facts.sold_without_order.is_empty()
        && facts.orders_missing_seats.is_empty()
        && facts.seats_of_unsold_orders.is_empty()
        && facts.buyers_over_limit.is_empty()
}

#[boxoffice_testkit::test]
async fn migrating_twice_applies_each_migration_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    assert_eq!(migrate(&path).unwrap(), (1..=17).collect::<Vec<i64>>());
    assert_eq!(migrate(&path).unwrap(), Vec::<i64>::new());
    // Opening a migrated file finds nothing left to do and works.
    let ledger = SqliteLedger::open(&path, SqliteOptions::default()).unwrap();
    assert!(ledger.audit_facts().await.unwrap().events.is_empty());
}

#[boxoffice_testkit::test]
async fn the_order_history_cannot_be_rewritten() {
    let f = open();
    let (_, o) = one_sale(&f, BuyerId::random()).await;
    let conn = backdoor(&f.path);
    let lines: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM order_events WHERE order_id = ?1",
            [o.id.to_string()],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(lines, 3, "created, authorized, committed");
    let update = conn.execute("UPDATE order_events SET to_state = 'refunded'", []);
    let delete = conn.execute("DELETE FROM order_events", []);
    for result in [update, delete] {
        assert!(result.unwrap_err().to_string().contains("append-only"));
    }
}

#[boxoffice_testkit::test]
async fn a_commit_writes_one_outbox_event_per_history_line_and_a_payment_row_per_reference() {
    let f = open();
    let (_, o) = one_sale(&f, BuyerId::random()).await;
    f.ledger
        .apply(o.id, OrderEvent::Captured, Some("cap_1"), T0.plus_secs(9))
        .await
        .unwrap();
    let conn = backdoor(&f.path);
    let notices: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM outbox WHERE order_id = ?1 AND seq = 0",
            [o.id.to_string()],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(notices, 0, "no outbox row beside the history's own");
    // One relayed event per history line, in the same transactions.
    let mut stmt = conn
        .prepare("SELECT kind, seq FROM outbox WHERE order_id = ?1 AND seq > 0 ORDER BY id")
        .unwrap();
    let events: Vec<(String, i64)> = stmt
        .query_map([o.id.to_string()], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let kinds = [
        "order.created",
        "order.authorized",
        "order.committed",
        "order.captured",
    ];
    let expected: Vec<(String, i64)> = (1..).zip(kinds).map(|(n, k)| (k.to_string(), n)).collect();
    assert_eq!(events, expected);
    let mut stmt = conn
        .prepare("SELECT kind, reference FROM payments WHERE order_id = ?1 ORDER BY id")
        .unwrap();
    let rows: Vec<(String, String)> = stmt
        .query_map([o.id.to_string()], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        rows,
        vec![
            ("authorized".into(), format!("auth_{}", o.id)),
            ("captured".into(), "cap_1".into())
        ]
    );
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_commits_share_transactions() {
    let f = open();
    let e = event(&f.ledger, 200, 4).await;
    let mut orders = Vec::new();
    for i in 0..200 {
        orders.push(authorized(&f.ledger, &e, BuyerId::random(), &[i]).await);
    }
    let (tx_before, jobs_before) = f.sqlite.write_stats();
    let commits = orders.iter().map(|o| {
        let (ledger, c) = (f.ledger.clone(), commit_of(o, 4));
        tokio::spawn(async move { ledger.commit(&c).await.unwrap() })
    });
    for outcome in futures::future::join_all(commits).await {
        assert_eq!(outcome.unwrap(), CommitOutcome::Committed);
    }
    let (tx, jobs) = f.sqlite.write_stats();
    assert_eq!(jobs - jobs_before, 200);
    assert!(
        tx - tx_before < 200,
        "{} transactions for 200 commits",
        tx - tx_before
    );
}

/// A sign-up under its Idempotency-Key is one job of the writer: the claim, the buyer's
/// row and the kept answer (three jobs when made as `begin`, `create_buyer`, `finish`).
/// A refused claim writes no buyer.
#[boxoffice_testkit::test]
async fn a_sign_up_is_claimed_written_and_kept_in_one_write() {
    let f = open();
    let replays = f.sqlite.idempotency();
    let me = Claimant {
        node: Incarnation::random(),
        lease_ms: 30_000,
        dead_after_ms: 10_000,
    };
    let key = ReplayKey::new("secrets", "digest-1");
    let answer = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    let (first, second) = (BuyerId::random(), BuyerId::random());
    let buyers = |b: BuyerId| -> i64 {
        let sql = "SELECT COUNT(*) FROM buyers WHERE id = ?1";
        backdoor(&f.path)
            .query_row(sql, [b.to_string()], |r| r.get(0))
            .unwrap()
    };
    let (_, jobs_before) = f.sqlite.write_stats();
    let sign_up = |buyer| KnownWrite::SignUp { buyer, at: T0 };
    let written = replays
        .write_claimed(&key, &[1; 32], T0, &me, sign_up(first), &answer)
        .await
        .unwrap();
    assert_eq!(written, Some(Begin::Proceed));
    let (_, jobs) = f.sqlite.write_stats();
    assert_eq!(jobs - jobs_before, 1, "writer jobs for one sign-up");
    assert_eq!(buyers(first), 1);
    let retried = replays
        .write_claimed(&key, &[1; 32], T0, &me, sign_up(second), &answer)
        .await
        .unwrap();
    assert_eq!(retried, Some(Begin::Replay(answer)));
    assert_eq!(buyers(second), 0, "a replayed sign-up wrote a second buyer");
}

#[boxoffice_testkit::test]
async fn the_audit_sees_a_sold_seat_outside_the_catalog() {
    let f = open();
    let (e, o) = one_sale(&f, BuyerId::random()).await;
    assert!(is_clean(&f.ledger.audit_facts().await.unwrap()));
    backdoor(&f.path)
        .execute(
            "INSERT INTO sold_seats (event_id, seat_id, order_id, buyer_id, price, sold_at) VALUES (?1, 'NOPE-1', ?2, ?3, 1, 0)",
            rusqlite::params![e.id.0, o.id.to_string(), o.buyer.to_string()],
        )
        .unwrap();
    let facts = f.ledger.audit_facts().await.unwrap();
    let mine = facts.events.iter().find(|x| x.event == e.id).unwrap();
    assert_eq!(
        (mine.sold, mine.unknown_seats.clone()),
        (3, vec!["NOPE-1".to_string()])
    );
    assert_eq!(
        facts.orders_missing_seats,
        vec![o.id],
        "the order now has three sold seats for two"
    );
}

#[boxoffice_testkit::test]
async fn the_audit_sees_a_committed_order_that_lost_a_seat() {
    let f = open();
    let (e, o) = one_sale(&f, BuyerId::random()).await;
    backdoor(&f.path)
        .execute(
            "DELETE FROM sold_seats WHERE event_id = ?1 AND seat_id = ?2",
            rusqlite::params![e.id.0, o.seats[0].seat_id],
        )
        .unwrap();
    let facts = f.ledger.audit_facts().await.unwrap();
    assert_eq!(facts.orders_missing_seats, vec![o.id]);
    // The guard still counts two tickets for one sold seat: it has drifted.
    assert_eq!(facts.buyers_over_limit, vec![(e.id, o.buyer, 2)]);
}

#[boxoffice_testkit::test]
async fn the_audit_sees_sold_seats_of_an_order_that_does_not_own_seats() {
    let f = open();
    let (e, o) = one_sale(&f, BuyerId::random()).await;
    let pending = authorized(&f.ledger, &e, BuyerId::random(), &[5]).await;
    let conn = backdoor(&f.path);
    conn.execute(
        "INSERT INTO sold_seats (event_id, seat_id, order_id, buyer_id, price, sold_at) VALUES (?1, ?2, ?3, ?4, 1, 0)",
        rusqlite::params![e.id.0, e.seats[5].label, pending.id.to_string(), pending.buyer.to_string()],
    )
    .unwrap();
    conn.execute(
        "UPDATE orders SET state = 'refunded' WHERE id = ?1",
        [o.id.to_string()],
    )
    .unwrap();
    let facts = f.ledger.audit_facts().await.unwrap();
    let mut expected = vec![pending.id, o.id];
    expected.sort();
    assert_eq!(facts.seats_of_unsold_orders, expected);
    assert_eq!(facts.sold_without_order.len(), 3);
}

#[boxoffice_testkit::test]
async fn the_audit_sees_a_buyer_over_the_events_limit() {
    let f = open();
    let buyer = BuyerId::random();
    let (e, _) = one_sale(&f, buyer).await;
    // Five seats to one buyer of a four-ticket event, guard included: only a raw
    // write with the CHECK switched off can do that.
    let conn = backdoor(&f.path);
    conn.execute_batch("PRAGMA ignore_check_constraints = ON")
        .unwrap();
    let o = authorized(&f.ledger, &e, buyer, &[2, 3, 4]).await;
    for seat in &o.seats {
        conn.execute(
            "INSERT INTO sold_seats (event_id, seat_id, order_id, buyer_id, price, sold_at) VALUES (?1, ?2, ?3, ?4, 1, 0)",
            rusqlite::params![e.id.0, seat.seat_id, o.id.to_string(), buyer.to_string()],
        )
        .unwrap();
    }
    conn.execute(
        "UPDATE orders SET state = 'committed' WHERE id = ?1",
        [o.id.to_string()],
    )
    .unwrap();
    conn.execute(
        "UPDATE buyer_tickets SET tickets = 5 WHERE event_id = ?1",
        [e.id.0],
    )
    .unwrap();
    let facts = f.ledger.audit_facts().await.unwrap();
    assert_eq!(facts.buyers_over_limit, vec![(e.id, buyer, 5)]);
    assert!(facts.orders_missing_seats.is_empty() && facts.seats_of_unsold_orders.is_empty());
}

#[boxoffice_testkit::test]
async fn a_fresh_ledger_audits_clean() {
    let f = open();
    one_sale(&f, BuyerId::random()).await;
    assert!(is_clean(&f.ledger.audit_facts().await.unwrap()));
}
