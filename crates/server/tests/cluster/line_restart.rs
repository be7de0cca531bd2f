//! The waiting line survives a Redis restart (two nodes, PostgreSQL, a Redis of the
//! test's own): buyers join before and after opening, the pool is drawn, some buyers
//! are admitted; Redis is killed and started again empty. Every buyer keeps their
//! place (a join again answers the same position), whoever was admitted is admitted
//! again, the published draw is unchanged, the operator's admission override is back, a
//! newcomer goes after everyone, and admission goes on to the end of the line.

use crate::common::BOXOFFICE;
use crate::{Backing, argv};
use boxoffice_testkit::eventually;
use boxoffice_testkit::harness::free_port;
use boxoffice_testkit::harness::http::call;
use boxoffice_testkit::harness::redis::OwnRedis;
use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

const OPERATOR: &str = "line-restart-operator-key-0123";
const POOL: usize = 12;
const LATER: usize = 36;
/// Slow enough that the line is partly admitted when Redis goes.
const RATE_PER_S: u32 = 8;

struct Buyer {
    token: String,
    ticket: String,
    position: u64,
}

async fn new_buyer(c: &reqwest::Client, url: &str) -> String {
    let (s, b) = call(c, Method::POST, format!("{url}/v1/buyers"), "", json!({})).await;
    assert_eq!(s, 201, "{b}");
    b["token"].as_str().expect("a buyer token").to_string()
}

async fn join(c: &reqwest::Client, url: &str, event: i64, token: &str) -> Value {
    let url = format!("{url}/v1/events/{event}/queue");
    let what = format!("a join at {url}");
    // A join that meets the line being brought back is told to retry (503).
    eventually(
        what,
        Duration::from_secs(20),
        Duration::from_millis(50),
        || {
            let url = url.clone();
            async move {
                let (s, body) = call(c, Method::POST, url, token, json!({})).await;
                if s == 200 { Ok(body) } else { Err((s, body)) }
            }
        },
    )
    .await
}

async fn status(c: &reqwest::Client, url: &str, ticket: &str) -> (u16, Value) {
    let res = c
        .get(format!("{url}/v1/queue/status"))
        .bearer_auth(ticket)
        .send()
        .await
        .expect("the node answers");
    let s = res.status().as_u16();
    (s, res.json().await.unwrap_or(Value::Null))
}

async fn fairness(c: &reqwest::Client, url: &str, event: i64) -> Value {
    let url = format!("{url}/v1/events/{event}/queue/fairness");
    let (s, body) = call(c, Method::GET, url, "", Value::Null).await;
    assert_eq!(s, 200, "{body}");
    body
}

