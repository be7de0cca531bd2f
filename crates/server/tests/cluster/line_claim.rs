//! The claim a node takes to open an event's line (cluster mode: two nodes, PostgreSQL,
//! Redis) lasts as long as the opening does. The test holds the opening up in the
//! ledger (the journal of places locked by a session of its own) for longer than two
//! terms of the claim: the node that opens keeps its claim, and the other waits
//! instead of opening the same line beside it. Once the lock goes, the pool is drawn
//! once, positions 1 to the pool's size.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use boxoffice_testkit::eventually;
use boxoffice_testkit::harness::http::call;
use futures::future::join_all;
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::{Connection, PgConnection, PgPool};

use crate::common::BOXOFFICE;
use crate::{Backing, argv};

const OPERATOR: &str = "line-claim-operator-key-0123456";
const POOL: usize = 4;
/// How long the opening is held up: more than two terms of the claim (5 s each).
const STALL: Duration = Duration::from_secs(12);
/// The journal's insert, as it shows in `pg_stat_activity` while it waits.
const JOURNAL_INSERT: &str = "INSERT INTO line_places";

/// How many sessions of the database wait for a lock in the journal's insert now.
async fn journaling(watch: &PgPool) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity
         WHERE datname = current_database() AND wait_event_type = 'Lock'
           AND position($1 in query) > 0",
    )
    .bind(JOURNAL_INSERT)
    .fetch_one(watch)
    .await
    .expect("pg_stat_activity answers")
}

async fn join(c: &reqwest::Client, url: &str, event: i64) -> (String, String) {
    let (s, b) = call(c, Method::POST, format!("{url}/v1/buyers"), "", json!({})).await;
    assert_eq!(s, 201, "{b}");
    let token = b["token"].as_str().expect("a buyer token").to_string();
    let queue = format!("{url}/v1/events/{event}/queue");
    let (s, j) = call(c, Method::POST, queue, &token, json!({})).await;
    assert_eq!(s, 200, "{j}");
    assert_eq!(j["position"], Value::Null, "the pool is not drawn yet: {j}");
    (token, j["queue_ticket"].as_str().unwrap().to_string())
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 240)]
async fn an_opening_slower_than_the_line_claim_keeps_it_and_no_other_node_opens_beside_it() {
    let extra = "[engine]\nadmission_interval_ms = 100\n\
                 [engine.waiting.join_per_ip]\nper_s = 0\nburst = 0\n";
    let backing = Backing::new(OPERATOR, extra);
    let args = backing.args();
    let argv = argv(&args);
    let nodes: Vec<_> =
        join_all((0..2).map(|_| BOXOFFICE.start_said(&argv))).await;
    let urls: Vec<String> = nodes.iter().map(|(_, u, _)| u.clone()).collect();
    let c = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let spec = serde_json::to_value(crate::common::spec(10, 10, 0, 4)).unwrap();
    let (s, e) = call(&c, Method::POST, format!("{}/v1/events", urls[0]), OPERATOR, spec).await;
    assert_eq!(s, 201, "{e}");
    let event = e["event_id"].as_i64().expect("an event id");
    let mut pool = Vec::new();
    for i in 0..POOL {
        pool.push(join(&c, &urls[i % 2], event).await);
    }

    // The journal of places is locked: whoever opens the line stalls in its draw.
    let watch = PgPool::connect(&backing.db.url).await.unwrap();
    let mut lock = PgConnection::connect(&backing.db.url).await.unwrap();
    sqlx::raw_sql("BEGIN; LOCK TABLE line_places IN EXCLUSIVE MODE")
        .execute(&mut lock)
        .await
        .unwrap();
    let url = format!("{}/v1/events/{event}/open", urls[1]);
    assert_eq!(call(&c, Method::POST, url, OPERATOR, json!({})).await.0, 200);
    eventually(
        "a node opening the line",
        Duration::from_secs(30),
        Duration::from_millis(20),
        || async {
            let n = journaling(&watch).await;
            if n > 0 { Ok(n) } else { Err(n) }
        },
    )
    .await;
    let until = Instant::now() + STALL;
    let mut most = 0;
    while Instant::now() < until {
        most = most.max(journaling(&watch).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    sqlx::raw_sql("COMMIT").execute(&mut lock).await.unwrap();
    assert_eq!(most, 1, "a second node opened the line beside the first");

    // The opening finishes: every pool member has a drawn place, 1..=POOL.
    let mut positions = BTreeSet::new();
    for (i, (_, ticket)) in pool.iter().enumerate() {
        let url = format!("{}/v1/queue/status", urls[i % 2]);
        let st = eventually(
            "a drawn position for a pool member",
            Duration::from_secs(30),
            Duration::from_millis(50),
            || {
                let (c, url) = (&c, url.clone());
                async move {
                    let (s, st) = call(c, Method::GET, url, ticket, Value::Null).await;
                    if s == 200 && st["position"].is_u64() { Ok(st) } else { Err(st) }
                }
            },
        )
        .await;
        positions.insert(st["position"].as_u64().unwrap());
    }
    assert_eq!(positions, (1..=POOL as u64).collect());
    drop(nodes);
}
