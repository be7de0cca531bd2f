//! Order events out: every order move reaches the operator's webhook endpoints and
//! NATS JetStream at least once, in order per order; dead letters and their replay;
//! an order's history and who may read it; a kill -9 during a load of orders. The
//! helpers they share: orders made over HTTP, endpoints, and a JetStream stream of the
//! test's own.
#![allow(dead_code)]

mod bench;
mod crash;
mod history;
mod jetstream;
mod names;
mod webhooks;

use std::collections::HashSet;
use std::time::Duration;

use boxoffice_domain::EventId;
use boxoffice_testkit::harness::receiver::Receiver;
use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{TestApp, spec, uuid};

/// An order confirmed through the API: (order id, its buyer's token).
pub type Placed = (String, String);

/// `n` orders of one seat each, confirmed with the stand-in's approving card.
pub async fn confirmed_orders(app: &TestApp, n: usize) -> Vec<Placed> {
    let rows = n.div_ceil(10).max(1) as u32;
    let event = app.create_event(&spec(rows, 10, 0, 4)).await;
    futures::stream::iter(0..n)
        .map(|_| one_order(app, event))
        .buffer_unordered(8)
        .collect()
        .await
}

async fn one_order(app: &TestApp, event: EventId) -> Placed {
    let (token, hold_id) = app.holding(event, 1).await;
    let res = app.checkout(&hold_id, &token, "pm_card_visa").await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let order: Value = res.json().await.unwrap();
    (order["order_id"].as_str().unwrap().to_string(), token)
}

