//! P1 through the HTTP API: N ≫ K buyers race for K seats, each trying once; exactly K
//! win, and after checkout exactly K are sold and the audit is clean.
//!
//! Bursts of 2,000 new connections at once: the listener's queue (`http.listen_backlog`)
//! holds them all, so none is reset while the other tests of this binary run beside.

use std::sync::Arc;

use crate::common::{TestApp, spawn, spec};
use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::Barrier;

const BUYERS: usize = 2_000;
const SEATS: usize = 100;

/// Prepares `BUYERS` admitted buyers, then releases all their holds at once.
async fn race(
    app: &Arc<TestApp>,
    event: boxoffice_domain::EventId,
    body_for: impl Fn(usize) -> Value,
) -> Vec<(String, StatusCode, Value)> {
    let mut buyers = Vec::with_capacity(BUYERS);
    for chunk in (0..BUYERS).collect::<Vec<_>>().chunks(100) {
        let prepared = join_all(chunk.iter().map(|_| app.admitted_buyer(event))).await;
        buyers.extend(prepared);
    }
    let barrier = Arc::new(Barrier::new(BUYERS));
    let tasks = buyers
        .into_iter()
        .enumerate()
        .map(|(i, (token, admission))| {
            let (app, barrier, body) = (app.clone(), barrier.clone(), body_for(i));
            tokio::spawn(async move {
                barrier.wait().await;
                let res = app.hold(event, &admission, body).await;
                let status = res.status();
                (token, status, res.json::<Value>().await.unwrap())
            })
        });
    join_all(tasks)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

/// Checks the outcome of a race, checks every winner out, and audits.
async fn settle(
    app: &Arc<TestApp>,
    event: boxoffice_domain::EventId,
    results: Vec<(String, StatusCode, Value)>,
) {
    let winners: Vec<_> = results
        .iter()
        .filter(|(_, s, _)| *s == StatusCode::CREATED)
        .collect();
    assert_eq!(winners.len(), SEATS, "exactly as many holds as seats");
    for (_, status, body) in &results {
        assert!(
            matches!(status.as_u16(), 201 | 409),
            "unexpected {status}: {body}"
        );
        if *status == StatusCode::CONFLICT {
            assert!(
                matches!(
                    body["error"].as_str(),
                    Some("seat_unavailable" | "sold_out")
                ),
                "{body}"
            );
        }
    }
    let mut seats: Vec<&str> = winners
        .iter()
        .flat_map(|(_, _, b)| b["seat_ids"].as_array().unwrap())
        .map(|s| s.as_str().unwrap())
        .collect();
    seats.sort();
    seats.dedup();
    assert_eq!(seats.len(), SEATS, "no seat held twice");
    let checkouts = winners.iter().map(|(token, _, body)| {
        let app = app.clone();
        let (token, hold) = (token.clone(), body["hold_id"].as_str().unwrap().to_string());
        async move { app.checkout(&hold, &token, "pm_card_visa").await.status() }
    });
    let statuses = join_all(checkouts).await;
    assert!(
        statuses.iter().all(|s| *s == StatusCode::CREATED),
        "{statuses:?}"
    );
    let counts = app.counts(event).await;
    assert_eq!(counts["sold"], json!(SEATS));
    let report = app.engine.audit().await.unwrap();
    assert!(report.clean(), "{:?}", report.violations);
    assert_eq!(report.seats_sold, SEATS as u64);
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 4, timeout_s = 300)]
async fn two_thousand_buyers_racing_for_one_hundred_named_seats_leave_exactly_one_hundred_holders()
{
    let app = Arc::new(spawn().await);
    let event = app.create_event(&spec(10, 10, 0, 4)).await;
    // Everyone wants a seat of the first two rows, so most requests collide.
    let results = race(
        &app,
        event,
        |i| json!({"seat_ids": [format!("A-{}-{}", 1 + (i / 10) % 2, 1 + i % 10)]}),
    )
    .await;
    let winners = results
        .iter()
        .filter(|(_, s, _)| *s == StatusCode::CREATED)
        .count();
    assert_eq!(winners, 20, "twenty distinct seats were asked for");
    // The other eighty are free: a second round of buyers takes them exactly once.
    let rest = race(
        &app,
        event,
        |i| json!({"seat_ids": [format!("A-{}-{}", 3 + i % 8, 1 + (i / 8) % 10)]}),
    )
    .await;
    let mut all: Vec<_> = results
        .into_iter()
        .filter(|(_, s, _)| *s == StatusCode::CREATED)
        .collect();
    all.extend(rest);
    settle(&app, event, all).await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 4, timeout_s = 300)]
async fn two_thousand_buyers_asking_for_best_available_get_exactly_one_hundred_distinct_seats() {
    let app = Arc::new(spawn().await);
    let event = app.create_event(&spec(10, 10, 0, 4)).await;
    let results = race(
        &app,
        event,
        |_| json!({"best_available": {"section": "A", "quantity": 1}}),
    )
    .await;
    settle(&app, event, results).await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 4, timeout_s = 300)]
async fn two_thousand_buyers_on_a_general_admission_floor_of_one_hundred_get_exactly_one_hundred_units()
 {
    let app = Arc::new(spawn().await);
    let event = app.create_event(&spec(0, 0, 100, 4)).await;
    let results = race(
        &app,
        event,
        |_| json!({"best_available": {"section": "GA", "quantity": 1}}),
    )
    .await;
    settle(&app, event, results).await;
}
