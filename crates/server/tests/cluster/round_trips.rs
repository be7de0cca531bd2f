//! What a hold costs the hot store: a node in cluster mode (PostgreSQL ledger, Redis of
//! the test's own, so its command counts are this test's alone) takes holds over HTTP,
//! and Redis says how many commands each hold sent it: `INFO commandstats` counts the
//! scripts (it counts the commands a script calls as well, so it cannot tell those from
//! commands sent by a client), and MONITOR, which marks a script's commands `lua`,
//! shows that nothing else came from a client. A hold is one script that claims the
//! Idempotency-Key, holds and keeps the hold's outcome as the key's answer: one command,
//! one round trip. Before the script kept the outcome, a second command kept the
//! rendered answer (not waited on), and before the claim and the hold became one
//! script, a hold sent three and waited on all three. A buyer's release is the same:
//! one script claims the key, releases, counts the buyer's shopping finished and keeps
//! the outcome; it sent five before (`begin`, a read of the hold, the release, the
//! waiting room's count, the kept answer), all waited on.

use std::collections::BTreeMap;
use std::time::Duration;

use boxoffice_server::config::{HotChoice, LedgerChoice};
use boxoffice_testkit::eventually;
use boxoffice_testkit::harness::free_port;
use boxoffice_testkit::harness::postgres::TestDatabase;
use boxoffice_testkit::harness::redis::OwnRedis;
use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::common::{TestApp, spawn_with, spec, test_config, uuid};

/// Holds measured.
const HOLDS: usize = 40;
/// Commands Redis serves per hold: the script that claims, holds and keeps the outcome.
const COMMANDS_PER_HOLD: u64 = 1;
/// Commands Redis serves per release: the script that claims, releases and keeps the
/// outcome.
const COMMANDS_PER_RELEASE: u64 = 1;

/// Calls per command since Redis started, from `INFO commandstats`, without the
/// `INFO` calls that read them.
async fn commandstats(redis: &mut redis::aio::MultiplexedConnection) -> BTreeMap<String, u64> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(redis)
        .await
        .expect("INFO commandstats");
    // cmdstat_evalsha:calls=12,usec=...
    info.lines()
        .filter_map(|l| l.strip_prefix("cmdstat_"))
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let calls = rest
                .strip_prefix("calls=")?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            Some((name.to_string(), calls))
        })
        .filter(|(name, _)| name != "info")
        .collect()
}

/// The counts once Redis has served nothing new for a while (two readings 300 ms apart
/// agree): every command a finished request handed over has arrived.
async fn settled(redis: &mut redis::aio::MultiplexedConnection) -> BTreeMap<String, u64> {
    let last = std::cell::RefCell::new(commandstats(redis).await);
    let every = Duration::from_millis(300);
    eventually("Redis to go quiet", Duration::from_secs(60), every, || {
        let mut redis = redis.clone();
        let last = &last;
        async move {
            tokio::time::sleep(every).await;
            let now = commandstats(&mut redis).await;
            match now == *last.borrow() {
                true => Ok(()),
                false => Err(last.replace(now)),
            }
        }
    })
    .await;
    last.into_inner()
}

