//! NATS JetStream as a sink, end to end: every order event reaches the stream once
//! under its subject, with its id as `Nats-Msg-Id`. NATS with JetStream must run at
//! 127.0.0.1:4222; a missing one fails the test.

use std::time::Duration;

use super::{TestStream, confirmed_orders, history_ids};
use crate::common::spawn_with;

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_order_event_reaches_the_jetstream_stream_under_its_subject_and_id() {
    let stream = TestStream::create().await;
    let nats = stream.config();
    let app = spawn_with(move |c| {
        c.workers.relay_interval_ms = 20;
        c.nats = Some(nats);
    })
    .await;
    let orders = confirmed_orders(&app, 20).await;
    let expected = history_ids(&app.client, &app.base, &orders).await;
    assert_eq!(expected.len(), 20 * 4);
    let held = stream.read_until(&expected, Duration::from_secs(60)).await;
    // Nothing was redelivered on a healthy stream (and a redelivery within the duplicate
    // window would have been dropped by its Nats-Msg-Id).
    assert_eq!(held, expected.len());
    app.stop().await;
    stream.delete().await;
}

/// Events the NATS sink could never deliver (its server unreachable for longer than
/// the relay's attempts last) become dead letters, which the operator could neither
/// read nor replay: those routes knew webhook endpoints only. They take the `nats`
/// sink too.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_nats_never_took_are_dead_letters_the_operator_reads_and_replays() {
    use crate::common::uuid;
    use boxoffice_testkit::eventually;
    use reqwest::StatusCode;
    use serde_json::{Value, json};

    // Nothing listens there: every publish fails.
    let mut nats = boxoffice_sinks::NatsConfig::new("nats://127.0.0.1:1");
    nats.ack_timeout_ms = 200;
    let app = spawn_with(move |c| {
        c.workers.relay_interval_ms = 20;
        c.relay.retry_min_ms = 1_000;
        c.relay.retry_max_ms = 4_000;
        c.relay.max_attempts = 2;
        c.nats = Some(nats);
    })
    .await;
    let orders = confirmed_orders(&app, 1).await;
    let expected = history_ids(&app.client, &app.base, &orders).await;
    let op = app.operator_key.clone();
    let path = "/v1/webhook-endpoints/nats/dead-letters";
    // The first event dies; the relay then holds the rest back for a NATS it cannot
    // reach rather than spend their attempts.
    let letters: Vec<Value> = eventually(
        "a dead letter",
        Duration::from_secs(60),
        Duration::from_millis(50),
        || async {
            app.clock.advance_secs(5);
            let v: Value = app.get(path, &op).await.json().await.unwrap();
            let letters = v["dead_letters"].as_array().cloned().unwrap_or_default();
            if letters.is_empty() {
                Err(v)
            } else {
                Ok(letters)
            }
        },
    )
    .await;
    for l in &letters {
        assert!(expected.contains(l["event_id"].as_str().unwrap()), "{l}");
        assert!(
            l["last_error"].as_str().unwrap().contains("JetStream"),
            "{l}"
        );
    }
    let res = app
        .post(&format!("{path}/replay"), &op, &uuid(), json!({}))
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let replayed = res.json::<Value>().await.unwrap();
    assert_eq!(replayed, json!({"replayed": letters.len()}));
    app.stop().await;
}

/// The NATS sink, once a node with `[nats]` registered it, kept a delivery of every
/// order event after `[nats]` was removed from every node: only nodes with `[nats]`
/// make them, so they piled up with nothing to make them or let them die. The operator
/// retires it as an endpoint is deleted (`DELETE /v1/webhook-endpoints/nats`), which a
/// node still publishing to NATS refuses.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_nats_sink_is_retired_once_no_node_publishes_to_it() {
    use boxoffice_testkit::harness::buyers::{checkout, holders};
    use boxoffice_testkit::harness::path_str;
    use boxoffice_testkit::harness::process::kill_and_check;
    use reqwest::StatusCode;
    use serde_json::Value;

    use crate::common::{BOXOFFICE, uuid};

    const OPERATOR: &str = "nats-retire-operator-key-01234";
    let dir = tempfile::tempdir().unwrap();
    let config = |name: &str, extra: &str| {
        let file = dir.path().join(name);
        let text = format!("operator_key = \"{OPERATOR}\"\npayments = \"fake\"\n{extra}");
        std::fs::write(&file, text).unwrap();
        file
    };
    // Nothing listens there: the sink is registered, its deliveries never made.
    let with = config("with.toml", "[nats]\nurl = \"nats://127.0.0.1:1\"\n");
    let without = config("without.toml", "");
    let start = |file: std::path::PathBuf| {
        let data = path_str(dir.path()).to_owned();
        async move {
            let args = ["--data-dir", &data, "--config", path_str(&file)];
            BOXOFFICE.start(&args).await
        }
    };
    let c = boxoffice_testkit::harness::http::client();
    let order = async |base: &str| {
        let who = holders(&c, base, OPERATOR, 1).await;
        assert_eq!(checkout(&c, base, &who[0], &uuid()).await.0, 201);
    };
    let retire = async |base: &str| {
        let res = c
            .delete(format!("{base}/v1/webhook-endpoints/nats"))
            .bearer_auth(OPERATOR)
            .header("Idempotency-Key", uuid())
            .send()
            .await
            .unwrap();
        let status = res.status();
        (status, res.json::<Value>().await.unwrap_or(Value::Null))
    };
    let letters = async |base: &str| {
        let res = c
            .get(format!("{base}/v1/webhook-endpoints/nats/dead-letters"))
            .bearer_auth(OPERATOR)
            .send()
            .await
            .unwrap();
        res.status()
    };

    let (server, base) = start(with).await;
    order(&base).await;
    let (status, body) = retire(&base).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"], "sink_in_use");
    assert!(
        body["message"].as_str().unwrap().contains("[nats]"),
        "{body}"
    );
    assert_eq!(
        letters(&base).await,
        StatusCode::OK,
        "still the node's sink"
    );
    kill_and_check(server, &base).await;

    // No node has `[nats]` now: the sink is retired, and stays so.
    let (server, base) = start(without).await;
    assert_eq!(
        letters(&base).await,
        StatusCode::OK,
        "registered until retired"
    );
    let (status, body) = retire(&base).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    assert_eq!(letters(&base).await, StatusCode::NOT_FOUND);
    let (status, body) = retire(&base).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"], "webhook_endpoint_not_found");
    order(&base).await;
    assert_eq!(letters(&base).await, StatusCode::NOT_FOUND);
    kill_and_check(server, &base).await;
}
