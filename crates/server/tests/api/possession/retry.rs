//! A retry of a completed request gets its stored answer (P4), also once the hold it
//! was made for, and with it the key the hold was bound to, is gone from the hot store.

use super::*;

/// One checkout request with a given Idempotency-Key.
async fn checkout_keyed(
    app: &TestApp,
    hold: &str,
    client: &Client,
    idempotency_key: &str,
) -> Response {
    let path = format!("/v1/holds/{hold}/checkout");
    app.client
        .post(app.url(&path))
        .bearer_auth(&client.token)
        .header("Idempotency-Key", idempotency_key)
        .header("DPoP", proof(&client.key, "POST", &path, now_s(app)))
        .json(&json!({"payment_method": "pm_card_visa"}))
        .send()
        .await
        .unwrap()
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_checkout_after_its_holds_binding_lapsed_gets_its_stored_answer() {
    let (app, event, client) = admitted_with(proof_key()).await;
    let hold_id = held(&app, event, &client).await;
    let key = uuid();
    let first = checkout_keyed(&app, &hold_id, &client, &key).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.unwrap();
    // The hot store forgets the hold, and with it the key it was bound to (as it
    // forgets finished holds beyond its bound, or when it is lost and rebuilt).
    let hold: boxoffice_domain::HoldId = hold_id.parse().unwrap();
    app.engine.ports().arbiter.unload(event).await.unwrap();
    assert_eq!(app.engine.ports().arbiter.get(hold).await.unwrap(), None);
    let retried = checkout_keyed(&app, &hold_id, &client, &key).await;
    assert_eq!(retried.status(), StatusCode::CREATED, "the stored answer");
    let retried: Value = retried.json().await.unwrap();
    assert_eq!(retried["order_id"], first["order_id"]);
    assert_eq!(retried, first);
    app.stop().await;
}
