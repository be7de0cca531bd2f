//! Proofs of possession across nodes: the replay memory and the keys holds were taken
//! with live in Redis, so a proof used at one node is refused as a replay at another,
//! and a hold taken at one node is paid for at another only with its own key.

use boxoffice_testkit::harness::http::{admission_token, call, client};
use boxoffice_testkit::harness::{proof_key, uuid};
use futures::future::join_all;
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::BOXOFFICE;
use crate::{Backing, argv};

const OPERATOR: &str = "possession-test-operator-key-01";

fn now_s() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |d| d.as_secs() as i64)
}

/// A write with a `DPoP` proof: (status, body).
async fn proven(
    c: &reqwest::Client,
    method: Method,
    url: String,
    token: &str,
    dpop: &str,
    body: Value,
) -> (u16, Value) {
    let res = c
        .request(method, url)
        .bearer_auth(token)
        .header("Idempotency-Key", uuid())
        .header("DPoP", dpop)
        .json(&body)
        .send()
        .await
        .expect("the node answers");
    (
        res.status().as_u16(),
        res.json().await.unwrap_or(Value::Null),
    )
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 200)]
async fn a_proof_used_at_one_node_is_a_replay_at_another_and_a_hold_keeps_its_key() {
    let backing = Backing::new(OPERATOR, "[engine]\nadmission_interval_ms = 50\n");
    let args = backing.args();
    let argv = argv(&args);
    let nodes = join_all((0..2).map(|_| BOXOFFICE.start(&argv))).await;
    let urls: Vec<String> = nodes.iter().map(|(_, u)| u.clone()).collect();
    let c = client();
    let mut spec = crate::common::spec(1, 10, 0, 4);
    spec.sale.proof_of_possession = boxoffice_domain::possession::PopMode::Required;
    let spec = serde_json::to_value(spec).unwrap();
    let (status, e) = call(
        &c,
        Method::POST,
        format!("{}/v1/events", urls[0]),
        OPERATOR,
        spec,
    )
    .await;
    let event = e["event_id"]
        .as_i64()
        .unwrap_or_else(|| panic!("{status} {e}"));
    let open = format!("{}/v1/events/{event}/open", urls[0]);
    assert_eq!(
        call(&c, Method::POST, open, OPERATOR, json!({})).await.0,
        200
    );

    let (_, b) = call(
        &c,
        Method::POST,
        format!("{}/v1/buyers", urls[0]),
        "",
        json!({}),
    )
    .await;
    let token = b["token"].as_str().expect("a buyer token").to_string();
    let key = proof_key();
    let queue = format!("/v1/events/{event}/queue");
    let p = key.proof("POST", &queue, now_s(), &uuid());
    let (status, j) = proven(
        &c,
        Method::POST,
        format!("{}{queue}", urls[0]),
        &token,
        &p,
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{j}");
    let ticket = j["queue_ticket"].as_str().expect("a queue ticket");
    let admission = admission_token(&c, &urls[0], ticket).await;

    let holds = format!("/v1/events/{event}/holds");
    let body = json!({"best_available": {"section": "A", "quantity": 1}});
    let p = key.proof("POST", &holds, now_s(), &uuid());
    let (status, h) = proven(
        &c,
        Method::POST,
        format!("{}{holds}", urls[0]),
        &admission,
        &p,
        body.clone(),
    )
    .await;
    assert_eq!(status, 201, "{h}");
    // The same proof at the other node: remembered in Redis, so a replay there too.
    let (status, r) = proven(
        &c,
        Method::POST,
        format!("{}{holds}", urls[1]),
        &admission,
        &p,
        body,
    )
    .await;
    assert_eq!((status, r["error"].as_str()), (401, Some("proof_replayed")));

    let hold = h["hold_id"].as_str().expect("a hold id");
    let pay = format!("/v1/holds/{hold}/checkout");
    let card = json!({"payment_method": "pm_card_visa"});
    let stranger = proof_key().proof("POST", &pay, now_s(), &uuid());
    let (status, r) = proven(
        &c,
        Method::POST,
        format!("{}{pay}", urls[1]),
        &token,
        &stranger,
        card.clone(),
    )
    .await;
    assert_eq!(
        (status, r["error"].as_str()),
        (401, Some("proof_key_mismatch"))
    );
    let p = key.proof("POST", &pay, now_s(), &uuid());
    let (status, o) = proven(
        &c,
        Method::POST,
        format!("{}{pay}", urls[1]),
        &token,
        &p,
        card,
    )
    .await;
    assert_eq!(
        status, 201,
        "the hold taken at one node is paid at the other: {o}"
    );
}
