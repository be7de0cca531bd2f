//! One order undone: by the operator (any sale, any time) or by its buyer (their own
//! order, inside the event's refund window). The seat is free again exactly once, in
//! the ledger and in the hot store, and a new buyer can buy it; the provider refunded
//! once; a second request is refused and changes nothing.

use super::*;
use crate::common::{spawn, spec};
use crate::payments::provider;
use boxoffice_domain::refunds::RefundWindow;
use boxoffice_domain::{EventSpec, Millis};
use boxoffice_engine::ports::{Clock, Inquiry, PaymentGateway, ProviderState};

const DAY_S: i64 = 86_400;

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_refund_frees_the_seat_once_and_a_new_buyer_can_buy_it() {
    let app = spawn().await;
    let book = provider(&app);
    let event = app.create_event(&spec(1, 2, 0, 4)).await;
    let (token, id, seat) = bought(&app, event).await;
    assert_eq!(app.counts(event).await["sold"], json!(1));

    let path = format!("/v1/orders/{id}/cancel");
    let key = uuid();
    let (status, body) = undo_with_key(&app, &path, &app.operator_key, &key).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["status"].as_str(), body["payment"].as_str()),
        (Some("refunded"), Some("returned"))
    );
    assert!(body["tickets"].as_array().unwrap().is_empty());
    let paid = book.inquire(&Inquiry::by_order(id)).await.unwrap().unwrap();
    assert_eq!(paid.state, ProviderState::Refunded);
    assert_eq!(refunds_made(&book).await.get(&id), Some(&1));
    let counts = app.counts(event).await;
    assert_eq!((&counts["sold"], &counts["free"]), (&json!(0), &json!(2)));
    assert!(
        app.engine
            .ports()
            .ledger
            .sold_seats(event)
            .await
            .unwrap()
            .is_empty()
    );

    // The same request again (a retry) is replayed; another one is refused.
    let (again, replayed) = undo_with_key(&app, &path, &app.operator_key, &key).await;
    assert_eq!((again, &replayed), (200, &body));
    let (twice, refused) = undo(&app, &path, &app.operator_key).await;
    assert_eq!(
        (twice, refused["error"].as_str()),
        (409, Some("order_not_cancellable")),
        "{refused}"
    );
    assert_eq!(
        refunds_made(&book).await.get(&id),
        Some(&1),
        "no second refund"
    );
    let counts = app.counts(event).await;
    assert_eq!(
        (&counts["sold"], &counts["free"]),
        (&json!(0), &json!(2)),
        "the seat came back once"
    );

    // Both seats sell again, the freed one included.
    let (_, second, s2) = bought(&app, event).await;
    let (_, third, s3) = bought(&app, event).await;
    assert!([&s2, &s3].contains(&&seat), "{seat} was sold again");
    assert_ne!(second, third);
    assert_eq!(app.counts(event).await["sold"], json!(2));
    let mine = app
        .get("/v1/me/orders", &token)
        .await
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(mine["orders"][0]["status"], "refunded");
    audit_clean(&app).await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refund_of_an_order_that_is_no_sale_is_refused_and_changes_nothing() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 4, 0, 4)).await;
    let (token, hold) = holder(&app, event).await;
    let (status, body) = checkout(&app, &token, &hold, "pm_card_declined").await;
    assert_eq!(status, 402, "{body}");
    let mine: Value = app.get("/v1/me/orders", &token).await.json().await.unwrap();
    assert_eq!(mine["orders"][0]["status"], "declined", "{mine}");
    let id: OrderId = mine["orders"][0]["order_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let before = app.engine.ports().ledger.order(id).await.unwrap();
    let (status, body) = undo(&app, &format!("/v1/orders/{id}/cancel"), &app.operator_key).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (409, Some("order_not_cancellable")),
        "{body}"
    );
    assert_eq!(app.engine.ports().ledger.order(id).await.unwrap(), before);
    let unknown = OrderId::random();
    let (status, _) = undo(
        &app,
        &format!("/v1/orders/{unknown}/cancel"),
        &app.operator_key,
    )
    .await;
    assert_eq!(status, 404);
    // Without the operator key: refused before anything is read.
    let (_, sold, _) = bought(&app, event).await;
    let (status, body) = undo(&app, &format!("/v1/orders/{sold}/cancel"), &token).await;
    assert_eq!((status, body["error"].as_str()), (403, Some("forbidden")));
    assert_eq!(app.counts(event).await["sold"], json!(1));
}

