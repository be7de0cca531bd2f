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
