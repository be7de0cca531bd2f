//! P8: bad input gets a 4xx with a machine-readable code, never a 500, and changes
//! nothing — checked by comparing the state before and after every request.

use crate::common::{TestApp, spawn, spec, uuid};
use reqwest::Method;
use serde_json::{Value, json};

struct Case {
    name: &'static str,
    method: Method,
    path: String,
    token: String,
    key: Option<String>,
    body: Option<String>,
    status: u16,
    code: &'static str,
}

fn case(
    name: &'static str,
    method: Method,
    path: String,
    token: &str,
    body: &str,
    status: u16,
    code: &'static str,
) -> Case {
    Case {
        name,
        method,
        path,
        token: token.into(),
        key: Some(uuid()),
        body: Some(body.into()),
        status,
        code,
    }
}

async fn snapshot(app: &TestApp, event: boxoffice_domain::EventId, buyer: &str) -> Value {
    let orders: Value = app.get("/v1/me/orders", buyer).await.json().await.unwrap();
    let report = app.engine.audit().await.unwrap();
    json!({"counts": app.counts(event).await, "orders": orders, "sold": report.seats_sold, "n": report.orders})
}

#[boxoffice_testkit::test]
async fn bad_requests_get_a_4xx_with_a_code_and_change_nothing() {
    let app = spawn().await;
    let event = app.create_event(&spec(2, 5, 5, 4)).await;
    let (token, admission) = app.admitted_buyer(event).await;
    let res = app
        .hold(event, &admission, json!({"seat_ids": ["A-1-1"]}))
        .await;
    let hold = res.json::<Value>().await.unwrap()["hold_id"]
        .as_str()
        .unwrap()
        .to_string();
    let other = app.create_event(&spec(1, 5, 0, 4)).await;
    let (_, other_admission) = app.admitted_buyer(other).await;
    let (stranger, _) = app.admitted_buyer(event).await;
    let op = app.operator_key.clone();
    let holds = format!("/v1/events/{event}/holds");
    let checkout = format!("/v1/holds/{hold}/checkout");
    // The token's header and claims as issued, under a signature of our own making.
    let forged = {
        let (signed, _) = admission.rsplit_once('.').unwrap();
        format!("{signed}.{}", "A".repeat(43))
    };
    let mut cases = vec![
        case(
            "malformed json",
            Method::POST,
            holds.clone(),
            &admission,
            "{\"seat_ids\": [",
            400,
            "malformed_json",
        ),
        case(
            "wrong type",
            Method::POST,
            holds.clone(),
            &admission,
            "{\"seat_ids\": 5}",
            422,
            "invalid_body",
        ),
        case(
            "unknown field",
            Method::POST,
            holds.clone(),
            &admission,
            "{\"seats\": [\"A-1-2\"]}",
            422,
            "invalid_body",
        ),
        case(
            "both selections",
            Method::POST,
            holds.clone(),
            &admission,
            r#"{"seat_ids":["A-1-2"],"best_available":{"section":"A","quantity":1}}"#,
            422,
            "invalid_body",
        ),
        case(
            "unknown seat",
            Method::POST,
            holds.clone(),
            &admission,
            r#"{"seat_ids":["A-9-9"]}"#,
            404,
            "seat_not_found",
        ),
        case(
            "empty seat list",
            Method::POST,
            holds.clone(),
            &admission,
            r#"{"seat_ids":[]}"#,
            422,
            "invalid_request",
        ),
        case(
            "seat twice",
            Method::POST,
            holds.clone(),
            &admission,
            r#"{"seat_ids":["A-1-2","A-1-2"]}"#,
            422,
            "invalid_request",
        ),
        case(
            "unknown section",
            Method::POST,
            holds.clone(),
            &admission,
            r#"{"best_available":{"section":"Z","quantity":1}}"#,
            404,
            "section_not_found",
        ),
        case(
            "zero quantity",
            Method::POST,
            holds.clone(),
            &admission,
            r#"{"best_available":{"section":"A","quantity":0}}"#,
            422,
            "invalid_request",
        ),
        case(
            "negative quantity",
            Method::POST,
            holds.clone(),
            &admission,
            r#"{"best_available":{"section":"A","quantity":-1}}"#,
            422,
            "invalid_body",
        ),
        case(
            "huge quantity",
            Method::POST,
            holds.clone(),
            &admission,
            r#"{"best_available":{"section":"GA","quantity":4294967295}}"#,
            422,
            "limit_exceeded",
        ),
        case(
            "quantity overflow",
            Method::POST,
            holds.clone(),
            &admission,
            r#"{"best_available":{"section":"GA","quantity":99999999999999999999}}"#,
            422,
            "invalid_body",
        ),
        case(
            "unknown event",
            Method::POST,
            "/v1/events/999/holds".into(),
            &admission,
            r#"{"seat_ids":["A-1-2"]}"#,
            403,
            "token_wrong_event",
        ),
        case(
            "bad event id",
            Method::POST,
            "/v1/events/abc/holds".into(),
            &admission,
            r#"{"seat_ids":["A-1-2"]}"#,
            404,
            "event_not_found",
        ),
        case(
            "other event token",
            Method::POST,
            holds.clone(),
            &other_admission,
            r#"{"seat_ids":["A-1-2"]}"#,
            403,
            "token_wrong_event",
        ),
        case(
            "forged token",
            Method::POST,
            holds.clone(),
            &forged,
            r#"{"seat_ids":["A-1-2"]}"#,
            401,
            "invalid_token",
        ),
        case(
            "buyer token as admission",
            Method::POST,
            holds.clone(),
            &token,
            r#"{"seat_ids":["A-1-2"]}"#,
            401,
            "invalid_token",
        ),
        case(
            "no token",
            Method::POST,
            holds.clone(),
            "",
            r#"{"seat_ids":["A-1-2"]}"#,
            401,
            "missing_token",
        ),
        case(
            "checkout of unknown hold",
            Method::POST,
            format!("/v1/holds/{event}-{}/checkout", "0".repeat(32)),
            &token,
            r#"{"payment_method":"pm_card_visa"}"#,
            404,
            "hold_not_found",
        ),
        case(
            "checkout with bad hold id",
            Method::POST,
            "/v1/holds/zzz/checkout".into(),
            &token,
            r#"{"payment_method":"pm_card_visa"}"#,
            404,
            "hold_not_found",
        ),
        case(
            "checkout of someone else's hold",
            Method::POST,
            checkout.clone(),
            &stranger,
            r#"{"payment_method":"pm_card_visa"}"#,
            404,
            "hold_not_found",
        ),
        case(
            "checkout without method",
            Method::POST,
            checkout.clone(),
            &token,
            "{}",
            422,
            "invalid_body",
        ),
        case(
            "checkout with admission token",
            Method::POST,
            checkout.clone(),
            &admission,
            r#"{"payment_method":"pm_card_visa"}"#,
            401,
            "invalid_token",
        ),
        case(
            "create event as buyer",
            Method::POST,
            "/v1/events".into(),
            &token,
            "{}",
            403,
            "forbidden",
        ),
        case(
            "create bad event",
            Method::POST,
            "/v1/events".into(),
            &op,
            r#"{"name":"x","tiers":[],"sections":[]}"#,
            422,
            "invalid_request",
        ),
        case(
            "open unknown event",
            Method::POST,
            "/v1/events/4242/open".into(),
            &op,
            "",
            404,
            "event_not_found",
        ),
        case(
            "unknown order",
            Method::GET,
            format!("/v1/orders/{}", uuid()),
            &token,
            "",
            404,
            "order_not_found",
        ),
        case(
            "unknown route",
            Method::GET,
            "/v1/nothing".into(),
            &token,
            "",
            404,
            "not_found",
        ),
        case(
            "wrong method",
            Method::PUT,
            holds.clone(),
            &admission,
            "",
            405,
            "method_not_allowed",
        ),
        case(
            "too large",
            Method::POST,
            holds.clone(),
            &admission,
            &format!("{{\"seat_ids\":[\"{}\"]}}", "x".repeat(5 << 20)),
            413,
            "payload_too_large",
        ),
        case(
            "larger than a hold ever needs (64 KiB)",
            Method::POST,
            holds.clone(),
            &admission,
            &format!("{{\"seat_ids\":[\"{}\"]}}", "x".repeat(100 << 10)),
            413,
            "payload_too_large",
        ),
    ];
    let mut no_key = case(
        "missing idempotency key",
        Method::POST,
        holds.clone(),
        &admission,
        r#"{"seat_ids":["A-1-2"]}"#,
        400,
        "idempotency_key_required",
    );
    no_key.key = None;
    cases.push(no_key);
    let initial = snapshot(&app, event, &token).await;
    for c in cases {
        let before = snapshot(&app, event, &token).await;
        let mut req = app.client.request(c.method.clone(), app.url(&c.path));
        if !c.token.is_empty() {
            req = req.bearer_auth(&c.token);
        }
        if let Some(k) = &c.key {
            req = req.header("Idempotency-Key", k);
        }
        if let Some(b) = c.body.clone() {
            req = req.header("content-type", "application/json").body(b);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let body: Value = res.json().await.unwrap_or(Value::Null);
        assert_eq!(
            (status, body["error"].as_str()),
            (c.status, Some(c.code)),
            "{}: {body}",
            c.name
        );
        assert!(
            body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{}: a message for people",
            c.name
        );
        assert_eq!(
            snapshot(&app, event, &token).await,
            before,
            "{} changed state",
            c.name
        );
    }
    assert_eq!(snapshot(&app, event, &token).await, initial);
}

#[boxoffice_testkit::test]
async fn an_expired_admission_token_is_refused() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 5, 0, 4)).await;
    let (_, admission) = app.admitted_buyer(event).await;
    // Used once while valid (so the engine has seen and verified it), then it expires.
    let res = app
        .hold(event, &admission, json!({"seat_ids": ["A-1-2"]}))
        .await;
    assert_eq!(res.status().as_u16(), 201);
    app.clock
        .advance_secs(app.engine.config().admission_token_ttl_s as i64 + 1);
    let res = app
        .hold(event, &admission, json!({"seat_ids": ["A-1-1"]}))
        .await;
    assert_eq!(res.status().as_u16(), 401);
    assert_eq!(res.json::<Value>().await.unwrap()["error"], "token_expired");
    assert_eq!(app.counts(event).await["free"], json!(4));
}

/// A repeated query parameter and a path segment that is not UTF-8 were answered by
/// axum's own extractors in plain text, with no code: every refusal carries one.
#[boxoffice_testkit::test]
async fn a_malformed_query_or_file_name_gets_a_coded_4xx() {
    let app = spawn().await;
    for (path, status, code) in [
        ("/v1/queue/status?ticket=a&ticket=b", 400, "invalid_query"),
        ("/assets/%FF", 404, "not_found"),
        ("/docs/%FF", 404, "not_found"),
        ("/assets/..%2Findex.html", 404, "not_found"),
    ] {
        let res = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(res.status().as_u16(), status, "{path}");
        let body: Value = res.json().await.unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(body["error"], code, "{path}: {body}");
    }
    app.stop().await;
}