/// An event of four seats whose buyers may return their orders until a day before
/// the doors, ten days from now.
async fn refundable(app: &TestApp) -> EventId {
    app.create_event(&refundable_spec(app)).await
}

/// An event whose buyers may refund until a day before its doors, ten days on.
fn refundable_spec(app: &TestApp) -> EventSpec {
    let now = app.clock.now();
    let mut s = spec(1, 4, 0, 4);
    s.sale.buyer_refunds = Some(RefundWindow {
        doors_at: Millis(now.0 + 10 * DAY_S * 1000),
        closes_before_doors_s: DAY_S as u64,
    });
    s
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buyer_refunds_inside_the_window_and_is_refused_outside_it() {
    let app = spawn().await;
    let book = provider(&app);
    let event = refundable(&app).await;
    let (token, id, _) = bought(&app, event).await;
    let (other, theirs, _) = bought(&app, event).await;

    // Someone else's order is not found, whoever asks.
    let (status, body) = undo(&app, &format!("/v1/orders/{theirs}/refund"), &token).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (404, Some("order_not_found")),
        "{body}"
    );
    let (status, body) = undo(&app, &format!("/v1/orders/{id}/refund"), &token).await;
    assert!(is_ok(status), "{body}");
    assert_eq!(body["status"], "refunded");
    assert_eq!(refunds_made(&book).await.get(&id), Some(&1));
    assert_eq!(app.counts(event).await["sold"], json!(1));

    // Nine days on, a day before the doors: the window has closed.
    app.clock.advance_secs(9 * DAY_S);
    let before = app.engine.ports().ledger.order(theirs).await.unwrap();
    let (status, body) = undo(&app, &format!("/v1/orders/{theirs}/refund"), &other).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("refund_window_closed")),
        "{body}"
    );
    assert_eq!(
        app.engine.ports().ledger.order(theirs).await.unwrap(),
        before
    );
    assert_eq!(app.counts(event).await["sold"], json!(1));
    assert_eq!(refunds_made(&book).await.get(&theirs), None);
    audit_clean(&app).await;
}

/// A buyer admitted at the door cannot return the order they used (inside the window,
/// and with the money back); the operator still can.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buyer_cannot_return_an_order_whose_ticket_was_scanned() {
    use crate::tickets::{barcode, gate, my_tickets, scan};

    let app = spawn().await;
    let book = provider(&app);
    let event = refundable(&app).await;
    let (token, id, _) = bought(&app, event).await;
    let (_, key) = gate(&app, event, "Early entry").await;
    let ticket = my_tickets(&app, &token).await[0].clone();
    let (status, _) = scan(&app, event, &key, &barcode(&ticket)).await;
    assert_eq!(status, 200);

    let before = app.engine.ports().ledger.order(id).await.unwrap();
    let (status, body) = undo(&app, &format!("/v1/orders/{id}/refund"), &token).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (409, Some("order_used")),
        "{body}"
    );
    assert_eq!(app.engine.ports().ledger.order(id).await.unwrap(), before);
    assert_eq!(app.counts(event).await["sold"], json!(1));
    assert_eq!(refunds_made(&book).await.get(&id), None);

    let path = format!("/v1/orders/{id}/cancel");
    let (status, body) = undo(&app, &path, &app.operator_key).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("refunded")));
    audit_clean(&app).await;
}