/// MONITOR on `port` from now until `marker` is echoed: the returned child is killed
/// once the handle has read the line that shows it, and the handle gives what MONITOR
/// showed before it. Redis feeds MONITOR in the order it serves commands, so every
/// command served before the marker is in that text however late MONITOR's reader runs.
async fn monitor(
    port: u16,
    marker: &str,
) -> (tokio::process::Child, tokio::task::JoinHandle<String>) {
    let mut child = tokio::process::Command::new("redis-cli")
        .args(["-p", &port.to_string(), "monitor"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("redis-cli runs");
    let mut out = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut first = String::new();
    out.read_line(&mut first).await.expect("MONITOR answers");
    assert_eq!(first.trim(), "OK", "MONITOR is on");
    let marker = marker.to_string();
    let reader = tokio::spawn(async move {
        let mut text = String::new();
        loop {
            let mut line = String::new();
            let read = out.read_line(&mut line).await.expect("MONITOR's output");
            assert!(read > 0, "MONITOR ended before the marker: {text}");
            if line.contains(&marker) {
                return text;
            }
            text.push_str(&line);
        }
    });
    (child, reader)
}

/// Sends `marker` through `redis` and waits (within a deadline) for MONITOR's reader to
/// reach it: what MONITOR showed before it.
async fn monitored_until(
    redis: &mut redis::aio::MultiplexedConnection,
    marker: &str,
    reader: tokio::task::JoinHandle<String>,
) -> String {
    let _: String = redis::cmd("ECHO")
        .arg(marker)
        .query_async(redis)
        .await
        .expect("ECHO");
    tokio::time::timeout(Duration::from_secs(30), reader)
        .await
        .expect("MONITOR shows the marker within 30 s")
        .expect("the MONITOR reader")
}

/// The commands clients sent, as MONITOR shows them (`… [0 127.0.0.1:port] "evalsha" …`;
/// a script's own are `[0 lua]`), without the `INFO` calls of this test: their names.
fn sent_by_clients(monitored: &str) -> Vec<String> {
    monitored
        .lines()
        .filter(|l| !l.contains(" lua] "))
        .filter_map(|l| {
            l.split_once("] \"")?
                .1
                .split('"')
                .next()
                .map(str::to_lowercase)
        })
        .filter(|name| name != "info")
        .collect()
}

/// A connection of the test's own to `redis`, for its counts.
pub(crate) async fn connection(redis: &OwnRedis) -> redis::aio::MultiplexedConnection {
    let url = format!("redis://127.0.0.1:{}", redis.port);
    let client = redis::Client::open(url.as_str()).expect("a Redis URL");
    client
        .get_multiplexed_async_connection()
        .await
        .expect("Redis answers")
}

/// What Redis served while the measured requests ran.
pub(crate) struct Measured {
    /// Scripts run (`INFO commandstats`).
    scripts: u64,
    /// Every command's count change, the commands the scripts called included.
    delta: BTreeMap<String, u64>,
    /// The commands the node sent (MONITOR).
    sent: Vec<String>,
}

/// Runs `requests` with `own` watched: its counts once settled before and after, and
/// MONITOR between.
pub(crate) async fn measure(
    own: &OwnRedis,
    redis: &mut redis::aio::MultiplexedConnection,
    requests: impl Future<Output = ()>,
) -> Measured {
    let before = settled(redis).await;
    let marker = format!("monitor-marker-{}", uuid());
    let (mut watching, watched) = monitor(own.port, &marker).await;
    requests.await;
    let after = settled(redis).await;
    let monitored = monitored_until(redis, &marker, watched).await;
    watching.kill().await.expect("MONITOR stops");
    let sent = sent_by_clients(&monitored);
    let scripts = |stats: &BTreeMap<String, u64>| stats.get("evalsha").copied().unwrap_or(0);
    let delta = after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0)))
        .filter(|(_, d)| *d > 0)
        .collect();
    Measured {
        scripts: scripts(&after) - scripts(&before),
        delta,
        sent,
    }
}

impl Measured {
    /// Prints what `n` requests (each a `one`: hold, release) cost, and checks each cost
    /// `per` scripts, sent by the node as that many commands and nothing else.
    pub(crate) fn expect(&self, n: usize, one: &str, per: u64) {
        let Measured {
            scripts,
            delta,
            sent,
        } = self;
        println!(
            "{n} {one}s: {scripts} scripts run (INFO commandstats, with the commands they \
             called: {delta:?}); {} commands sent by the node (MONITOR)",
            sent.len()
        );
        assert_eq!(*scripts, n as u64 * per, "scripts per {one}: {delta:?}");
        assert_eq!(
            sent.len() as u64,
            n as u64 * per,
            "commands per {one}: {sent:?}"
        );
        assert!(
            sent.iter().all(|c| c == "evalsha"),
            "only scripts: {sent:?}"
        );
    }
}

/// A node in cluster mode on `redis` and a fresh PostgreSQL database, its background
/// workers idle (they run once at start, then not for an hour).
pub(crate) async fn node(redis: &OwnRedis) -> (TestApp, TestDatabase) {
    let (app, db, _) = node_with_prefix(redis).await;
    (app, db)
}

