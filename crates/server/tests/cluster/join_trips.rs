//! What a queue join waits on in cluster mode, and what a retry gets when the node died
//! between claiming its key and keeping the answer. A join after opening sends Redis one
//! command, the script that claims the Idempotency-Key, takes the place and keeps
//! "joined" as the key's answer: the event's waiting-room settings come from the node's
//! copy (read at most `engine.waiting.public_doc_ttl_ms` before; the node's clock stands
//! still here, so the copy never expires in the measured joins).
//!
//! A join run again finds the buyer's place again, so a retry of a kept join runs it
//! again (answered as a replay), and the keeping of a join before opening is not waited
//! on. That is checked here on the join replay store itself: the record a node that
//! died before keeping leaves behind (a claim still running, its holder gone) is taken
//! over by the retry, which runs the join again and gets the same place, while buyers
//! who joined since are behind it. A key reused for another event's join takes no place.

use boxoffice_domain::EventId;
use boxoffice_testkit::eventually;
use boxoffice_testkit::harness::free_port;
use boxoffice_testkit::harness::redis::OwnRedis;
use redis::AsyncCommands;
use redis::aio::MultiplexedConnection;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::Duration;

use crate::common::{TestApp, spec, uuid};
use crate::round_trips::{connection, measure, node};

/// Joins measured.
const JOINS: usize = 40;
/// Commands Redis serves per join after opening: the script that claims the key and
/// takes the place.
const COMMANDS_PER_JOIN: u64 = 1;

/// `token`'s join of `event` under `key`: its status and answer.
async fn join(app: &TestApp, event: EventId, token: &str, key: &str) -> (StatusCode, Value, bool) {
    let path = format!("/v1/events/{event}/queue");
    let res = app.post(&path, token, key, json!({})).await;
    let status = res.status();
    let replayed = res.headers().get("idempotent-replayed").is_some();
    (status, res.json().await.unwrap_or(Value::Null), replayed)
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_join_costs_the_hot_store_one_script_and_nothing_else() {
    let own = OwnRedis::start(free_port()).await;
    let (app, _db) = node(&own).await;
    let event = app.create_event(&spec(0, 0, 200, 4)).await;
    let mut tokens = Vec::new();
    for _ in 0..=JOINS {
        tokens.push(app.buyer().await.1);
    }
    // The first join loads the script into this Redis and reads the event's settings.
    let first = tokens.pop().expect("a buyer");
    assert_eq!(join(&app, event, &first, &uuid()).await.0, StatusCode::OK);
    let mut redis = connection(&own).await;
    let joins = async {
        for token in &tokens {
            let (status, v, _) = join(&app, event, token, &uuid()).await;
            assert_eq!(status, StatusCode::OK, "{v}");
            assert!(v["position"].as_u64().is_some(), "{v}");
        }
    };
    let measured = measure(&own, &mut redis, joins).await;
    measured.expect(JOINS, "join", COMMANDS_PER_JOIN);
    app.stop().await;
}

/// The join replay records in `redis` (the test's own Redis: SCAN is safe here).
async fn join_records(redis: &mut MultiplexedConnection) -> HashSet<String> {
    let mut found = HashSet::new();
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg("{*:joins:idem:*}:r:*")
            .arg("COUNT")
            .arg(1000)
            .query_async(redis)
            .await
            .expect("Redis answers");
        found.extend(keys);
        if next == 0 {
            return found;
        }
        cursor = next;
    }
}

/// Turns `record` back into what a node that died after claiming and before keeping
/// the answer leaves: a claim still running, without an answer, held by an incarnation
/// that never beat (so dead), its lease far off (so only the holder's death frees it).
async fn die_before_keeping(redis: &mut MultiplexedConnection, record: &str) {
    let kept: Option<String> = redis.hget(record, "status").await.expect("Redis answers");
    assert!(kept.is_some(), "the record was kept: {record}");
    let _: i64 = redis.hdel(record, &["status", "body"]).await.expect("HDEL");
    let _: i64 = redis
        .hset_multiple(
            record,
            &[("lease", "9000000000000000"), ("node", &"de".repeat(16))],
        )
        .await
        .map(|()| 0)
        .expect("HSET");
}

/// Waits until `record` holds an answer (a join's keeping before opening is not waited
/// on by its request; after opening its script keeps it).
async fn kept(redis: &MultiplexedConnection, record: &str) {
    let every = Duration::from_millis(20);
    eventually(
        "the join's answer kept",
        Duration::from_secs(30),
        every,
        || {
            let (mut redis, record) = (redis.clone(), record.to_string());
            async move {
                let status: Option<String> = redis.hget(&record, "status").await.expect("HGET");
                status.map(|_| ()).ok_or("not yet")
            }
        },
    )
    .await;
}

