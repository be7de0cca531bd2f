//! The seeds' scenario on a controlled clock: 100 holds, 70 paid, 30 expire; a checkout
//! of an expired hold; a double click; a hold past the per-buyer limit.

use crate::common::{spawn, spec, uuid};
use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_expired_holds_return_to_stock_exactly_once_and_cannot_be_paid() {
    let app = spawn().await;
    let event = app.create_event(&spec(10, 10, 0, 4)).await;
    let mut holds = Vec::new();
    for _ in 0..100 {
        let (token, admission) = app.admitted_buyer(event).await;
        let res = app
            .hold(
                event,
                &admission,
                json!({"best_available": {"section": "A", "quantity": 1}}),
            )
            .await;
        assert_eq!(res.status(), StatusCode::CREATED);
        let hold = res.json::<Value>().await.unwrap()["hold_id"]
            .as_str()
            .unwrap()
            .to_string();
        holds.push((token, hold, admission));
    }
    assert_eq!(app.counts(event).await["free"], json!(0));
    for (token, hold, _) in &holds[..70] {
        assert_eq!(
            app.checkout(hold, token, "pm_card_visa").await.status(),
            StatusCode::CREATED
        );
    }
    // The TTL (600 s) passes for the thirty that did not pay.
    app.clock.advance_secs(601);
    let first = app.engine.expiry_step().await.unwrap();
    let again = app.engine.expiry_step().await.unwrap();
    assert_eq!(
        (first.done, again.done),
        (30, 0),
        "each expired hold is returned once"
    );
    let counts = app.counts(event).await;
    assert_eq!(
        (
            counts["sold"].clone(),
            counts["free"].clone(),
            counts["held"].clone()
        ),
        (json!(70), json!(30), json!(0))
    );

    // A late checkout of an expired hold: 410, and the provider never heard of it.
    let (token, hold, admission) = &holds[70];
    let res = app.checkout(hold, token, "pm_card_visa").await;
    assert_eq!(res.status(), StatusCode::GONE);
    assert_eq!(res.json::<Value>().await.unwrap()["error"], "hold_expired");
    let provider = app.engine.ports().payments.all_payments().await.unwrap();
    assert_eq!(
        provider.len(),
        70,
        "only the seventy paying buyers were charged"
    );

    // The thirty seats are sellable again, each exactly once.
    let mut again = Vec::new();
    for _ in 0..30 {
        let (_, admission) = app.admitted_buyer(event).await;
        again.push(
            app.hold(
                event,
                &admission,
                json!({"best_available": {"section": "A", "quantity": 1}}),
            )
            .await
            .status(),
        );
    }
    assert!(again.iter().all(|s| *s == StatusCode::CREATED));
    // Sold out again: an admitted buyer is refused, and the line is told at once.
    let res = app
        .hold(
            event,
            admission,
            json!({"best_available": {"section": "A", "quantity": 1}}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    assert_eq!(res.json::<Value>().await.unwrap()["error"], "sold_out");
    let (_, latecomer) = app.buyer().await;
    let joined: Value = app
        .post(
            &format!("/v1/events/{event}/queue"),
            &latecomer,
            &uuid(),
            json!({}),
        )
        .await
        .json()
        .await
        .unwrap();
    app.engine.admit_batch(event).await.unwrap();
    let status: Value = app
        .get("/v1/queue/status", joined["queue_ticket"].as_str().unwrap())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(status["status"], "sold_out");
    assert!(app.engine.audit().await.unwrap().clean());
}

#[boxoffice_testkit::test]
async fn a_double_click_with_the_same_idempotency_key_makes_one_hold() {
    let app = spawn().await;
    let event = app.create_event(&spec(2, 5, 0, 4)).await;
    let (_, admission) = app.admitted_buyer(event).await;
    let key = uuid();
    let body = json!({"best_available": {"section": "A", "quantity": 2}});
    let path = format!("/v1/events/{event}/holds");
    let clicks = (0..5).map(|_| app.post(&path, &admission, &key, body.clone()));
    let responses = join_all(clicks).await;
    let mut hold_ids = Vec::new();
    for res in responses {
        let status = res.status();
        let v: Value = res.json().await.unwrap();
        match status {
            StatusCode::CREATED => hold_ids.push(v["hold_id"].as_str().unwrap().to_string()),
            StatusCode::CONFLICT => assert_eq!(v["error"], "request_in_progress"),
            other => panic!("unexpected {other}: {v}"),
        }
    }
    hold_ids.dedup();
    assert_eq!(hold_ids.len(), 1, "every success names the same hold");
    // A later click replays the first answer.
    let res = app.post(&path, &admission, &key, body.clone()).await;
    assert_eq!(res.headers().get("idempotent-replayed").unwrap(), "true");
    assert_eq!(
        res.json::<Value>().await.unwrap()["hold_id"],
        json!(hold_ids[0])
    );
    let counts = app.counts(event).await;
    assert_eq!(
        (counts["active_holds"].clone(), counts["held"].clone()),
        (json!(1), json!(2))
    );
    // The same key with another body is refused and changes nothing.
    let res = app
        .post(
            &path,
            &admission,
            &key,
            json!({"best_available": {"section": "A", "quantity": 1}}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        res.json::<Value>().await.unwrap()["error"],
        "idempotency_key_reused"
    );
    assert_eq!(app.counts(event).await["held"], json!(2));
}

#[boxoffice_testkit::test]
async fn a_hold_beyond_the_per_buyer_limit_is_refused_with_422() {
    let app = spawn().await;
    let event = app.create_event(&spec(2, 10, 0, 4)).await;
    let (token, admission) = app.admitted_buyer(event).await;
    let take = |n: u32| json!({"best_available": {"section": "A", "quantity": n}});
    let res = app.hold(event, &admission, take(3)).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let hold = res.json::<Value>().await.unwrap()["hold_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Three held plus two more would be five: over the limit of four.
    let res = app.hold(event, &admission, take(2)).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        res.json::<Value>().await.unwrap()["error"],
        "limit_exceeded"
    );
    // Bought seats count too.
    assert_eq!(
        app.checkout(&hold, &token, "pm_card_visa").await.status(),
        StatusCode::CREATED
    );
    assert_eq!(
        app.hold(event, &admission, take(2)).await.status(),
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(
        app.hold(event, &admission, take(1)).await.status(),
        StatusCode::CREATED
    );
    assert_eq!(
        app.hold(event, &admission, take(5)).await.status(),
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(app.counts(event).await["held"], json!(1));
}

#[boxoffice_testkit::test]
async fn a_declined_card_releases_the_seats_and_charges_nothing() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 2, 0, 4)).await;
    let (token, admission) = app.admitted_buyer(event).await;
    let res = app
        .hold(event, &admission, json!({"seat_ids": ["A-1-1", "A-1-2"]}))
        .await;
    let hold = res.json::<Value>().await.unwrap()["hold_id"]
        .as_str()
        .unwrap()
        .to_string();
    let res = app.checkout(&hold, &token, "pm_card_declined").await;
    assert_eq!(res.status(), StatusCode::PAYMENT_REQUIRED);
    assert_eq!(
        res.json::<Value>().await.unwrap()["error"],
        "payment_declined"
    );
    let counts = app.counts(event).await;
    assert_eq!(
        (counts["free"].clone(), counts["sold"].clone()),
        (json!(2), json!(0))
    );
    let orders: Value = app.get("/v1/me/orders", &token).await.json().await.unwrap();
    assert_eq!(orders["orders"][0]["status"], "declined");
    assert!(app.engine.audit().await.unwrap().clean());
}