/// `node`, and the Redis key prefix it runs under.
async fn node_with_prefix(redis: &OwnRedis) -> (TestApp, TestDatabase, String) {
    let url = format!("redis://127.0.0.1:{}", redis.port);
    let db = TestDatabase::create();
    let prefix = format!("rt{}", &uuid()[..8]);
    let configure = |c: &mut boxoffice_server::Config| {
        let hour = 3_600_000;
        c.ledger = LedgerChoice::Postgres(db.url.clone());
        c.hot = HotChoice::Redis(url.clone());
        c.redis_prefix = prefix.clone();
        c.workers.heartbeat_interval_ms = hour;
        c.workers.replay_prune_interval_ms = hour;
        c.workers.relay_interval_ms = hour;
        c.idempotency.node_dead_after_ms = 3 * hour as i64;
    };
    let dir = tempfile::tempdir().expect("a temp directory");
    let mut config = test_config(dir.path());
    configure(&mut config);
    boxoffice_server::backends::migrate(&config)
        .await
        .expect("the ledger migrates");
    (spawn_with(configure).await, db, prefix)
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_hold_costs_the_hot_store_one_script_and_nothing_else() {
    let own = OwnRedis::start(free_port()).await;
    let (app, _db) = node(&own).await;
    let event = app.create_event(&spec(0, 0, 200, 4)).await;
    let mut admitted = Vec::new();
    for _ in 0..=HOLDS {
        admitted.push(app.admitted_buyer(event).await.1);
    }
    let body = json!({"best_available": {"section": "GA", "quantity": 1}});
    let path = format!("/v1/events/{event}/holds");
    let hold = |admission: String| {
        let (app, body, path) = (&app, body.clone(), path.clone());
        async move {
            let res = app.post(&path, &admission, &uuid(), body).await;
            let status = res.status();
            let v: Value = res.json().await.unwrap_or(Value::Null);
            assert_eq!(status, StatusCode::CREATED, "{v}");
        }
    };
    // The first hold loads the scripts into this Redis (EVALSHA, NOSCRIPT, load).
    hold(admitted.pop().expect("a buyer")).await;
    let mut redis = connection(&own).await;
    let holds = async {
        for admission in admitted {
            hold(admission).await;
        }
    };
    let measured = measure(&own, &mut redis, holds).await;
    measured.expect(HOLDS, "hold", COMMANDS_PER_HOLD);
    app.stop().await;
}

/// A buyer's DELETE of their hold under `key`.
async fn release(app: &TestApp, token: &str, hold: &str, key: &str) -> reqwest::Response {
    app.client
        .delete(app.url(&format!("/v1/holds/{hold}")))
        .bearer_auth(token)
        .header("Idempotency-Key", key)
        .send()
        .await
        .expect("the node answers")
}

/// Holds one GA unit for each of `n` new buyers: their buyer tokens and hold ids.
async fn held(app: &TestApp, event: boxoffice_domain::EventId, n: usize) -> Vec<(String, String)> {
    let body = json!({"best_available": {"section": "GA", "quantity": 1}});
    let mut out = Vec::new();
    for _ in 0..n {
        let (token, admission) = app.admitted_buyer(event).await;
        let res = app.hold(event, &admission, body.clone()).await;
        assert_eq!(res.status(), StatusCode::CREATED);
        let v: Value = res.json().await.expect("a hold");
        out.push((token, v["hold_id"].as_str().expect("an id").to_string()));
    }
    out
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_release_costs_the_hot_store_one_script_and_nothing_else() {
    let own = OwnRedis::start(free_port()).await;
    let (app, _db, prefix) = node_with_prefix(&own).await;
    let event = app.create_event(&spec(0, 0, 200, 4)).await;
    let mut holds = held(&app, event, HOLDS + 1).await;
    // The first release loads its script into this Redis (EVALSHA, NOSCRIPT, load).
    let (token, hold) = holds.pop().expect("a hold");
    assert_eq!(
        release(&app, &token, &hold, &uuid()).await.status(),
        StatusCode::OK
    );
    let mut redis = connection(&own).await;
    let releases = async {
        for (token, hold) in &holds {
            let res = release(&app, token, hold, &uuid()).await;
            let status = res.status();
            let v: Value = res.json().await.unwrap_or(Value::Null);
            assert_eq!(
                (status, &v["status"]),
                (StatusCode::OK, &json!("released")),
                "{v}"
            );
        }
    };
    let measured = measure(&own, &mut redis, releases).await;
    measured.expect(HOLDS, "release", COMMANDS_PER_RELEASE);
    let counts = app.counts(event).await;
    assert_eq!(
        (counts["held"].clone(), counts["active_holds"].clone()),
        (json!(0), json!(0))
    );
    // Each release counted its buyer's shopping finished, in the same script.
    let finished: u64 = redis::cmd("HGET")
        .arg(format!("{{{prefix}:q:{event}}}:state"))
        .arg("finished")
        .query_async(&mut redis)
        .await
        .expect("the line's state");
    assert_eq!(finished, HOLDS as u64 + 1, "every release counted once");
    app.stop().await;
}

/// A release's key replays its answer in cluster mode: of a buyer's clicks sent at once
/// with one key exactly one runs (the others are in flight or replay it), a retry after
/// another buyer took the seats replays the answer and gives back nothing of theirs,
/// two keys racing on one hold both answer it released with the seats given back once,
/// and another buyer's release is not found, changing nothing.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_releases_key_replays_its_answer_and_releases_nothing_twice_in_cluster_mode() {
    let own = OwnRedis::start(free_port()).await;
    let (app, _db) = node(&own).await;
    let event = app.create_event(&spec(0, 0, 2, 4)).await;
    let hold_both = |admission: String| {
        let app = &app;
        async move {
            let body = json!({"best_available": {"section": "GA", "quantity": 2}});
            let res = app.hold(event, &admission, body).await;
            assert_eq!(res.status(), StatusCode::CREATED);
            let v: Value = res.json().await.expect("a hold");
            v["hold_id"].as_str().expect("an id").to_string()
        }
    };
    let (token, admission) = app.admitted_buyer(event).await;
    let hold = hold_both(admission).await;
    let key = uuid();
    let clicks = (0..5).map(|_| release(&app, &token, &hold, &key));
    let mut released = 0;
    for res in join_all(clicks).await {
        let status = res.status();
        let v: Value = res.json().await.unwrap();
        match status {
            StatusCode::OK => {
                assert_eq!(v["status"], "released", "{v}");
                released += 1;
            }
            StatusCode::CONFLICT => assert_eq!(v["error"], "request_in_progress"),
            other => panic!("unexpected {other}: {v}"),
        }
    }
    assert!(released >= 1, "one click released");
    assert_eq!(app.counts(event).await["held"], json!(0));
    // Another buyer takes both seats; the retry replays and leaves them held.
    let (other_token, other_admission) = app.admitted_buyer(event).await;
    let theirs = hold_both(other_admission).await;
    let again = release(&app, &token, &hold, &key).await;
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(again.headers().get("idempotent-replayed").unwrap(), "true");
    assert_eq!(again.json::<Value>().await.unwrap()["hold_id"], json!(hold));
    assert_eq!(app.counts(event).await["held"], json!(2));
    // Someone else's hold is not found, and stays held.
    let stranger = release(&app, &token, &theirs, &uuid()).await;
    assert_eq!(stranger.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        stranger.json::<Value>().await.unwrap()["error"],
        "hold_not_found"
    );
    assert_eq!(app.counts(event).await["held"], json!(2));
    // Two keys race on one hold: both answer it released, its seats come back once.
    let (k1, k2) = (uuid(), uuid());
    let (a, b) = tokio::join!(
        release(&app, &other_token, &theirs, &k1),
        release(&app, &other_token, &theirs, &k2)
    );
    for res in [a, b] {
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.json::<Value>().await.unwrap()["status"], "released");
    }
    let counts = app.counts(event).await;
    assert_eq!(
        (
            counts["held"].clone(),
            counts["free"].clone(),
            counts["active_holds"].clone()
        ),
        (json!(0), json!(2), json!(0))
    );
    app.stop().await;
}