/// A new buyer's join of `event` (another buyer than the one under test).
async fn another_joins(app: &TestApp, event: EventId) {
    let token = app.buyer().await.1;
    let (status, v, _) = join(app, event, &token, &uuid()).await;
    assert_eq!(status, StatusCode::OK, "{v}");
}

/// `token` joins `event` under `key`, then the node "dies" before keeping the answer
/// while `meanwhile` joins others; the retry with `key` must run again (not replay)
/// and answer `position` as the first join did. Returns that position.
async fn retried_after_death(
    app: &TestApp,
    redis: &mut MultiplexedConnection,
    event: EventId,
    meanwhile: usize,
) -> Option<u64> {
    another_joins(app, event).await;
    let token = app.buyer().await.1;
    let key = uuid();
    let before = join_records(redis).await;
    let (status, first, _) = join(app, event, &token, &key).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let new: Vec<String> = join_records(redis)
        .await
        .difference(&before)
        .cloned()
        .collect();
    assert_eq!(new.len(), 1, "one record for the join: {new:?}");
    let record = &new[0];
    kept(redis, record).await;
    // Others join behind: a join run again that took a new place would be behind them.
    for _ in 0..meanwhile {
        another_joins(app, event).await;
    }
    die_before_keeping(redis, record).await;
    let (status, again, replayed) = join(app, event, &token, &key).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert!(
        !replayed,
        "taken over and run again: the claim held no answer"
    );
    assert_eq!(again["position"], first["position"], "{first} then {again}");
    // The retry's answer is kept in turn, and a retry from then on is answered as a
    // replay, with the same place.
    kept(redis, record).await;
    let (status, third, replayed) = join(app, event, &token, &key).await;
    assert_eq!((status, replayed), (StatusCode::OK, true), "{third}");
    assert_eq!(third["position"], first["position"]);
    first["position"].as_u64()
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_key_reused_for_another_events_join_is_refused_and_takes_no_place() {
    let own = OwnRedis::start(free_port()).await;
    let (app, _db) = node(&own).await;
    let (event, other) = (
        app.create_event(&spec(0, 0, 200, 4)).await,
        app.create_event(&spec(0, 0, 200, 4)).await,
    );
    another_joins(&app, other).await;
    let token = app.buyer().await.1;
    let key = uuid();
    let (status, first, _) = join(&app, event, &token, &key).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let (status, refused, _) = join(&app, other, &token, &key).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    // The buyer's first join of `other` takes the place behind the one buyer there:
    // the refused request took none.
    let (status, placed, _) = join(&app, other, &token, &uuid()).await;
    assert_eq!(status, StatusCode::OK, "{placed}");
    assert_eq!(placed["position"], json!(2), "{placed}");
    let (_, again, _) = join(&app, other, &app.buyer().await.1, &uuid()).await;
    assert_eq!(again["position"], json!(3), "{again}");
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_join_retried_after_its_node_died_before_keeping_the_answer_gets_the_same_place() {
    let own = OwnRedis::start(free_port()).await;
    let (app, _db) = node(&own).await;
    let mut redis = connection(&own).await;
    let event = app.create_event(&spec(0, 0, 200, 4)).await;
    let place = retried_after_death(&app, &mut redis, event, 3).await;
    assert_eq!(place, Some(2), "behind the one buyer who joined first");
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_pool_join_retried_after_its_node_died_before_keeping_the_answer_enters_the_pool_once() {
    let own = OwnRedis::start(free_port()).await;
    let (app, _db) = node(&own).await;
    let mut redis = connection(&own).await;
    let event = scheduled_event(&app).await;
    let place = retried_after_death(&app, &mut redis, event, 3).await;
    assert_eq!(place, None, "in the pool, not drawn yet");
    // Five buyers joined, the retried one among them once: the pool as the document
    // tells it, rebuilt once the node's clock is past its lifetime.
    app.clock.advance_secs(1);
    let doc: Value = app
        .client
        .get(app.url(&format!("/v1/events/{event}/queue")))
        .send()
        .await
        .expect("the node answers")
        .json()
        .await
        .expect("the queue document");
    assert_eq!(doc["pool_size"], json!(5), "{doc}");
    app.stop().await;
}

/// An event created and not opened: joins go into its pre-opening pool.
async fn scheduled_event(app: &TestApp) -> EventId {
    let body = serde_json::to_value(spec(0, 0, 200, 4)).expect("a spec");
    let res = app
        .post("/v1/events", &app.operator_key, &uuid(), body)
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let v: Value = res.json().await.expect("an event");
    EventId(v["event_id"].as_i64().expect("an id"))
}
