//! The expiry sweep across nodes: three nodes share one Redis (of the test's own, so
//! its command counts are this test's alone). Each hold expires exactly once (the
//! nodes' expiry counters add up to the holds taken, and every seat is free again), and
//! the sweep's Redis commands do not grow with the nodes: one node holds each event's
//! sweep lease, the others ask again only when it may have lapsed.

use crate::common::BOXOFFICE;
use crate::lost_event::metric_sum;
use crate::{Backing, argv};
use boxoffice_testkit::eventually;
use boxoffice_testkit::harness::free_port;
use boxoffice_testkit::harness::http::{admission_token, call};
use boxoffice_testkit::harness::redis::OwnRedis;
use std::collections::BTreeMap;
use std::time::Duration;

use futures::future::join_all;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

const OPERATOR: &str = "sweeps-test-operator-key-012345";
const HOLDS: usize = 30;
/// How long each count of Redis commands runs.
const WINDOW: Duration = Duration::from_secs(4);

/// What Redis served during `WINDOW`, as MONITOR shows it: (commands, expiry sweep
/// leases asked per node).
async fn watch(port: u16) -> (usize, BTreeMap<String, usize>) {
    let mut child = tokio::process::Command::new("redis-cli")
        .args(["-p", &port.to_string(), "monitor"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("redis-cli runs");
    let mut out = child.stdout.take().expect("piped stdout");
    let reader = tokio::spawn(async move {
        let mut text = String::new();
        let _ = out.read_to_string(&mut text).await;
        text
    });
    tokio::time::sleep(WINDOW).await;
    child.kill().await.expect("redis-cli stops");
    let text = reader.await.expect("the reader");
    let commands: Vec<&str> = text.lines().filter(|l| l.contains("] \"")).collect();
    let mut leases = BTreeMap::new();
    for line in &commands {
        // ... "evalsha" "<sha>" "1" "{prefix:event}:lease:expiry" "<node>" "<ttl>"
        let args: Vec<&str> = line.split("\" \"").collect();
        if let Some(i) = args.iter().position(|a| a.ends_with(":lease:expiry")) {
            let node = args.get(i + 1).copied().unwrap_or_default();
            *leases.entry(node.to_string()).or_default() += 1;
        }
    }
    (commands.len(), leases)
}

async fn hold_one(c: &reqwest::Client, node: &str, event: i64) -> String {
    let (_, b) = call(c, Method::POST, format!("{node}/v1/buyers"), "", json!({})).await;
    let token = b["token"].as_str().expect("a buyer").to_string();
    let queue = format!("{node}/v1/events/{event}/queue");
    let (_, j) = call(c, Method::POST, queue, &token, json!({})).await;
    let ticket = j["queue_ticket"].as_str().expect("a queue ticket");
    let admission = admission_token(c, node, ticket).await;
    let body = json!({"best_available": {"section": "A", "quantity": 1}});
    let holds = format!("{node}/v1/events/{event}/holds");
    let (s, h) = call(c, Method::POST, holds, &admission, body).await;
    assert_eq!(s, 201, "{h}");
    h["hold_id"].as_str().unwrap().to_string()
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn three_nodes_expire_each_hold_once_and_sweep_no_more_than_one() {
    let redis = OwnRedis::start(free_port()).await;
    let redis_url = format!("redis://127.0.0.1:{}", redis.port);
    // Sweeps often, everything else seldom, so the count is mostly the sweep's.
    let extra = "[engine]\nadmission_interval_ms = 1000\n\
        [workers]\nexpiry_interval_ms = 25\ndrift_repair_interval_ms = 200\n";
    let backing = Backing::on(&redis_url, OPERATOR, extra);
    let args = backing.args();
    let argv = argv(&args);
    let mut nodes = vec![BOXOFFICE.start(&argv).await];
    let c = boxoffice_testkit::harness::http::client();
    let mut spec = serde_json::to_value(crate::common::spec(10, 10, 0, 4)).unwrap();
    spec["sale"]["hold_ttl_s"] = json!(10);
    let url = format!("{}/v1/events", nodes[0].1);
    let (s, e) = call(&c, Method::POST, url, OPERATOR, spec).await;
    assert_eq!(s, 201, "{e}");
    let event = e["event_id"].as_i64().unwrap();
    let open = format!("{}/v1/events/{event}/open", nodes[0].1);
    assert_eq!(
        call(&c, Method::POST, open, OPERATOR, json!({})).await.0,
        200
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (one, leases) = watch(redis.port).await;
    assert_eq!(leases.len(), 1, "{leases:?}");
    let ticks_one = *leases.values().next().unwrap();

    nodes.extend(join_all((0..2).map(|_| BOXOFFICE.start(&argv))).await);
    let urls: Vec<String> = nodes.iter().map(|(_, u)| u.clone()).collect();
    // Past the newcomers' first look at the lease.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (three, leases) = watch(redis.port).await;
    eprintln!(
        "Redis commands in {WINDOW:?}: one node {one} ({ticks_one} sweeps), \
         three nodes {three} (leases asked per node: {leases:?})"
    );
    // One node sweeps; the others ask for the lease about once per lease period.
    let mut asked: Vec<usize> = leases.values().copied().collect();
    asked.sort_unstable();
    let ticks_three = asked.pop().expect("someone sweeps");
    assert!(ticks_three >= 10, "the holder swept: {leases:?}");
    assert!(
        asked.iter().all(|&n| n <= 2),
        "only one node sweeps: {leases:?}"
    );
    // Per sweep, three nodes cost Redis no more than half again what one did (without
    // the lease, every node would run every step of every sweep: three times).
    let per_sweep = |n: usize, ticks: usize| n as f64 / ticks.max(1) as f64;
    assert!(
        per_sweep(three, ticks_three) < 1.5 * per_sweep(one, ticks_one),
        "three nodes cost {three} commands for {ticks_three} sweeps against {one} for \
         {ticks_one} with one: the sweep grew with the nodes"
    );

    let holds = join_all((0..HOLDS).map(|i| hold_one(&c, &urls[i % 3], event))).await;
    // The operator's stats read the hot store as it is now.
    let stats = format!("{}/v1/events/{event}/stats", urls[0]);
    let counts = || async {
        let (_, v) = call(&c, Method::GET, stats.clone(), OPERATOR, Value::Null).await;
        (v["counts"]["free"].clone(), v["counts"]["held"].clone())
    };
    // (On a slow machine the first holds may expire before the last are taken.)
    assert_ne!(counts().await, (json!(100), json!(0)), "holds were taken");
    let what = "every hold expired and its seat free again";
    eventually(
        what,
        Duration::from_secs(40),
        Duration::from_millis(250),
        || async {
            let now = counts().await;
            if now == (json!(100), json!(0)) {
                Ok(())
            } else {
                Err(now)
            }
        },
    )
    .await;
    // A node counts its sweep's holds just after the seats are free again: the sum may
    // trail the hot store for a moment, and must then come to exactly one a hold.
    let total = || metric_sum(&c, &urls, "boxoffice_holds_expired_total");
    let counted = "every expired hold counted by the node that expired it";
    let every = Duration::from_millis(100);
    eventually(counted, Duration::from_secs(10), every, || async {
        let n = total().await as usize;
        if n >= HOLDS { Ok(()) } else { Err(n) }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let expired = total().await;
    assert_eq!(
        expired as usize, HOLDS,
        "each hold expired once, by one node"
    );
    assert_eq!(holds.len(), HOLDS);
}
