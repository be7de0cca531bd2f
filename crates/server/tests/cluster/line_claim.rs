//! The claim a node takes to open an event's line (cluster mode: two nodes, PostgreSQL,
//! Redis) lasts as long as the opening does. The tests hold the opening up in the
//! ledger (the journal of places locked by a session of their own). Held up for longer
//! than two terms of the claim, the node that opens keeps its claim and the other waits
//! instead of opening the same line beside it. When the claim is lost all the same
//! (its key gone from Redis, as a failover may lose it), the other node takes it over
//! and the first stops before writing more. Either way, once the lock goes, the pool is
//! drawn once: positions 1 to the pool's size.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use boxoffice_testkit::eventually;
use boxoffice_testkit::harness::http::call;
use futures::future::join_all;
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::{Connection, PgConnection, PgPool};
use tokio::process::Child;

use crate::common::BOXOFFICE;
use crate::lost_event::metric_sum;
use crate::{Backing, argv};

const OPERATOR: &str = "line-claim-operator-key-0123456";
const POOL: usize = 4;
/// How long the opening is held up: more than two terms of the claim (5 s each).
const STALL: Duration = Duration::from_secs(12);
/// The journal's insert, as it shows in `pg_stat_activity` while it waits.
const JOURNAL_INSERT: &str = "INSERT INTO line_places";

/// Two nodes whose event's opening is held up in the ledger's journal.
struct HeldOpening {
    backing: Backing,
    _nodes: Vec<(Child, String)>,
    urls: Vec<String>,
    c: reqwest::Client,
    event: i64,
    /// The pool's queue tickets.
    pool: Vec<String>,
    watch: PgPool,
    lock: PgConnection,
}

impl HeldOpening {
    /// Starts the nodes, fills the pool, locks the journal and opens the sale; returns
    /// once a node waits to journal the draw.
    async fn start() -> HeldOpening {
        let extra = "[engine]\nadmission_interval_ms = 100\n\
                     [engine.waiting.join_per_ip]\nper_s = 0\nburst = 0\n";
        let backing = Backing::new(OPERATOR, extra);
        let args = backing.args();
        let argv = argv(&args);
        let nodes: Vec<_> = join_all((0..2).map(|_| BOXOFFICE.start(&argv))).await;
        let urls: Vec<String> = nodes.iter().map(|(_, u)| u.clone()).collect();
        // No idle connections kept: the node closes them while the opening is held up.
        let c = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let spec = serde_json::to_value(crate::common::spec(10, 10, 0, 4)).unwrap();
        let url = format!("{}/v1/events", urls[0]);
        let (s, e) = call(&c, Method::POST, url, OPERATOR, spec).await;
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
        let (s, b) = call(&c, Method::POST, url, OPERATOR, json!({})).await;
        assert_eq!(s, 200, "{b}");
        let opening = HeldOpening {
            backing,
            _nodes: nodes,
            urls,
            c,
            event,
            pool,
            watch,
            lock,
        };
        opening.journaling_reaches(1, Duration::from_secs(30)).await;
        opening
    }

    /// How many sessions of the database wait for a lock in the journal's insert now.
    async fn journaling(&self) -> i64 {
        sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'
               AND position($1 in query) > 0",
        )
        .bind(JOURNAL_INSERT)
        .fetch_one(&self.watch)
        .await
        .expect("pg_stat_activity answers")
    }

    async fn journaling_reaches(&self, n: i64, within: Duration) {
        let what = format!("{n} nodes journaling the draw");
        eventually(what, within, Duration::from_millis(20), || async {
            let now = self.journaling().await;
            if now >= n { Ok(now) } else { Err(now) }
        })
        .await;
    }

    /// Lets the opening go on, then checks the pool was drawn once, 1..=POOL.
    async fn release_and_check(&mut self) {
        sqlx::raw_sql("COMMIT")
            .execute(&mut self.lock)
            .await
            .unwrap();
        let mut positions = BTreeSet::new();
        for (i, ticket) in self.pool.iter().enumerate() {
            let url = format!("{}/v1/queue/status", self.urls[i % 2]);
            let c = &self.c;
            let st = eventually(
                "a drawn position for a pool member",
                Duration::from_secs(30),
                Duration::from_millis(50),
                || {
                    let url = url.clone();
                    async move {
                        let (s, st) = call(c, Method::GET, url, ticket, Value::Null).await;
                        if s == 200 && st["position"].is_u64() {
                            Ok(st)
                        } else {
                            Err(st)
                        }
                    }
                },
            )
            .await;
            positions.insert(st["position"].as_u64().unwrap());
        }
        assert_eq!(positions, (1..=POOL as u64).collect());
    }
}

/// A new buyer in the event's pool: their queue ticket.
async fn join(c: &reqwest::Client, url: &str, event: i64) -> String {
    let (s, b) = call(c, Method::POST, format!("{url}/v1/buyers"), "", json!({})).await;
    assert_eq!(s, 201, "{b}");
    let token = b["token"].as_str().expect("a buyer token").to_string();
    let queue = format!("{url}/v1/events/{event}/queue");
    let (s, j) = call(c, Method::POST, queue, &token, json!({})).await;
    assert_eq!(s, 200, "{j}");
    assert_eq!(j["position"], Value::Null, "the pool is not drawn yet: {j}");
    j["queue_ticket"].as_str().unwrap().to_string()
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 240)]
async fn an_opening_slower_than_the_line_claim_keeps_it_and_no_other_node_opens_beside_it() {
    let mut opening = HeldOpening::start().await;
    let until = Instant::now() + STALL;
    let mut most = 0;
    while Instant::now() < until {
        most = most.max(opening.journaling().await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(most, 1, "a second node opened the line beside the first");
    opening.release_and_check().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 240)]
async fn a_node_whose_line_claim_was_taken_over_stops_before_writing_more() {
    let mut opening = HeldOpening::start().await;
    let redis = redis::Client::open(opening.backing.redis.url.as_str()).unwrap();
    let mut conn = redis.get_multiplexed_async_connection().await.unwrap();
    let key = format!(
        "{{{}:q:{}}}:claim",
        opening.backing.redis.prefix, opening.event
    );
    let gone: i64 = redis::cmd("DEL")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(gone, 1, "the claim was held in Redis");
    // The other node takes the claim and starts the same opening; the first one's next
    // renewal finds the claim someone else's, and it stops.
    opening.journaling_reaches(2, Duration::from_secs(30)).await;
    let lost = "boxoffice_line_claims_lost_total";
    eventually(
        "the first holder stopped",
        Duration::from_secs(30),
        Duration::from_millis(50),
        || async {
            let n = metric_sum(&opening.c, &opening.urls, lost).await;
            if n >= 1.0 { Ok(n) } else { Err(n) }
        },
    )
    .await;
    opening.release_and_check().await;
    let stopped = metric_sum(&opening.c, &opening.urls, lost).await;
    assert_eq!(stopped, 1.0, "one holder stopped");
}
