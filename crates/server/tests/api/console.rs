//! What the operator console reads: the event list (public), an event's live dashboard
//! and the audit (operator only, the audit paced), the event's venue and announced
//! opening, and the console's page itself.

use crate::common::*;
use boxoffice_domain::{EventId, Millis};
use boxoffice_engine::ports::Clock;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Moves the test clock on by `ms` (the dashboard is recomputed at most twice a second
/// by the engine's clock, and hold rates count whole seconds).
fn later(app: &TestApp, ms: i64) {
    app.clock.set(Millis(app.clock.now().0 + ms));
}

async fn dashboard(app: &TestApp, event: EventId) -> Value {
    let res = app
        .get(&format!("/v1/events/{event}/dashboard"), &app.operator_key)
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    res.json().await.unwrap()
}

async fn error_of(res: reqwest::Response) -> (StatusCode, String) {
    let status = res.status();
    let v: Value = res.json().await.unwrap();
    (status, v["error"].as_str().unwrap_or_default().to_string())
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_holds_won_and_lost_orders_by_state_and_the_admission_override() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let path = format!("/v1/events/{event}/dashboard");
    assert_eq!(
        error_of(app.get(&path, "").await).await,
        (StatusCode::UNAUTHORIZED, "missing_token".into())
    );
    let (buyer, _) = app.admitted_buyer(event).await;
    assert_eq!(
        error_of(app.get(&path, &buyer).await).await,
        (StatusCode::FORBIDDEN, "forbidden".into())
    );

    let before = dashboard(&app, event).await;
    assert_eq!(before["capacity"], json!(10));
    assert_eq!(before["holds"]["won_total"], json!(0));
    assert_eq!(before["orders"], json!({}));

    // One buyer wins two seats and pays; a second asks for one of them and loses.
    let (token, admission) = app.admitted_buyer(event).await;
    let seats = json!({"seat_ids": ["A-1-1", "A-1-2"]});
    let res = app.hold(event, &admission, seats).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let hold = res.json::<Value>().await.unwrap()["hold_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, rival) = app.admitted_buyer(event).await;
    let res = app
        .hold(event, &rival, json!({"seat_ids": ["A-1-2"]}))
        .await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    let res = app.checkout(&hold, &token, "pm_card_visa").await;
    assert_eq!(res.status(), StatusCode::CREATED);

    later(&app, 1_000);
    let d = dashboard(&app, event).await;
    assert_eq!(d["holds"]["won_total"], json!(1), "{d}");
    assert_eq!(d["holds"]["lost_total"], json!(1), "{d}");
    // Both in the last full second, averaged over three.
    let per_s = d["holds"]["won_per_s"].as_f64().unwrap();
    assert!((per_s - 1.0 / 3.0).abs() < 1e-9, "{d}");
    assert_eq!(d["orders"], json!({"confirmed": 1}), "{d}");
    assert_eq!(d["seats"]["sold"], json!(2), "{d}");
    assert_eq!(d["admitted"], json!(3), "{d}");
    assert!(d["latency"]["hold_p99_ms"].as_f64().is_some(), "{d}");
    assert_eq!(d["payments"]["errors"], json!(0), "{d}");
    assert_eq!(d["rate"]["reason"], json!("configured"), "{d}");

    // The override shows on the dashboard at once (once the half second has passed).
    let res = app
        .client
        .put(app.url(&format!("/v1/events/{event}/admission")))
        .bearer_auth(&app.operator_key)
        .json(&json!({"mode": "fixed", "rate_per_s": 7}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    later(&app, 600);
    let d = dashboard(&app, event).await;
    assert_eq!(
        d["rate"],
        json!({"rate_per_s": 7, "reason": "operator_override"})
    );
    assert_eq!(d["control"]["rate_per_s"], json!(7));

    let res = app
        .get("/v1/events/999999/dashboard", &app.operator_key)
        .await;
    assert_eq!(
        error_of(res).await,
        (StatusCode::NOT_FOUND, "event_not_found".into())
    );
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_listed_newest_first_with_their_venue_and_announced_opening() {
    let app = spawn().await;
    let opens = 1_900_000_000_000_i64;
    let mut with_venue = serde_json::to_value(spec(1, 5, 0, 4)).unwrap();
    with_venue["venue"] = json!("  Hall One  ");
    with_venue["opens_at"] = json!(opens);
    let res = app
        .post("/v1/events", &app.operator_key, &uuid(), with_venue)
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let first: Value = res.json().await.unwrap();
    assert_eq!(first["venue"], json!("Hall One"));
    assert_eq!(first["opens_at"], json!(opens));
    let second = app.create_event(&spec(1, 5, 0, 4)).await;

    let all: Value = app.get("/v1/events", "").await.json().await.unwrap();
    let ids: Vec<i64> = (all["events"].as_array().unwrap().iter())
        .map(|e| e["event_id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, vec![second.0, first["event_id"].as_i64().unwrap()]);
    let listed = &all["events"][1];
    assert_eq!(listed["venue"], json!("Hall One"));
    assert_eq!(listed["opens_at"], json!(opens));
    assert_eq!(listed["status"], json!("scheduled"));
    assert_eq!(listed["price_from"], json!(5_000));
    let got: Value = (app
        .get(&format!("/v1/events/{}", first["event_id"]), "")
        .await)
        .json()
        .await
        .unwrap();
    assert_eq!(
        (&got["venue"], &got["opens_at"]),
        (&json!("Hall One"), &json!(opens))
    );

    let open: Value = (app.get("/v1/events?status=open", "").await)
        .json()
        .await
        .unwrap();
    assert_eq!(open["events"].as_array().unwrap().len(), 1);
    assert_eq!(open["events"][0]["event_id"], json!(second.0));
    let one: Value = (app.get("/v1/events?limit=1", "").await)
        .json()
        .await
        .unwrap();
    assert_eq!(one["events"].as_array().unwrap().len(), 1);
    for bad in ["status=sold", "limit=0", "limit=101", "limit=x"] {
        let res = app.get(&format!("/v1/events?{bad}"), "").await;
        assert_eq!(
            error_of(res).await,
            (StatusCode::BAD_REQUEST, "invalid_query".into()),
            "{bad}"
        );
    }

    // A blank venue is refused and creates nothing.
    let mut blank = serde_json::to_value(spec(1, 5, 0, 4)).unwrap();
    blank["venue"] = json!("   ");
    let res = app
        .post("/v1/events", &app.operator_key, &uuid(), blank)
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let after: Value = app.get("/v1/events", "").await.json().await.unwrap();
    assert_eq!(after["events"].as_array().unwrap().len(), 2);
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_answers_the_operator_in_words_and_at_most_once_in_five_seconds() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 5, 0, 4)).await;
    let (token, admission) = app.admitted_buyer(event).await;
    let res = app
        .hold(event, &admission, json!({"seat_ids": ["A-1-1"]}))
        .await;
    let hold = res.json::<Value>().await.unwrap()["hold_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        app.checkout(&hold, &token, "pm_card_visa").await.status(),
        StatusCode::CREATED
    );
    assert_eq!(
        error_of(app.get("/v1/audit", &token).await).await,
        (StatusCode::FORBIDDEN, "forbidden".into())
    );
    let res = app.get("/v1/audit", &app.operator_key).await;
    assert_eq!(res.status(), StatusCode::OK);
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["clean"], json!(true), "{v}");
    assert_eq!(v["report"]["seats_sold"], json!(1), "{v}");
    let summary = v["summary"].as_str().unwrap();
    assert!(
        summary.contains("1 seats sold") && summary.contains("Clean"),
        "{summary}"
    );

    let res = app.get("/v1/audit", &app.operator_key).await;
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=5).contains(&wait), "{wait}");
    assert_eq!(error_of(res).await.1, "rate_limited");
}

#[boxoffice_testkit::test]
async fn the_console_page_is_served_under_the_policy_and_in_brotli() {
    let app = spawn().await;
    let res = (app.client.get(app.url("/console")))
        .header("Accept-Encoding", "br, gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let h = res.headers();
    assert_eq!(h["content-encoding"], "br");
    assert_eq!(h["cache-control"], "no-cache");
    let csp = h["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("script-src 'self' 'sha256-") && !csp.contains("unsafe"));
    let plain = (app.client.get(app.url("/console")))
        .header("Accept-Encoding", "identity")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(plain.contains("Box office console"));
    assert!(!plain.contains("operator_key"), "no key in the page");
}
