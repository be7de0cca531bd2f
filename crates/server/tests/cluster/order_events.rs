//! Order events out in cluster mode: three nodes relay one PostgreSQL ledger's outbox to
//! one webhook endpoint. Their claims share the work, so a healthy endpoint gets every
//! event exactly once, in order per order, however many nodes relay.

use std::time::Duration;

use boxoffice_testkit::harness::buyers::{checkout, holders};
use boxoffice_testkit::harness::receiver::Receiver;
use boxoffice_testkit::harness::uuid;
use futures::future::join_all;
use serde_json::Value;

use crate::common::BOXOFFICE;
use crate::{Backing, argv};

const OPERATOR: &str = "cluster-events-operator-key-01";
const ORDERS: usize = 150;

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn three_relaying_nodes_deliver_each_event_once_in_order_per_order() {
    let extra = "[engine]\nadmission_interval_ms = 50\n[workers]\nrelay_interval_ms = 20\n";
    let backing = Backing::new(OPERATOR, extra);
    let args = backing.args();
    let argv = argv(&args);
    let nodes = join_all((0..3).map(|_| BOXOFFICE.start(&argv))).await;
    let url = |i: usize| nodes[i % nodes.len()].1.clone();
    let c = boxoffice_testkit::harness::http::client();
    let receiver = Receiver::start().await;
    receiver.add_to(&c, &url(0), OPERATOR).await;
    let buyers = holders(&c, &url(0), OPERATOR, ORDERS).await;
    let placed = join_all(buyers.iter().enumerate().map(|(i, b)| {
        let (c, base) = (c.clone(), url(i));
        async move {
            let (status, _, order) = checkout(&c, &base, b, &uuid()).await;
            assert_eq!(status, 201, "{order}");
            (order["order_id"].as_str().unwrap().to_string(), b.0.clone())
        }
    }))
    .await;
    let mut expected = std::collections::HashSet::new();
    for (i, (order, token)) in placed.iter().enumerate() {
        let v: Value = c
            .get(format!("{}/v1/orders/{order}/history", url(i + 1)))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        for line in v["lines"].as_array().unwrap() {
            expected.insert(format!("{order}.{}", line["sequence"]));
        }
    }
    assert_eq!(expected.len(), ORDERS * 4);
    let every = Duration::from_millis(50);
    boxoffice_testkit::eventually(
        "every event at the endpoint",
        Duration::from_secs(120),
        every,
        || async {
            let missing = expected.difference(&receiver.ids()).count();
            if missing == 0 { Ok(()) } else { Err(missing) }
        },
    )
    .await;
    // A second claim of one delivery would arrive about as soon as the first.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        receiver.accepted().len(),
        expected.len(),
        "an event was delivered twice"
    );
    assert_eq!(receiver.ids(), expected);
    assert_eq!(receiver.bad_signatures(), 0);
    receiver.assert_in_order_per_order();
}