/// Who is admitted now, by asking each buyer's status.
async fn admitted(c: &reqwest::Client, urls: &[String], buyers: &[Buyer]) -> BTreeSet<u64> {
    let mut out = BTreeSet::new();
    for (i, b) in buyers.iter().enumerate() {
        let (s, st) = status(c, &urls[i % urls.len()], &b.ticket).await;
        if s == 200 && st["status"] == "admitted" {
            assert_eq!(st["position"], json!(b.position), "{st}");
            out.insert(b.position);
        }
    }
    out
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_redis_restart_mid_line_keeps_every_place_and_every_admission() {
    let mut redis = OwnRedis::start(free_port()).await;
    let redis_url = format!("redis://127.0.0.1:{}", redis.port);
    let extra = "[engine]\nadmission_interval_ms = 250\n\
                 [engine.waiting.join_per_ip]\nper_s = 0\nburst = 0\n";
    let backing = Backing::on(&redis_url, OPERATOR, extra);
    let args = backing.args();
    let argv = argv(&args);
    let nodes: Vec<_> =
        futures::future::join_all((0..2).map(|_| BOXOFFICE.start_said(&argv))).await;
    let urls: Vec<String> = nodes.iter().map(|(_, u, _)| u.clone()).collect();
    let c = boxoffice_testkit::harness::http::client();

    let mut spec = serde_json::to_value(crate::common::spec(10, 10, 0, 4)).unwrap();
    spec["sale"]["admission_rate_per_s"] = json!(RATE_PER_S);
    let url = format!("{}/v1/events", urls[0]);
    let (s, e) = call(&c, Method::POST, url, OPERATOR, spec).await;
    assert_eq!(s, 201, "{e}");
    let event = e["event_id"].as_i64().expect("an event id");

    // The pre-opening pool, through both nodes.
    let mut pool = Vec::new();
    for i in 0..POOL {
        let url = &urls[i % 2];
        let token = new_buyer(&c, url).await;
        let j = join(&c, url, event, &token).await;
        assert_eq!(j["position"], Value::Null, "the pool is not drawn yet: {j}");
        pool.push((token, j["queue_ticket"].as_str().unwrap().to_string()));
    }
    let commitment = fairness(&c, &urls[0], event).await["commitment"].clone();
    let url = format!("{}/v1/events/{event}/open", urls[1]);
    assert_eq!(
        call(&c, Method::POST, url, OPERATOR, json!({})).await.0,
        200
    );

    let mut buyers = Vec::new();
    for (i, (token, ticket)) in pool.into_iter().enumerate() {
        let url = urls[i % 2].clone();
        let what = "a drawn position for a pool member";
        let st = eventually(
            what,
            Duration::from_secs(20),
            Duration::from_millis(50),
            || {
                let (c, url, ticket) = (&c, url.clone(), ticket.clone());
                async move {
                    let (s, st) = status(c, &url, &ticket).await;
                    if s == 200 && st["position"].is_u64() {
                        Ok(st)
                    } else {
                        Err(st)
                    }
                }
            },
        )
        .await;
        let ticket = st["queue_ticket"].as_str().map_or(ticket, str::to_string);
        let position = st["position"].as_u64().unwrap();
        buyers.push(Buyer {
            token,
            ticket,
            position,
        });
    }
    for i in 0..LATER {
        let url = &urls[i % 2];
        let token = new_buyer(&c, url).await;
        let j = join(&c, url, event, &token).await;
        buyers.push(Buyer {
            token,
            ticket: j["queue_ticket"].as_str().unwrap().to_string(),
            position: j["position"].as_u64().expect("an open line places at once"),
        });
    }
    let total = (POOL + LATER) as u64;
    let positions: BTreeSet<u64> = buyers.iter().map(|b| b.position).collect();
    assert_eq!(positions, (1..=total).collect(), "unique dense positions");
    let drawn = fairness(&c, &urls[1], event).await;
    assert_eq!(drawn["commitment"], commitment);
    assert_eq!(drawn["placed"], json!(true));
    // The operator's admission override (the event's own rate, so admission goes on as
    // before), kept where the line is journaled.
    let url = format!("{}/v1/events/{event}/admission", urls[0]);
    let body = json!({"rate_per_s": RATE_PER_S});
    let (s, b) = call(&c, Method::PUT, url, OPERATOR, body).await;
    assert_eq!(s, 200, "{b}");

    // Some admitted, not everyone: then Redis goes.
    let what = "part of the line admitted";
    let before = eventually(
        what,
        Duration::from_secs(30),
        Duration::from_millis(100),
        || {
            let (c, urls, buyers) = (&c, &urls, &buyers);
            async move {
                let a = admitted(c, urls, buyers).await;
                if !a.is_empty() { Ok(a) } else { Err(a) }
            }
        },
    )
    .await;
    assert!(
        (before.len() as u64) < total,
        "the line was admitted before Redis could go; slow admission down"
    );
    // The nodes write to the new Redis as soon as it answers; a mark of the test's own
    // shows the old data is gone.
    redis.mark().await;
    redis.restart().await;
    assert!(!redis.is_marked().await, "the new Redis starts empty");

    // Everyone joins again through the other node: the same place each.
    for (i, b) in buyers.iter().enumerate() {
        let j = join(&c, &urls[(i + 1) % 2], event, &b.token).await;
        assert_eq!(
            j["position"],
            json!(b.position),
            "buyer {i} kept their place: {j}"
        );
    }
    let after = fairness(&c, &urls[0], event).await;
    assert_eq!(after["commitment"], commitment, "the same commitment");
    assert_eq!(after["seed"], drawn["seed"], "the same draw");
    let members = |f: &Value| -> BTreeSet<String> {
        f["pool"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(members(&after), members(&drawn), "the same pool published");
    assert_eq!(after["pool_size"], json!(POOL));
    // The override came back with the line.
    let url = format!("{}/v1/events/{event}/stats", urls[1]);
    let (s, stats) = call(&c, Method::GET, url, OPERATOR, Value::Null).await;
    assert_eq!(s, 200, "{stats}");
    assert_eq!(
        stats["waiting_room"]["control"]["rate_per_s"],
        json!(RATE_PER_S),
        "the operator's override survived the restart: {stats}"
    );

    // Whoever was admitted is admitted again, with the same position.
    let now = admitted(&c, &urls, &buyers).await;
    assert!(
        before.is_subset(&now),
        "admitted before the restart: {before:?}, after: {now:?}"
    );

    // A newcomer goes after everyone; admission goes on to the end of the line.
    let token = new_buyer(&c, &urls[0]).await;
    let j = join(&c, &urls[0], event, &token).await;
    assert_eq!(j["position"], json!(total + 1), "{j}");
    let last = j["queue_ticket"].as_str().unwrap().to_string();
    let what = "the newcomer admitted";
    eventually(
        what,
        Duration::from_secs(60),
        Duration::from_millis(200),
        || {
            let (c, url, last) = (&c, urls[1].clone(), last.clone());
            async move {
                let (s, st) = status(c, &url, &last).await;
                if s == 200 && st["status"] == "admitted" {
                    Ok(())
                } else {
                    Err(st)
                }
            }
        },
    )
    .await;
    let everyone = admitted(&c, &urls, &buyers).await;
    assert_eq!(everyone, positions, "the whole line admitted");
}
