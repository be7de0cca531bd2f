//! Expensive public reads against a real process (its own metrics): the seat map is
//! rendered once per event version however many ask, and the availability stream's
//! delta is computed once per node however many watch.

use std::time::Duration;

use super::{Node, OPERATOR, next_event};
use crate::common::spec;
use futures::future::join_all;
use serde_json::{Value, json};

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seat_map_is_rendered_once_per_event_version_not_once_per_request() {
    let node = Node::start("").await;
    let event = node.open_event(&spec(20, 50, 0, 4)).await;
    let url = node.url(&format!("/v1/events/{event}/seatmap"));
    let run = async {
        let gets = (0..30).map(|_| node.client.get(&url).send());
        let mut bodies = Vec::new();
        for res in join_all(gets).await {
            let res = res.unwrap();
            assert_eq!(res.status(), 200);
            bodies.push(res.bytes().await.unwrap());
        }
        assert!(bodies.windows(2).all(|w| w[0] == w[1]));
        let map: Value = serde_json::from_slice(&bodies[0]).unwrap();
        assert_eq!(map["sections"][0]["rows"][19]["seats"][49]["index"], 999);
        let renders = "boxoffice_seatmap_renders_total";
        assert_eq!(
            node.metric(renders).await,
            Some(1.0),
            "30 requests, one map"
        );

        // A new version of the event (its sale closed) is rendered again, once.
        let (status, _) = node
            .post(&format!("/v1/events/{event}/close"), OPERATOR, json!({}))
            .await;
        assert_eq!(status, 200);
        for _ in 0..3 {
            assert_eq!(node.client.get(&url).send().await.unwrap().status(), 200);
        }
        assert_eq!(node.metric(renders).await, Some(2.0));
    };
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("finished within 60 s");
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seat_map_not_modified_since_its_etag_is_answered_304() {
    let node = Node::start("").await;
    let event = node.open_event(&spec(2, 5, 0, 4)).await;
    let url = node.url(&format!("/v1/events/{event}/seatmap"));
    let res = node.client.get(&url).send().await.unwrap();
    let etag = res.headers()["etag"].clone();
    let again = node.client.get(&url).header("if-none-match", etag);
    assert_eq!(again.send().await.unwrap().status(), 304);
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_availability_delta_is_computed_once_per_node_not_once_per_viewer() {
    const VIEWERS: usize = 20;
    let node = Node::start("").await;
    let event = node.open_event(&spec(1, 10, 0, 4)).await;
    let streaming = reqwest::Client::new();
    let url = node.url(&format!("/v1/events/{event}/availability/stream"));
    let run = async {
        let mut viewers = Vec::new();
        for _ in 0..VIEWERS {
            let res = streaming.get(&url).send().await.unwrap();
            assert_eq!(res.status(), 200);
            let (mut body, mut buf) = (res.bytes_stream(), String::new());
            let first = next_event(&mut body, &mut buf, "snapshot").await;
            assert_eq!(first["free"], 10);
            viewers.push((body, buf));
        }
        let (_, admission) = node.admitted(event).await;
        let seats = json!({"seat_ids": ["A-1-3", "A-1-4"]});
        let path = format!("/v1/events/{event}/holds");
        let (status, hold) = node.post(&path, &admission, seats).await;
        assert_eq!(status, 201, "{hold}");
        for (body, buf) in &mut viewers {
            let delta = next_event(body, buf, "delta").await;
            assert_eq!(delta["taken"], json!([2, 3]));
            assert_eq!(delta["free_count"], 8);
        }
        let deltas = node.metric("boxoffice_availability_deltas_total").await;
        assert_eq!(
            deltas,
            Some(1.0),
            "{VIEWERS} viewers, one change, one delta"
        );
    };
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("finished within 60 s");
}
