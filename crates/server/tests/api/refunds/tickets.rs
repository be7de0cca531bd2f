//! One ticket of an order cancelled by the operator: N ≫ K racing requests over K
//! tickets cancel each once, its seat back once in the ledger and the hot store, its
//! price refunded once in the provider's book, its barcode refused and listed revoked,
//! a history line per ticket; refusals are coded and change nothing; the order's
//! cancellation later refunds only the rest. A claim whose money never moved (the
//! server killed after it, while the refund waited for the provider) is finished by the
//! recovery sweep of the server started again, once the claim is idle, and once.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use boxoffice_domain::{OrderId, OrderState};
use boxoffice_engine::ports::{Ledger, PaymentGateway, ProviderState, Tickets};
use boxoffice_payment_fake::FakeGateway;
use boxoffice_testkit::eventually;
use boxoffice_testkit::harness::http::call;
use futures::future::join_all;
use reqwest::Method;
use serde_json::{Value, json};

use super::{audit_clean, order_of, selling, undo, undo_with_key};
use crate::common::books::{ledger, provider_book};
use crate::common::on_disk::{self, clean_audit, open_event, sell, start, wall_clock};
use crate::common::{spec, uuid};
use crate::tickets::{barcode, bundle, buy, gate, scan};

/// The partial refunds of `order` in the provider's book, by key.
async fn parts_of(book: &FakeGateway, order: OrderId) -> HashMap<String, i64> {
    (book.partial_refunds().await.unwrap().into_iter())
        .filter(|r| r.order == order)
        .map(|r| (r.key, r.amount.0))
        .collect()
}

