//! Writes that lose a race with another transaction on the same rows: two nodes' writer
//! batches, or any other session. PostgreSQL answers such a statement with a deadlock
//! (or a lock timeout, or a serialization failure); the request did nothing wrong, so
//! the writer runs it again and its caller never hears of it. Each test has a database
//! of its own, and ledgers with one writer each, so a node's writes queued together
//! share one batch in their queue order.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use boxoffice_domain::{BuyerId, Millis, TransferId};
use boxoffice_engine::ports::{
    Accept, Begin, Claimant, IdempotencyStore, Incarnation, Ledger, ReplayKey, StoreError,
    StoredResponse, Tickets, TransferOffer, TransferState,
};
use boxoffice_store_postgres::{PostgresIdempotency, PostgresLedger, PostgresOptions};
use boxoffice_testkit::ledger::fixtures::{T0, authorized, captured, commit_of, event};
use futures::future::join_all;
use sqlx::{Connection, PgConnection, PgPool};

const NOW: Millis = Millis(1_700_000_000_000);
const FP: [u8; 32] = [7; 32];
const SCOPE: &str = "buyer:conflicts";

/// One node's ledger on `url`, with a writer of its own, and its idempotency store.
async fn node(url: &str) -> (PostgresLedger, PostgresIdempotency) {
    let options = PostgresOptions {
        writers: 1,
        ..common::test_options(true)
    };
    let ledger = PostgresLedger::connect(url, options)
        .await
        .unwrap_or_else(|e| panic!("could not open a ledger on {url}: {e}"));
    let store = ledger.idempotency();
    (ledger, store)
}

/// `begin` of `key` in this file's scope.
async fn begin(node: &PostgresIdempotency, key: &str, who: &Claimant) -> Result<Begin, StoreError> {
    node.begin(&ReplayKey::new(SCOPE, key), &FP, NOW, who).await
}

/// `finish` of `key` in this file's scope, claimed by `who` at `NOW`.
async fn finish(
    node: &PostgresIdempotency,
    key: &str,
    who: &Claimant,
    answer: &StoredResponse,
) -> Result<(), StoreError> {
    let lease = who.lease_from(NOW);
    node.finish(&ReplayKey::new(SCOPE, key), lease, answer)
        .await
}

fn claimant() -> Claimant {
    Claimant {
        node: Incarnation::random(),
        lease_ms: 30_000,
        dead_after_ms: 10_000,
    }
}

fn created() -> StoredResponse {
    StoredResponse {
        status: 201,
        body: br#"{"order_id":"o1"}"#.to_vec(),
    }
}

#[boxoffice_testkit::test]
async fn two_nodes_claiming_and_finishing_the_same_keys_in_opposite_orders_answer_every_request() {
    let db = common::TestDatabase::create();
    let ((ledger_one, one), (ledger_two, two)) = (node(&db.url).await, node(&db.url).await);
    let (me, you, answer) = (claimant(), claimant(), created());
    // Both nodes live: neither takes over the other's claims.
    one.heartbeat(me.node, NOW).await.unwrap();
    two.heartbeat(you.node, NOW).await.unwrap();
    for round in 0..3 {
        let keys: Vec<String> = (0..16).map(|i| format!("r{round}-k{i:02}")).collect();
        // All of a node's writes queue before its writer runs: one batch each, taking
        // the same rows in opposite orders at the same time.
        let (mine, yours) = futures::join!(
            join_all(keys.iter().map(|k| begin(&one, k, &me))),
            join_all(keys.iter().rev().map(|k| begin(&two, k, &you))),
        );
        let mut holders = Vec::new();
        for ((key, a), b) in keys.iter().zip(mine).zip(yours.into_iter().rev()) {
            let (a, b) = (answered(a), answered(b));
            assert!(
                matches!(
                    (&a, &b),
                    (Begin::Proceed, Begin::InFlight) | (Begin::InFlight, Begin::Proceed)
                ),
                "{key} must be claimed exactly once: {a:?}, {b:?}"
            );
            holders.push(if a == Begin::Proceed { me } else { you });
        }
        // Node one finishes every key, each under the lease of the claim that took it.
        let (finished, retries) = futures::join!(
            join_all(
                keys.iter()
                    .zip(&holders)
                    .map(|(k, who)| finish(&one, k, who, &answer))
            ),
            join_all(keys.iter().rev().map(|k| begin(&two, k, &you))),
        );
        finished.into_iter().for_each(answered);
        for retry in retries.into_iter().map(answered) {
            assert!(
                matches!(&retry, Begin::InFlight) || retry == Begin::Replay(created()),
                "{retry:?}"
            );
        }
        for key in &keys {
            assert_eq!(
                answered(begin(&two, key, &you).await),
                Begin::Replay(created())
            );
        }
    }
    // Each batch took the keys in the same order: no deadlock, so nothing ran twice.
    assert_eq!((ledger_one.reruns(), ledger_two.reruns()), (0, 0));
}

