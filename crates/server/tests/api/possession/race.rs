//! P1 with proofs required: the race of `concurrency.rs` (2,000 buyers, each trying
//! once, for 100 seats) where every join binds a key of the buyer's own and every hold
//! and checkout carries a fresh proof. Exactly 100 win, the others lose on seats (never
//! on their proofs), every winner pays, and the audit is clean.

use std::sync::Arc;

use futures::future::join_all;
use tokio::sync::Barrier;

use super::*;

const BUYERS: usize = 2_000;
const SEATS: usize = 100;

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 4, timeout_s = 300)]
async fn two_thousand_buyers_proving_their_keys_get_exactly_one_hundred_seats() {
    let app = Arc::new(spawn().await);
    let mut spec = spec(10, 10, 0, 4);
    spec.sale.proof_of_possession = PopMode::Required;
    let event = app.create_event(&spec).await;
    let mut clients = Vec::with_capacity(BUYERS);
    for _ in 0..BUYERS / 100 {
        let batch = join_all((0..100).map(|_| async {
            let key = proof_key();
            admitted(&app, event, Some(&key)).await
        }))
        .await;
        clients.extend(batch);
    }
    let barrier = Arc::new(Barrier::new(BUYERS));
    let tasks = clients.into_iter().map(|client| {
        let (app, barrier) = (app.clone(), barrier.clone());
        tokio::spawn(async move {
            let dpop = proof(&client.key, "POST", &holds_path(event), now_s(&app));
            barrier.wait().await;
            let res = hold(&app, event, &client.admission, Some(dpop)).await;
            let status = res.status();
            (client, status, res.json::<Value>().await.unwrap())
        })
    });
    let results: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    for (_, status, body) in &results {
        let lost_on_seats = *status == StatusCode::CONFLICT
            && matches!(
                body["error"].as_str(),
                Some("seat_unavailable" | "sold_out")
            );
        assert!(
            *status == StatusCode::CREATED || lost_on_seats,
            "{status}: {body}"
        );
    }
    let winners: Vec<_> = results
        .iter()
        .filter(|(_, s, _)| *s == StatusCode::CREATED)
        .collect();
    assert_eq!(winners.len(), SEATS, "exactly as many holds as seats");
    let paid = winners.iter().map(|(client, _, body)| {
        let app = app.clone();
        let hold_id = body["hold_id"].as_str().unwrap().to_string();
        async move {
            let path = format!("/v1/holds/{hold_id}/checkout");
            let dpop = proof(&client.key, "POST", &path, now_s(&app));
            checkout(&app, &hold_id, &client.token, Some(dpop))
                .await
                .status()
        }
    });
    let statuses = join_all(paid).await;
    assert!(
        statuses.iter().all(|s| *s == StatusCode::CREATED),
        "{statuses:?}"
    );
    assert_eq!(app.counts(event).await["sold"], json!(SEATS));
    let report = app.engine.audit().await.unwrap();
    assert!(report.clean(), "{:?}", report.violations);
    assert_eq!(report.seats_sold, SEATS as u64);
}