/// Requests racing per ticket.
const RACERS: usize = 12;

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn racing_cancellations_of_k_tickets_cancel_and_refund_each_once_and_the_order_only_the_rest()
{
    let (app, book, event) = selling(&spec(1, 5, 0, 4)).await;
    let (token, tickets) = buy(&app, event, 4).await;
    let (order, total) = order_of(&app, &token).await;
    let price = total / 4;
    assert_eq!(app.counts(event).await["sold"], json!(4));
    let id = |n: usize| tickets[n]["ticket_id"].as_str().unwrap().to_string();

    // N ≫ K racing requests over K = 2 tickets.
    let racing = (0..2 * RACERS).map(|n| {
        let path = format!("/v1/tickets/{}/cancel", id(n % 2));
        let app = &app;
        async move { (n % 2, undo(app, &path, &app.operator_key).await) }
    });
    let mut won = vec![0, 0];
    for (n, (status, body)) in join_all(racing).await {
        match status {
            200 => {
                won[n] += 1;
                assert_eq!(body["ticket_id"], json!(id(n)), "{body}");
                assert_eq!(body["amount"], json!(price), "{body}");
                assert_eq!(body["state"], "cancelled", "{body}");
            }
            409 => assert_eq!(body["error"], "ticket_already_cancelled", "{body}"),
            _ => panic!("unexpected answer {status}: {body}"),
        }
    }
    assert_eq!(won, vec![1, 1], "each ticket cancelled exactly once");
    let counts = app.counts(event).await;
    assert_eq!((&counts["sold"], &counts["free"]), (&json!(2), &json!(3)));
    let parts = parts_of(&book, order).await;
    assert_eq!(parts.len(), 2, "{parts:?}");
    for n in 0..2 {
        assert_eq!(parts.get(&format!("{}.cancel", id(n))), Some(&price));
    }
    let paid = book.all_payments().await.unwrap();
    let paid = paid.iter().find(|p| p.order == order).unwrap();
    assert_eq!(
        paid.state,
        ProviderState::Captured,
        "the rest stays captured"
    );

    // Revoked at the door and in the bundle; announced in the order's history.
    let (_, key) = gate(&app, event, "Main").await;
    let (status, body) = scan(&app, event, &key, &barcode(&tickets[0])).await;
    assert_eq!((status, &body["error"]), (409, &json!("ticket_revoked")));
    let b = bundle(&app, event, &key).await;
    let revoked = b["revoked"].as_array().unwrap();
    assert_eq!(revoked.len(), 2, "{b}");
    let (status, _) = scan(&app, event, &key, &barcode(&tickets[2])).await;
    assert_eq!(status, 200, "the order's other tickets stand");
    let history: Value = app
        .get(&format!("/v1/orders/{order}/history"), &token)
        .await
        .json()
        .await
        .unwrap();
    let lines = history["lines"].as_array().unwrap();
    let cancelled = lines
        .iter()
        .filter(|l| l.to_string().contains("ticket_cancelled"))
        .count();
    assert_eq!(cancelled, 2, "{history}");

    // Refusals: coded, nothing changed.
    let (_, other) = buy(&app, event, 1).await;
    let only = other[0]["ticket_id"].as_str().unwrap();
    let before = (app.counts(event).await, parts_of(&book, order).await);
    let path = |t: &str| format!("/v1/tickets/{t}/cancel");
    let (status, body) = undo(&app, &path(&id(2)), &app.operator_key).await;
    assert_eq!(
        (status, &body["error"]),
        (409, &json!("ticket_not_cancellable")),
        "scanned"
    );
    let (status, body) = undo(&app, &path(&uuid()), &app.operator_key).await;
    assert_eq!((status, &body["error"]), (404, &json!("ticket_not_found")));
    let (status, body) = undo(&app, &path(&id(3)), &token).await;
    assert!(
        status == 401 || status == 403,
        "operator only: {status} {body}"
    );
    let (status, body) = undo(&app, &path(only), &app.operator_key).await;
    assert_eq!(
        (status, &body["error"]),
        (409, &json!("last_ticket_of_order"))
    );
    let after = (app.counts(event).await, parts_of(&book, order).await);
    assert_eq!(after, before);
    // A repeat under the same key answers as the first request did.
    let key = uuid();
    let (_, other2) = buy(&app, event, 1).await;
    let t = other2[0]["ticket_id"].as_str().unwrap();
    let first = undo_with_key(&app, &path(t), &app.operator_key, &key).await;
    let again = undo_with_key(&app, &path(t), &app.operator_key, &key).await;
    assert_eq!(first, again);

    // The whole order later: only what is left, the cancelled tickets left alone.
    let (status, body) = undo(
        &app,
        &format!("/v1/orders/{order}/cancel"),
        &app.operator_key,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let parts = parts_of(&book, order).await;
    assert_eq!(parts.values().sum::<i64>(), total, "{parts:?}");
    assert_eq!(
        parts.get(&format!("{order}.rest")),
        Some(&(total - 2 * price))
    );
    let paid = book.all_payments().await.unwrap();
    let paid = paid.iter().find(|p| p.order == order).unwrap();
    assert_eq!(paid.state, ProviderState::Refunded);
    audit_clean(&app).await;
    app.stop().await;
}

/// The operator's key of the crash test's server.
const OPERATOR: &str = "ticket-cancel-crash-operator-key-01";
/// How long the stand-in provider waits before each call: the window, after the claim
/// and before the money moves, in which the kill lands.
const LATENCY_MS: u64 = 2_000;
/// How long a claim is left alone before the recovery sweep takes it up
/// (`engine.recovery_after_s`).
const IDLE_S: u64 = 10;

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_ticket_claimed_before_a_crash_is_finished_by_the_recovery_sweep_once() {
    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        "[engine]\nrecovery_after_s = {IDLE_S}\n\
         [workers]\nrecovery_interval_ms = 200\n[fake_payments]\nlatency_ms = {LATENCY_MS}\n"
    );
    let config = on_disk::config(dir.path(), OPERATOR, &extra);
    let ledger = ledger(dir.path());
    let book = provider_book(dir.path());
    let now = wall_clock();
    let event = open_event(&ledger, &spec(1, 4, 0, 4), now).await;
    let order = sell(&ledger, &book, &event, &[0, 1], now).await;
    let placed = ledger.order(order).await.unwrap().expect("the order");
    let total = placed.total.0;
    let id = ledger.tickets_of_order(order).await.unwrap()[0].id;

    // The server claims the cancellation and is killed (kill -9) while the refund waits
    // for the provider: the seat is back in the ledger and no money moved.
    let (mut server, base) = start(dir.path(), &config).await;
    let c = boxoffice_testkit::harness::http::client();
    let cancel = format!("{base}/v1/tickets/{id}/cancel");
    let sent = Instant::now();
    let request = tokio::spawn({
        let c = c.clone();
        async move { call(&c, Method::POST, cancel, OPERATOR, Value::Null).await }
    });
    let what = "the ticket's cancellation claimed in the ledger";
    let every = Duration::from_millis(5);
    eventually(what, Duration::from_secs(60), every, || async {
        let facts = ledger.ticket(id).await.unwrap().expect("the ticket");
        match facts.order_state {
            OrderState::Refunding => Ok(()),
            other => Err(other),
        }
    })
    .await;
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    drop(server);
    request.await.unwrap();
    assert!(
        parts_of(&book, order).await.is_empty(),
        "the kill landed after the money moved; nothing was tested"
    );
    assert_eq!(ledger.sold_seats(event.id).await.unwrap().len(), 1);

    // Started again: not before the claim is idle, then once, however often the sweep
    // runs.
    let (_server, base) = start(dir.path(), &config).await;
    let what = "the claimed ticket's part refunded by the recovery sweep";
    let every = Duration::from_millis(50);
    eventually(what, Duration::from_secs(120), every, || async {
        let parts = parts_of(&book, order).await;
        if parts.is_empty() { Err(parts) } else { Ok(()) }
    })
    .await;
    assert!(
        sent.elapsed() >= Duration::from_secs(IDLE_S),
        "a claim in flight is left alone: refunded {:?} after the request",
        sent.elapsed()
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let parts = parts_of(&book, order).await;
    assert_eq!(parts, HashMap::from([(format!("{id}.cancel"), total / 2)]));
    let url = format!("{base}/v1/events/{}", event.id);
    let (_, view) = call(&c, Method::GET, url, "", Value::Null).await;
    let counts = &view["counts"];
    assert_eq!((&counts["sold"], &counts["free"]), (&json!(1), &json!(3)));
    let cancel = format!("{base}/v1/tickets/{id}/cancel");
    let (status, body) = call(&c, Method::POST, cancel, OPERATOR, Value::Null).await;
    assert_eq!(
        (status, &body["error"]),
        (409, &json!("ticket_already_cancelled"))
    );
    clean_audit(dir.path(), &config).await;
}
