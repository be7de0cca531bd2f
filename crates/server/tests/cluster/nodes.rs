//! Cluster mode: three `boxoffice serve` processes share one PostgreSQL ledger and one
//! Redis hot store. Buyers are spread over all three; every promise holds as on one node.

use crate::common::BOXOFFICE;
use crate::{Backing, argv};
use boxoffice_testkit::harness::http::admission_token;
use boxoffice_testkit::harness::http::call;
use std::sync::Arc;

use futures::future::join_all;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::process::Child;
use tokio::sync::Barrier;

const OPERATOR: &str = "cluster-test-operator-key-0123";
const BUYERS: usize = 2_000;

pub struct Cluster {
    pub nodes: Vec<(Child, String)>,
    pub args: Vec<String>,
    /// The database and the Redis prefix, dropped with the cluster.
    _backing: Backing,
}

impl Cluster {
    pub async fn start(n: usize) -> Cluster {
        let backing = Backing::new(OPERATOR, "[engine]\nadmission_interval_ms = 50\n");
        let args = backing.args();
        let argv = argv(&args);
        let nodes = join_all((0..n).map(|_| BOXOFFICE.start(&argv))).await;
        Cluster {
            nodes,
            args,
            _backing: backing,
        }
    }

    pub fn url(&self, i: usize) -> &str {
        &self.nodes[i % self.nodes.len()].1
    }

    pub async fn audit(&self) -> (bool, Value) {
        let mut argv = vec!["audit", "--json"];
        argv.extend(self.args.iter().map(String::as_str));
        BOXOFFICE.run(&argv).await
    }
}

/// A buyer admitted through three different nodes: (buyer token, admission token).
async fn admitted(
    c: &reqwest::Client,
    cluster: &Cluster,
    event: i64,
    i: usize,
) -> (String, String) {
    let (_, b) = call(
        c,
        Method::POST,
        format!("{}/v1/buyers", cluster.url(i)),
        "",
        json!({}),
    )
    .await;
    let token = b["token"].as_str().expect("a buyer").to_string();
    let (_, j) = call(
        c,
        Method::POST,
        format!("{}/v1/events/{event}/queue", cluster.url(i + 1)),
        &token,
        json!({}),
    )
    .await;
    let ticket = j["queue_ticket"]
        .as_str()
        .expect("a queue ticket")
        .to_string();
    let admission = admission_token(c, cluster.url(i + 2), &ticket).await;
    (token, admission)
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn three_nodes_sharing_postgres_and_redis_sell_exactly_one_hundred_seats_to_two_thousand_buyers()
 {
    let cluster = Arc::new(Cluster::start(3).await);
    let c = boxoffice_testkit::harness::http::client();
    let spec = serde_json::to_value(crate::common::spec(10, 10, 0, 4)).unwrap();
    let (status, e) = call(
        &c,
        Method::POST,
        format!("{}/v1/events", cluster.url(0)),
        OPERATOR,
        spec,
    )
    .await;
    assert_eq!(status, 201, "{e}");
    let event = e["event_id"].as_i64().unwrap();
    let (status, _) = call(
        &c,
        Method::POST,
        format!("{}/v1/events/{event}/open", cluster.url(1)),
        OPERATOR,
        json!({}),
    )
    .await;
    assert_eq!(status, 200);
    let mut buyers = Vec::new();
    for chunk in (0..BUYERS).collect::<Vec<_>>().chunks(200) {
        buyers.extend(join_all(chunk.iter().map(|&i| admitted(&c, &cluster, event, i))).await);
    }
    let barrier = Arc::new(Barrier::new(BUYERS));
    let holds = buyers
        .into_iter()
        .enumerate()
        .map(|(i, (token, admission))| {
            let (c, cluster, barrier) = (c.clone(), cluster.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let body = json!({"best_available": {"section": "A", "quantity": 1}});
                let (status, hold) = call(
                    &c,
                    Method::POST,
                    format!("{}/v1/events/{event}/holds", cluster.url(i)),
                    &admission,
                    body,
                )
                .await;
                (i, token, status, hold)
            })
        });
    let results: Vec<_> = join_all(holds)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let winners: Vec<_> = results.iter().filter(|r| r.2 == 201).collect();
    assert_eq!(winners.len(), 100, "exactly as many holds as seats");
    assert!(
        results.iter().all(|r| r.2 == 201 || r.2 == 409),
        "only wins and clean losses"
    );
    let checkouts = winners.iter().map(|(i, token, _, hold)| {
        let url = format!(
            "{}/v1/holds/{}/checkout",
            cluster.url(i + 1),
            hold["hold_id"].as_str().unwrap()
        );
        let c = c.clone();
        async move {
            call(
                &c,
                Method::POST,
                url,
                token,
                json!({"payment_method": "pm_card_visa"}),
            )
            .await
            .0
        }
    });
    assert!(join_all(checkouts).await.iter().all(|s| *s == 201));
    for node in 0..3 {
        let ev: Value = c
            .get(format!("{}/v1/events/{event}", cluster.url(node)))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            ev["counts"]["sold"],
            json!(100),
            "node {node} sees every sale"
        );
    }
    let (clean, report) = cluster.audit().await;
    assert!(clean, "{report}");
    assert_eq!(report["seats_sold"], json!(100));
}
