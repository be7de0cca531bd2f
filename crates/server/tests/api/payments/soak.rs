//! The soak: 5,000 checkouts against a provider that times out on 10 % of them
//! (half after charging, half before), declines 5 % and sends 5 % of its webhooks
//! twice, with every webhook delivered in a scrambled order. After the sweep the audit
//! is clean and every buyer's order ends exactly where their money is.

use std::collections::HashMap;
use std::time::Duration;

use super::*;
use crate::common::{spawn_with, spec};
use boxoffice_engine::ports::{PaymentGateway, ProviderState};
use boxoffice_testkit::within;
use futures::stream::{self, StreamExt};
use serde_json::{Value, json};

const BUYERS: usize = 1_250;
const HOLDS_EACH: usize = 4;

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn five_thousand_checkouts_through_timeouts_declines_and_duplicate_webhooks_end_where_the_money_is()
 {
    let started = std::time::Instant::now();
    let app = spawn_with(|c| {
        c.fake_payments.timeout_rate = 0.10;
        c.fake_payments.decline_rate = 0.05;
        c.fake_payments.duplicate_webhook_rate = 0.05;
        c.fake_payments.seed = 5_000;
    })
    .await;
    let fake = provider(&app);
    let event = app.create_event(&spec(50, 100, 0, HOLDS_EACH as u32)).await;
    let app = &app;

    let holds: Vec<(String, String)> = stream::iter(0..BUYERS)
        .map(|_| async move {
            let (token, admission) = app.admitted_buyer(event).await;
            let mut mine = Vec::new();
            for _ in 0..HOLDS_EACH {
                let body = json!({"best_available": {"section": "A", "quantity": 1}});
                let res = app.hold(event, &admission, body).await;
                assert_eq!(res.status(), 201);
                let v: Value = res.json().await.unwrap();
                mine.push((token.clone(), v["hold_id"].as_str().unwrap().to_string()));
            }
            mine
        })
        .buffer_unordered(32)
        .flat_map(stream::iter)
        .collect()
        .await;
    eprintln!("{} holds in {:?}", holds.len(), started.elapsed());

    let answers: Vec<(String, u16, Value)> = stream::iter(holds)
        .map(|(token, hold)| async move {
            let (status, body) = checkout(app, &token, &hold, "pm_card_visa").await;
            (token, status, body)
        })
        .buffer_unordered(64)
        .collect()
        .await;
    let mut by_status: HashMap<u16, usize> = HashMap::new();
    for (_, s, _) in &answers {
        *by_status.entry(*s).or_default() += 1;
    }
    eprintln!("checkouts {by_status:?} after {:?}", started.elapsed());
    assert!(
        by_status.get(&202).copied().unwrap_or(0) > 300,
        "{by_status:?}"
    );
    assert!(
        by_status.get(&402).copied().unwrap_or(0) > 150,
        "{by_status:?}"
    );

    let delivered = deliver_scrambled(app, &fake).await;
    app.clock.advance_secs(31);
    within(
        Duration::from_secs(120),
        "the recovery sweep to run out of work",
        async { while app.engine.recovery_step().await.unwrap().done > 0 {} },
    )
    .await;
    let delivered = delivered + deliver_scrambled(app, &fake).await;
    eprintln!(
        "{delivered} webhooks delivered; settled after {:?}",
        started.elapsed()
    );

    let report = app.engine.audit().await.unwrap();
    assert!(report.clean(), "{:?}", report.violations);
    assert_eq!(report.orders_in_flight, 0);
    let provider_state: HashMap<_, _> = fake
        .all_payments()
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.order, p.state))
        .collect();
    let mut confirmed = 0;
    for (token, status, body) in &answers {
        let Some(id) = body["order_id"]
            .as_str()
            .or(body["order"]["order_id"].as_str())
        else {
            assert_eq!(*status, 402, "{body}");
            continue;
        };
        let o = order(app, token, id.parse().unwrap()).await;
        let paid = provider_state.get(&id.parse().unwrap()).copied();
        let expected = match o["status"].as_str().unwrap() {
            "confirmed" => {
                confirmed += 1;
                vec![Some(ProviderState::Captured)]
            }
            "declined" => vec![Some(ProviderState::Declined)],
            "voided" => vec![None, Some(ProviderState::Voided)],
            other => panic!("order {id} ended {other}"),
        };
        assert!(
            expected.contains(&paid),
            "order {id}: {o} but the provider says {paid:?}"
        );
        if *status == 201 {
            assert_eq!(o["status"], "confirmed", "a buyer told 201 keeps the seat");
        }
    }
    assert_eq!(app.counts(event).await["sold"], json!(confirmed));
    assert_eq!(report.seats_sold, confirmed as u64);
    eprintln!("{confirmed} confirmed; soak took {:?}", started.elapsed());
}

/// Delivers every waiting webhook, 16 at a time, in an order unrelated to the outbox's.
async fn deliver_scrambled(
    app: &crate::common::TestApp,
    fake: &boxoffice_payment_fake::FakeGateway,
) -> usize {
    within(
        Duration::from_secs(120),
        "the provider's outbox to drain",
        async {
            let mut total = 0;
            loop {
                let mut batch = fake.undelivered_webhooks(100_000).await.unwrap();
                if batch.is_empty() {
                    return total;
                }
                batch.sort_by_key(|w| (w.seq as u64).wrapping_mul(2_654_435_761) % 1_000_003);
                total += batch.len();
                stream::iter(batch)
                    .for_each_concurrent(16, |w| async move {
                        let (status, body) = post_webhook(app, fake, &w.payload).await;
                        assert_eq!(status, 200, "{body}");
                        fake.mark_delivered(w.seq).await.unwrap();
                    })
                    .await;
            }
        },
    )
    .await
}
