//! HTTP steps against a running server: a client whose requests cannot hang, one
//! request with a fresh Idempotency-Key, the wait for an admission token, and
//! server-sent events read off a stream.

use std::time::Duration;

use futures::{Stream, StreamExt};
use serde_json::Value;

/// A client for servers under test: a request that gets no answer within 60 s fails
/// there (a transport error the test reports at that step) instead of holding the test
/// until its own limit, and a connection is made within 5 s. Not for streams a test
/// keeps open longer.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .connect_timeout(Duration::from_secs(5))
        .build()
        .expect("an HTTP client")
}

/// One request with a fresh Idempotency-Key: (status, body as JSON or Null); a
/// transport error is status 0.
pub async fn call(
    c: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: &str,
    body: Value,
) -> (u16, Value) {
    let res = c
        .request(method, url)
        .bearer_auth(token)
        .header("Idempotency-Key", super::uuid())
        .json(&body)
        .send()
        .await;
    match res {
        Ok(r) => (r.status().as_u16(), r.json().await.unwrap_or(Value::Null)),
        Err(_) => (0, Value::Null),
    }
}

/// Polls the queue status at `base` with `ticket` until it carries an admission token;
/// fails after a minute, with the last status seen.
pub async fn admission_token(c: &reqwest::Client, base: &str, ticket: &str) -> String {
    let what = format!("an admission token from {base}/v1/queue/status");
    let every = Duration::from_millis(25);
    crate::eventually(what, Duration::from_secs(60), every, || async {
        let res = c
            .get(format!("{base}/v1/queue/status"))
            .bearer_auth(ticket)
            .send()
            .await;
        let status: Value = match res {
            Ok(r) => r.json().await.unwrap_or(Value::Null),
            Err(e) => return Err(Value::String(e.to_string())),
        };
        match status["admission_token"].as_str() {
            Some(a) => Ok(a.to_string()),
            None => Err(status),
        }
    })
    .await
}

/// Reads server-sent events from `body` until one named `name` arrives (within 10 s);
/// returns its data. `buf` keeps what was read past that event, for the next call.
pub async fn next_event<B: AsRef<[u8]>>(
    body: &mut (impl Stream<Item = reqwest::Result<B>> + Unpin),
    buf: &mut String,
    name: &str,
) -> Value {
    let what = format!("a server-sent event named {name}");
    crate::within(Duration::from_secs(10), what, async {
        loop {
            if let Some(data) = take_event(buf, name) {
                return data;
            }
            let chunk = body.next().await.expect("the stream is open");
            let chunk = chunk.expect("the stream reads");
            buf.push_str(std::str::from_utf8(chunk.as_ref()).expect("events are UTF-8"));
        }
    })
    .await
}

/// Takes the complete events off the front of `buf` up to the first named `name`;
/// returns that one's data.
fn take_event(buf: &mut String, name: &str) -> Option<Value> {
    let wanted = format!("event: {name}");
    while let Some(end) = buf.find("\n\n") {
        let block: String = buf.drain(..end + 2).collect();
        if block.lines().any(|l| l == wanted) {
            let data = block.lines().find_map(|l| l.strip_prefix("data: "));
            let data = data.expect("an event has data");
            return Some(serde_json::from_str(data).expect("an event's data is JSON"));
        }
    }
    None
}
