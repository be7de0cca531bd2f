//! Faults in cluster mode under a steady load of holds and checkouts: the event's Redis
//! keys deleted, Redis restarted, a node killed with -9, PostgreSQL connections
//! terminated. Whatever buyers saw (recorded per phase), no seat is sold twice, nobody is
//! charged without a seat, and the system recovers by itself.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::process::{RedisPrefix, TestDatabase, call, path_str, run_command, start_server};
use parking_lot::Mutex;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

const OPERATOR: &str = "fault-test-operator-key-012345";

/// A Redis of the test's own, so restarting it disturbs nobody else.
struct OwnRedis {
    port: u16,
    child: Option<Child>,
}

impl OwnRedis {
    async fn start(port: u16) -> OwnRedis {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server is installed (these tests never skip)");
        for _ in 0..100 {
            if std::process::Command::new("redis-cli")
                .args(["-p", &port.to_string(), "ping"])
                .output()
                .is_ok_and(|o| o.stdout.starts_with(b"PONG"))
            {
                return OwnRedis {
                    port,
                    child: Some(child),
                };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("redis-server on port {port} did not start");
    }

    async fn restart(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill().await;
        }
        *self = OwnRedis::start(self.port).await;
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

type Seen = Arc<Mutex<BTreeMap<(String, String), usize>>>;

/// One buyer's whole purchase, retried on other nodes; every answer is recorded.
async fn shop(
    c: &reqwest::Client,
    nodes: &[String],
    event: i64,
    n: usize,
    phase: &Mutex<String>,
    seen: &Seen,
) {
    let note = |step: &str, status: u16| {
        let p = phase.lock().clone();
        *seen
            .lock()
            .entry((p, format!("{step} {status}")))
            .or_default() += 1;
    };
    let node = |k: usize| nodes[(n + k) % nodes.len()].clone();
    let (s, b) = call(
        c,
        Method::POST,
        format!("{}/v1/buyers", node(0)),
        "",
        json!({}),
    )
    .await;
    note("buyer", s);
    let Some(token) = b["token"].as_str() else {
        return;
    };
    let (s, j) = call(
        c,
        Method::POST,
        format!("{}/v1/events/{event}/queue", node(1)),
        token,
        json!({}),
    )
    .await;
    note("join", s);
    let Some(ticket) = j["queue_ticket"].as_str() else {
        return;
    };
    let mut admission = None;
    for _ in 0..40 {
        let (s, st) = call(
            c,
            Method::GET,
            format!("{}/v1/queue/status", node(2)),
            ticket,
            Value::Null,
        )
        .await;
        if let Some(a) = st["admission_token"].as_str() {
            admission = Some(a.to_string());
            break;
        }
        note("status", s);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let Some(admission) = admission else { return };
    let body = json!({"best_available": {"section": "A", "quantity": 1}});
    let (s, h) = call(
        c,
        Method::POST,
        format!("{}/v1/events/{event}/holds", node(3)),
        &admission,
        body,
    )
    .await;
    note("hold", s);
    let Some(hold) = h["hold_id"].as_str() else {
        return;
    };
    let (s, _) = call(
        c,
        Method::POST,
        format!("{}/v1/holds/{hold}/checkout", node(4)),
        token,
        json!({"payment_method": "pm_card_visa"}),
    )
    .await;
    note("checkout", s);
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_under_load_sell_no_seat_twice_charge_nobody_without_a_seat_and_heal() {
    let dir = tempfile::tempdir().unwrap();
    let db = TestDatabase::create();
    let mut redis = OwnRedis::start(free_port()).await;
    let redis_url = format!("redis://127.0.0.1:{}", redis.port);
    let prefix = RedisPrefix::new(&redis_url);
    let config = dir.path().join("boxoffice.toml");
    let toml = format!(
        "operator_key = \"{OPERATOR}\"\npayments = \"fake\"\nredis_prefix = \"{}\"\n[engine]\nadmission_interval_ms = 50\nrecovery_after_s = 1\n\
         [workers]\nexpiry_interval_ms = 200\nrecovery_interval_ms = 300\n[postgres]\nacquire_timeout_ms = 2000\n",
        prefix.prefix
    );
    std::fs::write(&config, toml).unwrap();
    let args: Vec<String> = [
        "--data-dir",
        path_str(dir.path()),
        "--config",
        path_str(&config),
        "--ledger",
        &db.url,
        "--hot",
        &redis_url,
    ]
    .map(String::from)
    .to_vec();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut nodes: Vec<(Child, String)> =
        futures::future::join_all((0..3).map(|_| start_server(&argv))).await;
    let urls: Vec<String> = nodes.iter().map(|(_, u)| u.clone()).collect();
    let c = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let spec = serde_json::to_value(common::spec(20, 100, 0, 4)).unwrap();
    let (_, e) = call(
        &c,
        Method::POST,
        format!("{}/v1/events", urls[0]),
        OPERATOR,
        spec,
    )
    .await;
    let event = e["event_id"].as_i64().expect("event created");
    call(
        &c,
        Method::POST,
        format!("{}/v1/events/{event}/open", urls[0]),
        OPERATOR,
        json!({}),
    )
    .await;

    let phase = Arc::new(Mutex::new("steady".to_string()));
    let seen: Seen = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let live = Arc::new(Mutex::new(urls.clone()));
    let shoppers: Vec<_> = (0..12)
        .map(|w| {
            let (c, phase, seen, stop, live) = (
                c.clone(),
                phase.clone(),
                seen.clone(),
                stop.clone(),
                live.clone(),
            );
            tokio::spawn(async move {
                let mut n = w;
                while !stop.load(Ordering::Relaxed) {
                    let nodes = live.lock().clone();
                    shop(&c, &nodes, event, n, &phase, &seen).await;
                    n += 12;
                }
            })
        })
        .collect();
    let set_phase = |name: &str| *phase.lock() = name.to_string();
    tokio::time::sleep(Duration::from_secs(3)).await;
    set_phase("redis keys deleted");
    prefix.delete_keys();
    tokio::time::sleep(Duration::from_secs(3)).await;
    set_phase("redis restarted");
    redis.restart().await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    set_phase("node killed");
    live.lock().retain(|u| *u != urls[2]);
    let (mut killed, _) = nodes.pop().unwrap();
    killed.start_kill().unwrap();
    let _ = killed.wait().await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    set_phase("postgres connections terminated");
    db.terminate_connections();
    tokio::time::sleep(Duration::from_secs(3)).await;
    set_phase("after");
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    for s in shoppers {
        let _ = s.await;
    }

    let table = seen.lock().clone();
    for ((p, what), n) in &table {
        eprintln!("{p:<34} {what:<14} {n}");
    }
    // Nobody got a 500: failures during faults are 503 (retry) or transport errors.
    assert!(
        table.keys().all(|(_, w)| !w.ends_with(" 500")),
        "a 500 was served: {table:?}"
    );
    // It healed by itself: purchases complete after the last fault.
    assert!(
        table
            .get(&("after".into(), "checkout 201".into()))
            .copied()
            .unwrap_or(0)
            > 0,
        "no purchase completed after the faults"
    );

    let mut argv = vec!["audit", "--json"];
    argv.extend(args.iter().map(String::as_str));
    let mut report = Value::Null;
    for _ in 0..60 {
        let (clean, r) = run_command(&argv).await;
        report = r;
        if clean && report["orders_in_flight"] == json!(0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(
        report["orders_in_flight"],
        json!(0),
        "recovery settles every order: {report}"
    );
    assert_eq!(
        report["violations"],
        json!([]),
        "no seat sold twice, no charge without a seat, hot store agrees: {report}"
    );
    eprintln!("audit after the faults: {report}");
    drop(nodes);
}
