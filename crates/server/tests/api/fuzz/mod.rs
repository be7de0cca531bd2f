//! An in-process fuzz of the HTTP API: a few hundred generated requests — valid and
//! mutated bodies (wrong types, huge numbers, unicode, missing and extra fields, deep
//! nesting, not JSON at all), ids (valid, unknown, malformed, another event's), tokens
//! (missing, garbage, forged, expired, of the wrong kind), odd Idempotency-Keys, content
//! types and methods — sent to the router the server serves. No answer is a 5xx, every
//! refusal (4xx) is coded (`{"error", "message"}`) and leaves the state as it was.
//!
//! A 402 (the provider declined the card) is not a refusal of the request: the order is
//! recorded as declined, which is a change.

mod bodies;
mod digest;
mod requests;
mod routes;
pub mod world;

use std::time::Duration;

use axum::http::{Method, StatusCode, header};
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use serde_json::Value;

use digest::{changes, digest};
use requests::{Fuzz, fuzz};
use world::World;

use crate::contract::Contract;

/// Requests per run: a few seconds in a debug build.
const CASES: u32 = 500;

#[test]
fn no_generated_request_gets_a_5xx_and_no_refused_one_changes_anything() {
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let world = runtime.block_on(boxoffice_testkit::within(
        Duration::from_secs(60),
        "the fuzz world to be set up",
        World::build(),
    ));
    let config = Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    };
    let outcome = TestRunner::new(config).run(&fuzz(), |f| {
        let one = check(&world, &f);
        runtime.block_on(boxoffice_testkit::within(
            Duration::from_secs(30),
            "one fuzzed request",
            one,
        ))
    });
    match outcome {
        Ok(()) => {}
        Err(TestError::Fail(why, case)) => panic!("{why}\nminimal case: {case:#?}"),
        Err(e) => panic!("{e}"),
    }
}

async fn check(w: &World, f: &Fuzz) -> Result<(), TestCaseError> {
    let (what, token, req) = f.request(w);
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let head = req.method() == Method::HEAD;
    // Only requests change the world (its clock is frozen, no worker runs), so the state
    // after one request is the state before the next.
    let last = w.last_digest.lock().take();
    let before = match last {
        Some(d) => d,
        None => digest(w).await,
    };
    let res = w.send(req, 1 + f_peer(f)).await;
    let status = res.status();
    let streaming = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let body = match streaming {
        true => Value::Null,
        false => {
            let bytes = axum::body::to_bytes(res.into_body(), 16 << 20).await;
            serde_json::from_slice(&bytes.unwrap_or_default()).unwrap_or(Value::Null)
        }
    };
    if status.is_server_error() {
        return Err(TestCaseError::fail(format!(
            "{what}\n  answered {status}: {body}"
        )));
    }
    if status.is_success() {
        let checked = Contract::get().check(method.as_str(), &path, status.as_u16(), &body);
        checked.map_err(TestCaseError::fail)?;
        learn(w, &body, token);
    }
    let after = digest(w).await;
    *w.last_digest.lock() = Some(after.clone());
    if status.is_client_error() && status != StatusCode::PAYMENT_REQUIRED {
        let coded = body["error"].is_string() && body["message"].is_string();
        if !coded && !head {
            let why = format!("{what}\n  refused {status} without a coded body: {body}");
            return Err(TestCaseError::fail(why));
        }
        let changed = changes(&before, &after);
        if !changed.is_empty() {
            let why = format!(
                "{what}\n  refused {status} ({body}) yet changed:\n  {}",
                changed.join("\n  ")
            );
            return Err(TestCaseError::fail(why));
        }
    }
    Ok(())
}

fn f_peer(f: &Fuzz) -> u8 {
    f.peer() % 200
}

/// Holds, orders, events and buyers a successful request made become targets too, with
/// the buyer who owns them (named by the token that made them). Answers that only show
/// one (a GET of a hold) change nothing.
fn learn(w: &World, body: &Value, token: &str) {
    let owner = match token {
        "other buyer" | "other event's admission" => "other buyer",
        _ => "buyer",
    };
    let mut known = w.known.lock();
    let hold = body["hold_id"].as_str().and_then(|h| h.parse().ok());
    if let Some(h) = hold.filter(|h| !known.holds.iter().any(|k| k.0 == *h)) {
        known.holds.push((h, owner));
    }
    let order = body["order_id"]
        .as_str()
        .or(body["order"]["order_id"].as_str());
    let order = order.and_then(|o| o.parse().ok());
    if let Some(o) = order.filter(|o| !known.orders.iter().any(|k| k.0 == *o)) {
        known.orders.push((o, owner));
    }
    let event = body["event_id"].as_i64().map(boxoffice_domain::EventId);
    if let Some(e) = event.filter(|e| !known.events.contains(e) && !w.events.contains(e)) {
        known.events.push(e);
    }
    let token = body["token"].as_str().map(str::to_string);
    if let Some(t) = token.filter(|t| !known.buyers.contains(t)) {
        known.buyers.insert(0, t);
    }
}