/// The replays of a hold are those of every write, with the claim and the hold in one
/// script: of a buyer's clicks sent at once with one key exactly one holds (the others
/// are in flight or replay it), a later click replays the answer, and the key with
/// another body is refused, changing nothing.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_holds_key_replays_its_answer_and_refuses_another_body_in_cluster_mode() {
    let own = OwnRedis::start(free_port()).await;
    let (app, _db) = node(&own).await;
    let event = app.create_event(&spec(2, 10, 0, 4)).await;
    let (_, admission) = app.admitted_buyer(event).await;
    let key = uuid();
    let body = json!({"best_available": {"section": "A", "quantity": 2}});
    let path = format!("/v1/events/{event}/holds");
    let clicks = (0..5).map(|_| app.post(&path, &admission, &key, body.clone()));
    let mut hold_ids = Vec::new();
    for res in join_all(clicks).await {
        let status = res.status();
        let v: Value = res.json().await.unwrap();
        match status {
            StatusCode::CREATED => hold_ids.push(v["hold_id"].as_str().unwrap().to_string()),
            StatusCode::CONFLICT => assert_eq!(v["error"], "request_in_progress"),
            other => panic!("unexpected {other}: {v}"),
        }
    }
    hold_ids.dedup();
    assert_eq!(hold_ids.len(), 1, "every success names the same hold");
    let res = app.post(&path, &admission, &key, body.clone()).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(res.headers().get("idempotent-replayed").unwrap(), "true");
    assert_eq!(
        res.json::<Value>().await.unwrap()["hold_id"],
        json!(hold_ids[0])
    );
    let counts = app.counts(event).await;
    assert_eq!(
        (counts["active_holds"].clone(), counts["held"].clone()),
        (json!(1), json!(2))
    );
    let other = json!({"best_available": {"section": "A", "quantity": 1}});
    let res = app.post(&path, &admission, &key, other).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        res.json::<Value>().await.unwrap()["error"],
        "idempotency_key_reused"
    );
    // A refusal found before the store (no such section) is kept as the key's answer.
    let missing = json!({"best_available": {"section": "NOPE", "quantity": 1}});
    let refused_key = uuid();
    let first = app
        .post(&path, &admission, &refused_key, missing.clone())
        .await;
    assert_eq!(first.status(), StatusCode::NOT_FOUND);
    let again = app.post(&path, &admission, &refused_key, missing).await;
    assert_eq!(again.status(), StatusCode::NOT_FOUND);
    assert_eq!(again.headers().get("idempotent-replayed").unwrap(), "true");
    assert_eq!(app.counts(event).await["held"], json!(2));
    app.stop().await;
}