/// A request's answer, which must never be a store error.
fn answered<T>(answer: Result<T, boxoffice_engine::ports::StoreError>) -> T {
    answer.unwrap_or_else(|e| panic!("a request failed on a transient conflict: {e}"))
}

#[boxoffice_testkit::test]
async fn a_claim_chosen_as_a_deadlock_victim_runs_again_instead_of_failing() {
    let db = common::TestDatabase::create();
    // PostgreSQL looks for a deadlock once, deadlock_timeout after a session began to
    // wait. The node's sessions look after 5 s and the other session's after a minute, so
    // the batch, which waits first, finds the cycle however late (within 5 s) the other
    // session closes it on a loaded machine. With both at the default 1 s, a gap over
    // 1 s let the batch's one look find no cycle yet and made the other the victim.
    let mut admin = PgConnection::connect(&db.url).await.unwrap();
    let slow = format!("ALTER DATABASE {} SET deadlock_timeout = '5s'", db.name);
    let slow = sqlx::AssertSqlSafe(slow);
    sqlx::raw_sql(slow).execute(&mut admin).await.unwrap();
    let (ledger, node) = node(&db.url).await;
    let watch = PgPool::connect(&db.url).await.unwrap();
    let me = claimant();
    node.heartbeat(me.node, NOW).await.unwrap();
    for key in ["a", "b", "gate"] {
        assert_eq!(begin(&node, key, &me).await.unwrap(), Begin::Proceed);
    }
    let mut gate = locking(&db.url, "gate").await;
    let mut other = locking(&db.url, "b").await;
    sqlx::raw_sql("SET deadlock_timeout = '60s'")
        .execute(&mut other)
        .await
        .unwrap();
    // The writer's first batch waits for `gate`: the next two writes queue behind it
    // and share the second batch, the finish of `a` first.
    let first = tokio::spawn({
        let node = node.clone();
        async move { finish(&node, "gate", &me, &created()).await }
    });
    waiting_for_a_lock(&watch, "UPDATE idempotency_keys").await;
    let second = tokio::spawn({
        let node = node.clone();
        async move {
            let answer = created();
            futures::join!(finish(&node, "a", &me, &answer), begin(&node, "b", &me),)
        }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    sqlx::raw_sql("COMMIT").execute(&mut gate).await.unwrap();
    first.await.unwrap().unwrap();
    // The batch holds `a` and waits for `b`; `other` holds `b` and now waits for `a`.
    // The batch waited first and looks sooner (5 s against the other's minute), so its
    // deadlock check finds the cycle and makes the claim the victim.
    waiting_for_a_lock(&watch, "INSERT INTO idempotency_keys").await;
    let other = tokio::spawn(async move {
        let locked = lock(&mut other, "a").await;
        (other, locked)
    });
    let (mut other, locked) = other.await.unwrap();
    locked.expect("the writer's claim, not the other session, is the deadlock victim");
    sqlx::raw_sql("COMMIT").execute(&mut other).await.unwrap();
    let (finished, claimed) = second.await.unwrap();
    finished.unwrap();
    // `b` is still this node's running claim: the claim ran again and found it.
    assert_eq!(answered(claimed), Begin::InFlight);
    assert_eq!(
        answered(begin(&node, "a", &me).await),
        Begin::Replay(created())
    );
    assert_eq!(ledger.reruns(), 1, "the claim ran again once");
}

/// A session of its own in an open transaction that holds the row of `key`.
async fn locking(url: &str, key: &str) -> PgConnection {
    let mut conn = PgConnection::connect(url).await.unwrap();
    sqlx::raw_sql("BEGIN").execute(&mut conn).await.unwrap();
    lock(&mut conn, key).await.unwrap();
    conn
}

async fn lock(conn: &mut PgConnection, key: &str) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT 1 FROM idempotency_keys WHERE scope = $1 AND key = $2 FOR UPDATE")
        .bind(SCOPE)
        .bind(key)
        .execute(conn)
        .await
        .map(drop)
}

/// Until a session of the database waits for a lock in a statement containing
/// `statement`.
async fn waiting_for_a_lock(watch: &PgPool, statement: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'
               AND position($1 in query) > 0",
        )
        .bind(statement)
        .fetch_one(watch)
        .await
        .unwrap();
        if waiting > 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no session waited for a lock in {statement:?} within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A transfer accepted on node two runs outside the writer, in a transaction of its
/// own that locks the ticket, then the recipient's ticket count. Node one's writer batch
/// commits a sale to the same recipient (their count) and then refunds the ticket's
/// order (its tickets, in id order): the same rows the other way round. PostgreSQL ends
/// the deadlock by failing the transaction whose check runs first; when that is the
/// transfer, it runs again once the batch is through, as the writer's own jobs do, and
/// its buyer gets an answer (here a refusal: the order was refunded), not an error.
#[boxoffice_testkit::test(timeout_s = 60)]
async fn a_transfer_chosen_as_a_deadlock_victim_against_another_nodes_batch_runs_again() {
    let db = common::TestDatabase::create();
    let ((one, _), (two, _)) = (node(&db.url).await, node(&db.url).await);
    let (one, two) = (Arc::new(one), Arc::new(two));
    let ledger: Arc<dyn Ledger> = one.clone();
    let watch = PgPool::connect(&db.url).await.unwrap();
    let (alice, bob) = (BuyerId::random(), BuyerId::random());
    let e = event(&ledger, 4, 4).await;
    let sold = captured(&ledger, &e, alice, &[0, 1], 4).await;
    let bobs = authorized(&ledger, &e, bob, &[2]).await;
    // The refund locks the order's tickets in id order: the first is held by `gate`,
    // the second is the one given to Bob.
    let ids: Vec<String> =
        sqlx::query_scalar("SELECT id FROM tickets WHERE order_id = $1 ORDER BY id")
            .bind(sold.id.to_string())
            .fetch_all(&watch)
            .await
            .unwrap();
    let rows = two.tickets_of_order(sold.id).await.unwrap();
    let given = rows.iter().find(|r| r.id.to_string() == ids[1]).unwrap();
    let now = T0.plus_secs(60);
    let offer = TransferOffer {
        id: TransferId::random(),
        ticket: given.id,
        event: e.id,
        from: alice,
        to: bob,
        version: given.version,
        state: TransferState::Offered,
        created_at: now,
        expires_at: now.plus_secs(600),
        ended_at: None,
    };
    assert_eq!(two.offer_transfer(&offer).await.unwrap(), Ok(()));

    let mut gate = PgConnection::connect(&db.url).await.unwrap();
    sqlx::raw_sql("BEGIN").execute(&mut gate).await.unwrap();
    sqlx::query("SELECT 1 FROM tickets WHERE id = $1 FOR UPDATE")
        .bind(&ids[0])
        .execute(&mut gate)
        .await
        .unwrap();
    // One batch on node one: the commit takes Bob's count, then the refund waits for
    // the gate's ticket.
    let batch = tokio::spawn({
        let one = one.clone();
        let commit = commit_of(&bobs, 4);
        async move { futures::join!(one.commit(&commit), one.revoke_sale(sold.id, now)) }
    });
    waiting_for_a_lock(&watch, "SELECT id FROM tickets WHERE order_id").await;
    // Node two's transfer takes the ticket, then waits for Bob's count.
    let accept = Accept {
        transfer: offer.id,
        by: bob,
        max_per_buyer: 4,
        now: now.plus_secs(1),
    };
    let accepted = tokio::spawn({
        let two = two.clone();
        async move { two.accept_transfer(&accept).await }
    });
    waiting_for_a_lock(&watch, "INSERT INTO buyer_tickets").await;
    // The refund now takes the first ticket and waits for the second: a cycle, in which
    // the transfer waited first, so its deadlock check runs first and fails it.
    sqlx::raw_sql("COMMIT").execute(&mut gate).await.unwrap();
    let accepted = accepted.await.unwrap();
    let answer = answered(accepted);
    assert!(
        answer.is_err(),
        "the transfer ran again after the refund and was refused: {answer:?}"
    );
    let (committed, revoked) = batch.await.unwrap();
    committed.expect("the commit stands");
    revoked.expect("the refund stands");
    assert_eq!(two.reruns(), 1, "the transfer ran again once");
    assert_eq!(one.reruns(), 0, "the batch was never the victim");
}

/// Two nodes draw an event's first fairness seed at once (the opening herd's first
/// pre-opening joins): the second's insert waits for the first's commit and then
/// does nothing. Its read of the stored seed sat in the same statement, with the
/// snapshot from before that commit, found no row and failed the join; it now gets the
/// seed the first node stored.
#[boxoffice_testkit::test(timeout_s = 60)]
async fn a_seed_drawn_by_another_node_meanwhile_is_the_one_answered() {
    let db = common::TestDatabase::create();
    let (one, _) = node(&db.url).await;
    let one = Arc::new(one);
    let ledger: Arc<dyn Ledger> = one.clone();
    let watch = PgPool::connect(&db.url).await.unwrap();
    let e = event(&ledger, 4, 4).await;
    // The other node's writer: its seed inserted, not yet committed.
    let mut other = PgConnection::connect(&db.url).await.unwrap();
    sqlx::raw_sql("BEGIN").execute(&mut other).await.unwrap();
    sqlx::query("INSERT INTO fairness_seeds (event_id, seed) VALUES ($1, 'theirs')")
        .bind(e.id.0)
        .execute(&mut other)
        .await
        .unwrap();
    let drawn = tokio::spawn({
        let one = one.clone();
        async move { one.fairness_seed(e.id, "ours").await }
    });
    waiting_for_a_lock(&watch, "INSERT INTO fairness_seeds").await;
    sqlx::raw_sql("COMMIT").execute(&mut other).await.unwrap();
    let drawn = drawn.await.expect("the task ran");
    assert_eq!(drawn.expect("the seed is answered"), "theirs");
    assert_eq!(one.fairness_seed(e.id, "later").await.unwrap(), "theirs");
}

/// Two nodes' batches of claims over the same keys in opposite orders could deadlock:
/// each batch locked its keys in its own order (its requests' arrival), one held a key
/// the other wanted next, and PostgreSQL failed one of them after `deadlock_timeout`
/// (it ran again, a second late). A batch now takes its keys in key order, as the writer
/// takes single keys' rows, so it waits for its first key holding none after it.
#[boxoffice_testkit::test]
async fn a_batch_of_claims_takes_its_keys_in_key_order() {
    use boxoffice_engine::ports::KeyClaim;

    let db = common::TestDatabase::create();
    let (_ledger, node) = node(&db.url).await;
    let watch = PgPool::connect(&db.url).await.unwrap();
    let me = claimant();
    node.heartbeat(me.node, NOW).await.unwrap();
    for key in ["a", "b"] {
        assert_eq!(begin(&node, key, &me).await.unwrap(), Begin::Proceed);
        finish(&node, key, &me, &created()).await.unwrap();
    }
    let mut holder = locking(&db.url, "a").await;
    // The batch names `b` first, then `a`, which another session holds.
    let batch = tokio::spawn({
        let node = node.clone();
        async move {
            let claim = |key: &str| KeyClaim {
                key: ReplayKey::new(SCOPE, key),
                fingerprint: FP,
                now: NOW,
            };
            node.begin_many(&[claim("b"), claim("a")], &me).await
        }
    });
    waiting_for_a_lock(&watch, "INSERT INTO idempotency_keys").await;
    // Waiting for `a`, the batch holds nothing after it: `b` is free to lock at once.
    let mut third = PgConnection::connect(&db.url).await.unwrap();
    sqlx::raw_sql("BEGIN").execute(&mut third).await.unwrap();
    let free = sqlx::query(
        "SELECT 1 FROM idempotency_keys WHERE scope = $1 AND key = 'b' FOR UPDATE NOWAIT",
    )
    .bind(SCOPE)
    .execute(&mut third)
    .await;
    assert!(
        free.is_ok(),
        "the batch held `b` while waiting for `a`: {free:?}"
    );
    sqlx::raw_sql("ROLLBACK").execute(&mut third).await.unwrap();
    sqlx::raw_sql("COMMIT").execute(&mut holder).await.unwrap();
    let answers = tokio::time::timeout(Duration::from_secs(10), batch)
        .await
        .expect("the batch ends")
        .unwrap();
    let answers: Vec<Begin> = answers.into_iter().map(answered).collect();
    assert_eq!(
        answers,
        vec![Begin::Replay(created()), Begin::Replay(created())]
    );
}