/// A buyer who gave a ticket of the order to someone else cannot then return the
/// order: the return revoked the recipient's ticket, so a ticket could be passed on
/// (sold off the platform, say) and the money taken back. The operator still can.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buyer_cannot_return_an_order_whose_ticket_was_given_away() {
    use crate::tickets::{give, my_tickets, transferable};

    let app = spawn().await;
    let book = provider(&app);
    let event = app.create_event(&transferable(refundable_spec(&app))).await;
    let (token, id, _) = bought(&app, event).await;
    let ticket = my_tickets(&app, &token).await[0].clone();
    let friend = app.buyer().await;
    give(&app, &token, ticket["ticket_id"].as_str().unwrap(), &friend).await;

    let before = app.engine.ports().ledger.order(id).await.unwrap();
    let (status, body) = undo(&app, &format!("/v1/orders/{id}/refund"), &token).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (409, Some("order_given_away")),
        "{body}"
    );
    assert_eq!(app.engine.ports().ledger.order(id).await.unwrap(), before);
    assert_eq!(my_tickets(&app, &friend.1).await.len(), 1);
    assert_eq!(refunds_made(&book).await.get(&id), None);

    let path = format!("/v1/orders/{id}/cancel");
    let (status, body) = undo(&app, &path, &app.operator_key).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("refunded")));
    audit_clean(&app).await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_without_a_refund_window_refuses_buyer_refunds() {
    let app = spawn().await;
    let event = app.create_event(&spec(1, 4, 0, 4)).await;
    let (token, id, _) = bought(&app, event).await;
    let before = app.engine.ports().ledger.order(id).await.unwrap();
    let (status, body) = undo(&app, &format!("/v1/orders/{id}/refund"), &token).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("refund_window_closed")),
        "{body}"
    );
    assert_eq!(app.engine.ports().ledger.order(id).await.unwrap(), before);
    assert_eq!(app.counts(event).await["sold"], json!(1));
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_event_stops_its_sale_and_its_job_refunds_every_order() {
    let app = spawn().await;
    let book = provider(&app);
    let event = app.create_event(&spec(1, 6, 0, 4)).await;
    let mut sold = Vec::new();
    for _ in 0..4 {
        sold.push(bought(&app, event).await.1);
    }
    // A buyer holding a seat when the event is cancelled cannot check out.
    let (token, hold) = holder(&app, event).await;
    let path = format!("/v1/events/{event}/cancel");
    let (status, job) = undo(&app, &path, &app.operator_key).await;
    assert_eq!(status, 202, "{job}");
    assert_eq!(
        (job["pass"].as_u64(), job["finished_at"].as_null()),
        (Some(1), Some(()))
    );
    let (status, body) = checkout(&app, &token, &hold, "pm_card_visa").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (409, Some("event_cancelled")),
        "{body}"
    );
    let (_, late) = app.buyer().await;
    let join = app
        .post(
            &format!("/v1/events/{event}/queue"),
            &late,
            &uuid(),
            json!({}),
        )
        .await;
    assert_eq!(
        join.status(),
        StatusCode::CONFLICT,
        "no one joins a cancelled event"
    );
    let reopen = app
        .post(
            &format!("/v1/events/{event}/open"),
            &app.operator_key,
            &uuid(),
            json!({}),
        )
        .await;
    assert_eq!(reopen.status(), StatusCode::CONFLICT);

    cancellation_finished(&app, event).await;
    let progress = app
        .get(
            &format!("/v1/events/{event}/cancellation"),
            &app.operator_key,
        )
        .await;
    let progress: Value = progress.json().await.unwrap();
    assert!(progress["finished_at"].is_i64(), "{progress}");
    // The first pass refunded the four; the second, which ended the job, found them so.
    assert_eq!(progress["pass"], json!(2), "{progress}");
    assert_eq!(progress["counts"]["returned"], json!(4), "{progress}");
    assert_eq!(progress["counts"]["pending"], json!(0), "{progress}");
    let made = refunds_made(&book).await;
    for id in &sold {
        assert_eq!(made.get(id), Some(&1), "order {id}");
    }
    assert!(
        app.engine
            .ports()
            .ledger
            .sold_seats(event)
            .await
            .unwrap()
            .is_empty()
    );
    let (status, again) = undo(&app, &path, &app.operator_key).await;
    assert_eq!(
        (status, &again["finished_at"]),
        (202, &progress["finished_at"])
    );
    audit_clean(&app).await;
}
