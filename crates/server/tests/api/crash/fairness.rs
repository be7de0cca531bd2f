//! P7 across a crash: an embedded server killed with -9 before its event opens keeps the
//! event's seed and its pre-opening pool. After the restart, opening reveals the seed
//! whose hash was published before the crash, the pool holds every buyer who joined
//! before it, and each buyer's drawn position is the one the published seed recomputes.

use std::time::Duration;

use boxoffice_domain::BuyerId;
use boxoffice_domain::fairness::{Seed, position_in_pool};
use boxoffice_testkit::harness::http::call;
use boxoffice_testkit::harness::path_str;
use boxoffice_testkit::harness::process::kill_and_check;
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::BOXOFFICE;

const OPERATOR: &str = "fairness-crash-operator-key-01";
const POOL: usize = 30;

async fn fairness(c: &reqwest::Client, base: &str, event: i64) -> Value {
    let url = format!("{base}/v1/events/{event}/queue/fairness?limit=100");
    c.get(url).send().await.unwrap().json().await.unwrap()
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 200)]
async fn killed_before_opening_the_draw_matches_the_commitment_published_before() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("boxoffice.toml");
    let text = format!(
        "operator_key = \"{OPERATOR}\"\npayments = \"fake\"\n[engine]\nadmission_interval_ms = 50\n"
    );
    std::fs::write(&config, text).unwrap();
    let args = [
        "--data-dir",
        path_str(dir.path()),
        "--config",
        path_str(&config),
    ];
    let (server, base) = BOXOFFICE.start(&args).await;
    let c = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let spec = serde_json::to_value(crate::common::spec(1, 40, 0, 4)).unwrap();
    let (s, e) = call(
        &c,
        Method::POST,
        format!("{base}/v1/events"),
        OPERATOR,
        spec,
    )
    .await;
    assert_eq!(s, 201, "{e}");
    let event = e["event_id"].as_i64().unwrap();

    // Buyers join the pool before opening; the commitment is published meanwhile.
    let mut buyers = Vec::new();
    for _ in 0..POOL {
        let (_, b) = call(&c, Method::POST, format!("{base}/v1/buyers"), "", json!({})).await;
        let token = b["token"].as_str().expect("a buyer token").to_string();
        let id: BuyerId = b["buyer_id"].as_str().expect("a buyer id").parse().unwrap();
        let queue = format!("{base}/v1/events/{event}/queue");
        let (s, j) = call(&c, Method::POST, queue, &token, json!({})).await;
        assert_eq!(s, 200, "{j}");
        assert!(j["position"].is_null(), "no position before the draw: {j}");
        let ticket = j["queue_ticket"]
            .as_str()
            .expect("a queue ticket")
            .to_string();
        buyers.push((id, ticket));
    }
    let before = fairness(&c, &base, event).await;
    let commitment = before["commitment"]
        .as_str()
        .expect("a commitment")
        .to_string();
    assert_eq!(before["pool_size"], json!(POOL), "{before}");

    kill_and_check(server, &base).await;
    let (_server, base) = BOXOFFICE.start(&args).await;
    let after = fairness(&c, &base, event).await;
    assert_eq!(
        after["commitment"].as_str(),
        Some(commitment.as_str()),
        "the commitment after the restart is the one published before"
    );
    assert_eq!(
        after["pool_size"],
        json!(POOL),
        "the pool came back: {after}"
    );

    let open = format!("{base}/v1/events/{event}/open");
    let (s, o) = call(&c, Method::POST, open, OPERATOR, json!({})).await;
    assert_eq!(s, 200, "{o}");
    let opened = boxoffice_testkit::eventually(
        "the pool placed at opening",
        Duration::from_secs(30),
        Duration::from_millis(50),
        || async {
            let f = fairness(&c, &base, event).await;
            match f["placed"] == json!(true) {
                true => Ok(f),
                false => Err(f),
            }
        },
    )
    .await;
    let seed = Seed::from_hex(opened["seed"].as_str().expect("the seed, revealed")).unwrap();
    assert!(
        seed.matches(&commitment),
        "the revealed seed hashes to the commitment published before the crash"
    );
    let pool: Vec<BuyerId> = opened["pool"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap().parse().unwrap())
        .collect();
    let mut sorted = pool.clone();
    sorted.sort();
    let mut joined: Vec<BuyerId> = buyers.iter().map(|(id, _)| *id).collect();
    joined.sort();
    assert_eq!(
        sorted, joined,
        "the pool is exactly the buyers who joined before"
    );
    // Each buyer, with the ticket issued before the crash, stands where the published
    // seed puts them.
    for (id, ticket) in &buyers {
        let url = format!("{base}/v1/queue/status");
        let (_, st) = call(&c, Method::GET, url, ticket, Value::Null).await;
        let drawn = position_in_pool(&seed, &pool, *id).expect("in the pool");
        assert_eq!(st["position"].as_u64(), Some(drawn), "{id}: {st}");
    }
}
