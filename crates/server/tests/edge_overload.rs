//! Overload against a real process: past its cap on requests in flight a node sheds
//! load with 503 `overloaded` and Retry-After (health still answers), and a request
//! not answered within the deadline (here, a body that never finishes) gets 503
//! `request_timeout`; both are counted in /metrics.

mod common;
mod edge;

use std::time::Duration;

use boxoffice_testkit::eventually;
use edge::Node;
use serde_json::Value;

/// A hold request whose body starts and then stalls until `release` is dropped.
fn stalled_hold(
    node: &Node,
    release: tokio::sync::oneshot::Receiver<()>,
) -> impl Future<Output = reqwest::Result<reqwest::Response>> + '_ {
    let first = futures::stream::once(async { Ok::<_, std::io::Error>("{\"seat_ids\":") });
    let stall = futures::stream::once(async move {
        let _ = release.await;
        Ok::<_, std::io::Error>("[]}")
    });
    node.client
        .post(node.url("/v1/events/1/holds"))
        .bearer_auth("any")
        .header("Idempotency-Key", edge::key())
        .body(reqwest::Body::wrap_stream(futures::StreamExt::chain(
            first, stall,
        )))
        .send()
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_its_cap_on_requests_in_flight_a_node_sheds_load_and_a_late_answer_times_out() {
    let node = Node::start("[http]\nmax_in_flight = 2\nrequest_timeout_ms = 4000\n").await;
    let (keep_a, release_a) = tokio::sync::oneshot::channel::<()>();
    let (keep_b, release_b) = tokio::sync::oneshot::channel::<()>();
    let slow = futures::future::join(
        stalled_hold(&node, release_a),
        stalled_hold(&node, release_b),
    );
    let check = async {
        let what = "a request shed (503) while two requests are stuck";
        let every = Duration::from_millis(20);
        let shed = eventually(what, Duration::from_secs(10), every, || async {
            let res = node.client.get(node.url("/v1/events/1")).send().await;
            match res.expect("the node answers") {
                res if res.status() == 503 => Ok(res),
                res => Err(res.status()),
            }
        })
        .await;
        assert_eq!(shed.headers()["retry-after"], "1");
        assert_eq!(shed.json::<Value>().await.unwrap()["error"], "overloaded");
        let health = node.client.get(node.url("/healthz")).send().await.unwrap();
        assert_eq!(health.status(), 200, "health is never shed");
        assert!(node.metric("boxoffice_http_shed_total").await >= Some(1.0));

        // The stuck requests run out of time, which frees their places.
        let what = "both stuck requests to time out (boxoffice_http_timeouts_total = 2)";
        let every = Duration::from_millis(100);
        eventually(what, Duration::from_secs(10), every, || async {
            match node.metric("boxoffice_http_timeouts_total").await {
                Some(2.0) => Ok(()),
                other => Err(other),
            }
        })
        .await;
        let res = node
            .client
            .get(node.url("/v1/events/1"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            res.status(),
            404,
            "served again once the stuck requests ended"
        );
        drop((keep_a, keep_b));
    };
    let run = async { tokio::join!(slow, check) };
    let ((a, b), ()) = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("finished within 60 s");
    // The client may see the answer or only the connection closing under its body.
    for answer in [a, b].into_iter().flatten() {
        assert_eq!(answer.status(), 503);
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["error"], "request_timeout");
    }
}