/// Adds a webhook endpoint for `url`: (endpoint id, signing secret).
pub async fn add_endpoint(app: &TestApp, url: &str) -> (String, String) {
    let res = app
        .post(
            "/v1/webhook-endpoints",
            &app.operator_key,
            &uuid(),
            json!({"url": url}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["url"], url);
    (
        v["id"].as_str().unwrap().to_string(),
        v["secret"].as_str().unwrap().to_string(),
    )
}

/// A receiver of the test's own, added as an endpoint of `app` and checking the
/// signatures with its secret: the receiver and the endpoint's id.
pub async fn signed_receiver(app: &TestApp) -> (Receiver, String) {
    let receiver = Receiver::start().await;
    let (endpoint, secret) = add_endpoint(app, &receiver.url).await;
    receiver.set_secret(&secret);
    (receiver, endpoint)
}

/// Waits until every id in `expected` reached `receiver` (looking `every` so often),
/// failing after `limit`.
pub async fn all_received(
    receiver: &Receiver,
    expected: &HashSet<String>,
    limit: Duration,
    every: Duration,
) {
    boxoffice_testkit::eventually("every event at the endpoint", limit, every, || async {
        let missing = expected.difference(&receiver.ids()).count();
        if missing == 0 { Ok(()) } else { Err(missing) }
    })
    .await;
}

/// The JSON answer to a GET of `url` as the holder of `token`.
async fn read(c: &reqwest::Client, url: String, token: &str) -> Value {
    let res = c.get(url).bearer_auth(token).send().await.unwrap();
    res.json().await.unwrap()
}

/// Every order the buyers placed, with the token of the buyer who placed it.
pub async fn orders_of(
    c: &reqwest::Client,
    base: &str,
    buyers: &[(String, String)],
) -> Vec<Placed> {
    let mut placed = Vec::new();
    for (token, _) in buyers {
        let v = read(c, format!("{base}/v1/me/orders"), token).await;
        for o in v["orders"].as_array().unwrap() {
            placed.push((o["order_id"].as_str().unwrap().to_string(), token.clone()));
        }
    }
    placed
}

/// The event ids of every line of the orders' histories (`<order id>.<sequence>`).
pub async fn history_ids(c: &reqwest::Client, base: &str, orders: &[Placed]) -> HashSet<String> {
    let mut ids = HashSet::new();
    for (order, token) in orders {
        let v = read(c, format!("{base}/v1/orders/{order}/history"), token).await;
        for line in v["lines"].as_array().expect("history lines") {
            ids.insert(format!("{order}.{}", line["sequence"]));
        }
    }
    ids
}

/// A JetStream stream of the test's own (a unique name and subject prefix), kept ten
/// minutes at most even if the test dies before deleting it.
pub struct TestStream {
    pub name: String,
    pub prefix: String,
    js: async_nats::jetstream::Context,
}

pub const NATS_URL: &str = "nats://127.0.0.1:4222";

/// The messages of JetStream stream `name`, from its first, through a consumer that
/// acknowledges none.
pub async fn from_the_start(
    js: &async_nats::jetstream::Context,
    name: &str,
) -> async_nats::jetstream::consumer::pull::Stream {
    use async_nats::jetstream::consumer::{AckPolicy, pull};
    let stream = js.get_stream(name).await.unwrap();
    let consumer = stream
        .create_consumer(pull::Config {
            ack_policy: AckPolicy::None,
            ..Default::default()
        })
        .await
        .unwrap();
    consumer.messages().await.unwrap()
}

impl TestStream {
    pub async fn create() -> TestStream {
        let client = async_nats::connect(NATS_URL).await.unwrap_or_else(|e| {
            panic!("NATS with JetStream must run at {NATS_URL} (nats-server -js): {e}")
        });
        let js = async_nats::jetstream::new(client);
        let tag = uuid().replace('-', "")[..12].to_string();
        let (name, prefix) = (format!("BOTEST_{tag}"), format!("botest{tag}"));
        js.create_stream(async_nats::jetstream::stream::Config {
            name: name.clone(),
            subjects: vec![format!("{prefix}.orders.>")],
            max_age: Duration::from_secs(600),
            ..Default::default()
        })
        .await
        .expect("a JetStream stream for the test");
        TestStream { name, prefix, js }
    }

    /// `[nats]` settings that publish to this stream.
    pub fn toml(&self) -> String {
        format!(
            "[nats]\nurl = \"{NATS_URL}\"\nsubject_prefix = \"{}\"\nstream = \"{}\"\n",
            self.prefix, self.name
        )
    }

    pub fn config(&self) -> boxoffice_sinks::NatsConfig {
        boxoffice_sinks::NatsConfig {
            subject_prefix: self.prefix.clone(),
            stream: self.name.clone(),
            ..boxoffice_sinks::NatsConfig::new(NATS_URL)
        }
    }

    /// Reads the stream from the start until every id in `expected` was seen (or the
    /// deadline); checks each message's subject and `Nats-Msg-Id`. Returns how many
    /// messages the stream held.
    pub async fn read_until(&self, expected: &HashSet<String>, limit: Duration) -> usize {
        let mut messages = from_the_start(&self.js, &self.name).await;
        let mut seen = HashSet::new();
        let mut count = 0;
        let what = format!(
            "{} events on JetStream stream {}",
            expected.len(),
            self.name
        );
        boxoffice_testkit::within(limit, what, async {
            while !expected.is_subset(&seen) {
                let m = messages.next().await.expect("the stream goes on").unwrap();
                let doc: Value = serde_json::from_slice(&m.payload).unwrap();
                let id = doc["id"].as_str().unwrap().to_string();
                let msg_id = m.headers.as_ref().and_then(|h| h.get("Nats-Msg-Id"));
                assert_eq!(msg_id.map(|v| v.as_str()), Some(id.as_str()));
                let kind = doc["type"].as_str().unwrap().trim_start_matches("order.");
                let event = &doc["order"]["event_id"];
                assert_eq!(
                    m.subject.as_str(),
                    format!("{}.orders.{event}.{kind}", self.prefix)
                );
                seen.insert(id);
                count += 1;
            }
        })
        .await;
        count
    }

    pub async fn delete(self) {
        self.js.delete_stream(&self.name).await.unwrap();
    }
}
