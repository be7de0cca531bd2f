//! Cases: events, sale status and buyers.

use std::sync::Arc;

use boxoffice_domain::{BuyerId, EventId, Millis, SaleStatus};
use boxoffice_engine::ports::{JoinRecord, Ledger, LinePlace};

use super::fixtures::{T0, event, spec};

pub async fn events_are_created_numbered_and_read_back(ledger: Arc<dyn Ledger>) {
    let first = event(&ledger, 10, 4).await;
    let second = event(&ledger, 3, 4).await;
    assert_ne!(first.id, second.id, "the ledger numbers events");
    assert_eq!(first.capacity(), 10);
    assert_eq!(first.status, SaleStatus::Scheduled);
    assert_eq!(ledger.event(first.id).await.unwrap(), Some(first.clone()));
    assert_eq!(ledger.event(second.id).await.unwrap(), Some(second));
}

pub async fn an_unknown_event_reads_as_none(ledger: Arc<dyn Ledger>) {
    assert_eq!(ledger.event(EventId(i64::MAX)).await.unwrap(), None);
}

pub async fn an_invalid_event_spec_is_refused(ledger: Arc<dyn Ledger>) {
    let mut bad = spec("Bad night", 1, 5, 4);
    bad.currency = "euro".into();
    assert!(ledger.create_event(&bad, T0).await.is_err());
}

pub async fn sale_status_moves_are_visible_to_status_queries(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    assert!(
        ledger
            .events_with_status(SaleStatus::Scheduled)
            .await
            .unwrap()
            .contains(&e.id)
    );
    ledger
        .set_sale_status(e.id, SaleStatus::Open)
        .await
        .unwrap();
    assert_eq!(
        ledger.event(e.id).await.unwrap().map(|e| e.status),
        Some(SaleStatus::Open)
    );
    assert!(
        ledger
            .events_with_status(SaleStatus::Open)
            .await
            .unwrap()
            .contains(&e.id)
    );
    assert!(
        !ledger
            .events_with_status(SaleStatus::Scheduled)
            .await
            .unwrap()
            .contains(&e.id)
    );
    ledger
        .set_sale_status(e.id, SaleStatus::Closed)
        .await
        .unwrap();
    assert!(
        ledger
            .events_with_status(SaleStatus::Closed)
            .await
            .unwrap()
            .contains(&e.id)
    );
}

pub async fn creating_a_buyer_twice_is_not_an_error(ledger: Arc<dyn Ledger>) {
    let buyer = BuyerId::random();
    ledger.create_buyer(buyer, T0).await.unwrap();
    ledger.create_buyer(buyer, T0.plus_secs(1)).await.unwrap();
}

/// P7 across restarts: the first seed stored for an event stays (every later writer
/// gets it back), and the pre-opening pool reads back in arrival order, each buyer once.
pub async fn the_fairness_seed_and_the_pool_are_kept_first_writer_first(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 1, 4).await;
    let first = ledger.fairness_seed(e.id, "aa").await.unwrap();
    assert_eq!(first, "aa");
    assert_eq!(ledger.fairness_seed(e.id, "bb").await.unwrap(), "aa");
    let other = event(&ledger, 1, 4).await;
    assert_eq!(ledger.fairness_seed(other.id, "cc").await.unwrap(), "cc");

    let buyers: Vec<BuyerId> = (0..5).map(|_| BuyerId::random()).collect();
    for b in &buyers {
        ledger.record_pool_join(e.id, *b, Millis(1)).await.unwrap();
    }
    // A retried join keeps the buyer's first place.
    ledger
        .record_pool_join(e.id, buyers[0], Millis(2))
        .await
        .unwrap();
    assert_eq!(ledger.pool_joins(e.id).await.unwrap(), buyers);
    assert_eq!(ledger.pool_joins(other.id).await.unwrap(), vec![]);
}

/// P7 across a lost queue store after opening: joins journaled in one batch read back
/// (pool entries in arrival order, places by position, a buyer's first record of each
/// kind standing), and admission batches ascending, the first record of a batch end
/// standing.
pub async fn the_line_journal_keeps_every_place_and_admission(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 1, 4).await;
    let other = event(&ledger, 1, 4).await;
    let b: Vec<BuyerId> = (0..4).map(|_| BuyerId::random()).collect();
    let join = |buyer, position, pool| JoinRecord {
        event: e.id,
        buyer,
        at: Millis(5),
        position,
        pool,
    };
    ledger
        .record_joins(&[
            join(b[2], None, false),
            join(b[0], None, false),
            join(b[1], Some(3), false),
            join(b[0], Some(1), true),
            join(b[2], Some(2), true),
        ])
        .await
        .unwrap();
    // Retried: the first records stand.
    ledger
        .record_joins(&[join(b[1], Some(9), false), join(b[3], Some(4), false)])
        .await
        .unwrap();
    assert_eq!(ledger.pool_joins(e.id).await.unwrap(), vec![b[2], b[0]]);
    let place = |buyer, position, pool| LinePlace {
        buyer,
        position,
        pool,
    };
    assert_eq!(
        ledger.line_places(e.id).await.unwrap(),
        vec![
            place(b[0], 1, true),
            place(b[2], 2, true),
            place(b[1], 3, false),
            place(b[3], 4, false),
        ]
    );
    assert_eq!(ledger.line_places(other.id).await.unwrap(), vec![]);
    ledger.record_admission(e.id, 3, Millis(20)).await.unwrap();
    ledger.record_admission(e.id, 1, Millis(10)).await.unwrap();
    ledger.record_admission(e.id, 3, Millis(30)).await.unwrap();
    assert_eq!(
        ledger.admissions(e.id).await.unwrap(),
        vec![(1, Millis(10)), (3, Millis(20))]
    );
    assert_eq!(ledger.admissions(other.id).await.unwrap(), vec![]);
}
