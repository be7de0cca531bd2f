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