/// A hold's outcome (and a release's) is kept by its own script in the hot store's
/// terms, and a retry is answered from it as the first request was answered: the same
/// status and the same bytes, a success and a refusal alike, even once the hold has
/// ended (the answer is the one given then, not the hold as it is now).
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_kept_outcome_replays_byte_for_byte_even_after_the_hold_ended() {
    let own = OwnRedis::start(free_port()).await;
    let (app, _db) = node(&own).await;
    let event = app.create_event(&spec(0, 0, 2, 4)).await;
    let path = format!("/v1/events/{event}/holds");
    let both = json!({"best_available": {"section": "GA", "quantity": 2}});
    let (token, admission) = app.admitted_buyer(event).await;
    // Both admitted first: an event with no seat left admits nobody.
    let (_, late) = app.admitted_buyer(event).await;
    let key = uuid();
    let first = app.post(&path, &admission, &key, both.clone()).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first = first.bytes().await.expect("a body");
    let hold: Value = serde_json::from_slice(&first).expect("JSON");
    // The other buyer is refused: no seat is left.
    let late_key = uuid();
    let refused = app.post(&path, &late, &late_key, both.clone()).await;
    assert_eq!(refused.status(), StatusCode::CONFLICT);
    let refused = refused.bytes().await.expect("a body");
    // The first buyer gives the seats back; their retry still answers the hold as held.
    let hold_id = hold["hold_id"].as_str().expect("an id");
    let release_key = uuid();
    let given_back = release(&app, &token, hold_id, &release_key).await;
    assert_eq!(given_back.status(), StatusCode::OK);
    let given_back = given_back.bytes().await.expect("a body");
    let again = release(&app, &token, hold_id, &release_key).await;
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(again.headers().get("idempotent-replayed").unwrap(), "true");
    assert_eq!(again.bytes().await.expect("a body"), given_back);
    let again = app.post(&path, &admission, &key, both.clone()).await;
    assert_eq!(again.status(), StatusCode::CREATED);
    assert_eq!(again.headers().get("idempotent-replayed").unwrap(), "true");
    assert_eq!(again.bytes().await.expect("a body"), first);
    // The refused buyer's retry is refused as it was, though seats are free now.
    let again = app.post(&path, &late, &late_key, both).await;
    assert_eq!(again.status(), StatusCode::CONFLICT);
    assert_eq!(again.headers().get("idempotent-replayed").unwrap(), "true");
    assert_eq!(again.bytes().await.expect("a body"), refused);
    assert_eq!(app.counts(event).await["held"], json!(0));
    app.stop().await;
}
