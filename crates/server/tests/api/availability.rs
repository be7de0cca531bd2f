//! The seat map's live layer: the availability bitmap (ETag, 304) and its SSE stream of
//! deltas, both from the node's one-second snapshot.

use boxoffice_testkit::harness::http::next_event;

use crate::common::{spawn, spec};
use serde_json::{Value, json};

#[boxoffice_testkit::test]
async fn the_availability_stream_sends_a_snapshot_then_the_seats_that_were_taken_and_freed() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let res = app
        .client
        .get(app.url(&format!("/v1/events/{event}/availability/stream")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let (mut body, mut buf) = (res.bytes_stream(), String::new());
    let snapshot = next_event(&mut body, &mut buf, "snapshot").await;
    assert_eq!(
        (snapshot["seats"].clone(), snapshot["free"].clone()),
        (json!(10), json!(10))
    );

    let (token, admission) = app.admitted_buyer(event).await;
    let hold: Value = app
        .hold(event, &admission, json!({"seat_ids": ["A-1-3", "A-1-4"]}))
        .await
        .json()
        .await
        .unwrap();
    app.clock.advance_secs(2);
    let delta = next_event(&mut body, &mut buf, "delta").await;
    assert_eq!(
        (
            delta["taken"].clone(),
            delta["free"].clone(),
            delta["free_count"].clone()
        ),
        (json!([2, 3]), json!([]), json!(8))
    );

    let path = format!("/v1/holds/{}", hold["hold_id"].as_str().unwrap());
    let res = app
        .client
        .delete(app.url(&path))
        .bearer_auth(&token)
        .header("Idempotency-Key", crate::common::uuid())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    app.clock.advance_secs(2);
    let delta = next_event(&mut body, &mut buf, "delta").await;
    assert_eq!(
        (delta["free"].clone(), delta["taken"].clone()),
        (json!([2, 3]), json!([]))
    );
}

#[boxoffice_testkit::test]
async fn the_availability_bitmap_revalidates_with_its_etag() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let url = app.url(&format!("/v1/events/{event}/availability"));
    let res = app.client.get(&url).send().await.unwrap();
    let etag = res.headers()["etag"].to_str().unwrap().to_string();
    let v: Value = res.json().await.unwrap();
    assert_eq!(
        (v["free"].clone(), v["bitmap"].clone()),
        (json!(10), json!("/8A="))
    );
    let res = app
        .client
        .get(&url)
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 304);
    let (_, admission) = app.admitted_buyer(event).await;
    app.hold(event, &admission, json!({"seat_ids": ["A-1-1"]}))
        .await;
    app.clock.advance_secs(2);
    let res = app
        .client
        .get(&url)
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "a changed map is sent again");
    assert_eq!(res.json::<Value>().await.unwrap()["bitmap"], json!("f8A="));
}

#[boxoffice_testkit::test]
async fn the_availability_of_an_event_not_on_sale_is_a_409_saying_why_rather_than_unavailable() {
    let app = spawn().await;
    let spec = serde_json::to_value(spec(1, 10, 0, 4)).unwrap();
    let mut drafts = Vec::new();
    for _ in 0..2 {
        let res = app
            .post(
                "/v1/events",
                &app.operator_key,
                &crate::common::uuid(),
                spec.clone(),
            )
            .await;
        drafts.push(res.json::<Value>().await.unwrap()["event_id"].clone());
    }
    // The second is closed without ever being opened: the hot store never had it.
    let close = format!("/v1/events/{}/close", drafts[1]);
    let res = app
        .post(&close, &app.operator_key, &crate::common::uuid(), json!({}))
        .await;
    assert_eq!(res.status(), 200);
    for (event, code) in drafts.iter().zip(["sale_not_open", "sale_closed"]) {
        for path in ["availability", "availability/stream"] {
            let res = app.get(&format!("/v1/events/{event}/{path}"), "").await;
            let status = res.status().as_u16();
            let body: Value = res.json().await.unwrap();
            assert_eq!(
                (status, body["error"].clone()),
                (409, json!(code)),
                "{path}: {body}"
            );
        }
    }
}
