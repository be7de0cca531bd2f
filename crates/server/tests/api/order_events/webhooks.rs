//! Webhook endpoints: an endpoint that is down gets everything once it recovers, in
//! order per order and signed; one that stays down fills its dead letters, which the
//! operator reads and replays; the endpoint routes refuse what they cannot do.

use std::time::Duration;

use boxoffice_testkit::eventually;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{add_endpoint, confirmed_orders, history_ids, signed_receiver};
use crate::common::{TestApp, spawn_with, uuid};

async fn app(max_attempts: u32) -> TestApp {
    spawn_with(|c| {
        c.workers.relay_interval_ms = 20;
        c.relay.retry_min_ms = 1_000;
        c.relay.retry_max_ms = 4_000;
        c.relay.max_attempts = max_attempts;
    })
    .await
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_down_for_a_while_gets_every_event_once_up_in_order_and_signed() {
    let app = app(50).await;
    let (receiver, _) = signed_receiver(&app).await;
    receiver.set_down(true);
    let orders = confirmed_orders(&app, 30).await;
    let expected = history_ids(&app.client, &app.base, &orders).await;
    assert_eq!(
        expected.len(),
        30 * 4,
        "created, authorized, committed, captured"
    );
    eventually(
        "the relay to try the endpoint that is down",
        Duration::from_secs(30),
        Duration::from_millis(20),
        || async {
            if receiver.refused() > 0 {
                Ok(())
            } else {
                Err("no attempt yet")
            }
        },
    )
    .await;
    assert!(receiver.accepted().is_empty());
    receiver.set_down(false);
    // The retries are due on the app's manual clock: move it on while waiting.
    eventually(
        "every event at the endpoint",
        Duration::from_secs(60),
        Duration::from_millis(50),
        || async {
            app.clock.advance_secs(5);
            let missing = expected.difference(&receiver.ids()).count();
            if missing == 0 {
                Ok(())
            } else {
                Err(format!("{missing} missing"))
            }
        },
    )
    .await;
    assert_eq!(receiver.bad_signatures(), 0);
    assert_eq!(receiver.ids(), expected, "nothing else was delivered");
    receiver.assert_in_order_per_order();
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_an_endpoint_never_took_become_dead_letters_the_operator_replays() {
    let app = app(2).await;
    let (receiver, endpoint) = signed_receiver(&app).await;
    receiver.set_down(true);
    let orders = confirmed_orders(&app, 1).await;
    let expected = history_ids(&app.client, &app.base, &orders).await;
    let letters_path = format!("/v1/webhook-endpoints/{endpoint}/dead-letters");
    let op = app.operator_key.clone();
    let letters: Vec<Value> = eventually(
        "four dead letters",
        Duration::from_secs(60),
        Duration::from_millis(50),
        || async {
            app.clock.advance_secs(5);
            let v: Value = app.get(&letters_path, &op).await.json().await.unwrap();
            let letters = v["dead_letters"].as_array().cloned().unwrap_or_default();
            if letters.len() == 4 {
                Ok(letters)
            } else {
                Err(letters.len())
            }
        },
    )
    .await;
    for l in &letters {
        assert_eq!(l["attempts"], 2);
        assert!(l["last_error"].as_str().unwrap().contains("503"), "{l}");
        assert_eq!(l["payload"]["id"], l["event_id"]);
        assert!(expected.contains(l["event_id"].as_str().unwrap()));
    }
    assert!(receiver.accepted().is_empty());
    receiver.set_down(false);
    let replay = format!("{letters_path}/replay");
    let res = app.post(&replay, &op, &uuid(), json!({})).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.json::<Value>().await.unwrap(), json!({"replayed": 4}));
    eventually(
        "the replayed events at the endpoint",
        Duration::from_secs(30),
        Duration::from_millis(20),
        || async {
            let missing = expected.difference(&receiver.ids()).count();
            if missing == 0 { Ok(()) } else { Err(missing) }
        },
    )
    .await;
    let v: Value = app.get(&letters_path, &op).await.json().await.unwrap();
    assert_eq!(v["dead_letters"], json!([]));
    assert_eq!(receiver.bad_signatures(), 0);
    app.stop().await;
}

#[boxoffice_testkit::test]
async fn endpoints_are_listed_without_secrets_and_deleted_once() {
    let app = app(20).await;
    let op = app.operator_key.clone();
    let (id, secret) = add_endpoint(&app, "http://127.0.0.1:9/hook").await;
    assert!(
        secret.starts_with("whsec_") && secret.len() > 40,
        "{secret}"
    );
    let list: Value = app
        .get("/v1/webhook-endpoints", &op)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(list["endpoints"].as_array().unwrap().len(), 1);
    assert_eq!(list["endpoints"][0]["id"], id.as_str());
    assert!(
        !list.to_string().contains(&secret),
        "the secret is shown once: {list}"
    );
    for bad in ["ftp://x", "http://", "not a url"] {
        let res = app
            .post("/v1/webhook-endpoints", &op, &uuid(), json!({"url": bad}))
            .await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        assert_eq!(res.json::<Value>().await.unwrap()["error"], "invalid_body");
    }
    let (_, buyer) = app.buyer().await;
    let res = app.get("/v1/webhook-endpoints", &buyer).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let path = format!("/v1/webhook-endpoints/{id}");
    let delete = || {
        app.client
            .delete(app.url(&path))
            .bearer_auth(&op)
            .header("Idempotency-Key", uuid())
            .send()
    };
    assert_eq!(delete().await.unwrap().status(), StatusCode::NO_CONTENT);
    let again = delete().await.unwrap();
    assert_eq!(again.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        again.json::<Value>().await.unwrap()["error"],
        "webhook_endpoint_not_found"
    );
    for missing in [
        format!("{path}/dead-letters"),
        "/v1/webhook-endpoints/we_nope/dead-letters".into(),
    ] {
        let res = app.get(&missing, &op).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{missing}");
        assert_eq!(
            res.json::<Value>().await.unwrap()["error"],
            "webhook_endpoint_not_found"
        );
    }
    let list: Value = app
        .get("/v1/webhook-endpoints", &op)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(list["endpoints"], json!([]));
    app.stop().await;
}

/// An endpoint that takes the connection and never answers: every delivery to it waits
/// for the timeout. Its deliveries filled every claim beside the healthy endpoint's,
/// and a step waited for rounds of their timeouts, so the endpoint that answers got its
/// events at that pace, the retries coming due again without end. After failing a few
/// times in a row a sink now rests, its deliveries recorded as failed attempts without
/// a call: here (the clock stands still, so nothing comes due twice) the first claim's
/// thirty calls to the endpoint that never answers stop after a few.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 120)]
async fn an_endpoint_that_never_answers_does_not_hold_up_the_others() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let hang = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hang_url = format!("http://{}/hook", hang.local_addr().unwrap());
    let calls = Arc::new(AtomicUsize::new(0));
    let holding = tokio::spawn({
        let calls = calls.clone();
        async move {
            let mut held = Vec::new();
            while let Ok((conn, _)) = hang.accept().await {
                calls.fetch_add(1, Ordering::SeqCst);
                held.push(conn);
            }
        }
    });
    let app = spawn_with(|c| {
        c.workers.relay_interval_ms = 20;
        c.relay.webhook_timeout_ms = 1_000;
        c.relay.in_flight = 4;
        c.relay.max_attempts = 1_000;
    })
    .await;
    add_endpoint(&app, &hang_url).await;
    let (receiver, _) = signed_receiver(&app).await;
    let orders = confirmed_orders(&app, 30).await;
    let expected = history_ids(&app.client, &app.base, &orders).await;
    assert_eq!(expected.len(), 120);
    eventually(
        "every event at the endpoint that answers",
        Duration::from_secs(60),
        Duration::from_millis(50),
        || async {
            let missing = expected.difference(&receiver.ids()).count();
            if missing == 0 { Ok(()) } else { Err(missing) }
        },
    )
    .await;
    let called = calls.load(Ordering::SeqCst);
    assert!(
        called < 20,
        "the endpoint that never answers was called {called} times, not rested"
    );
    receiver.assert_in_order_per_order();
    app.stop().await;
    holding.abort();
}
