//! Cases: events, sale status and buyers.

use std::sync::Arc;

use boxoffice_domain::{BuyerId, EventId, Millis, SaleStatus};
use boxoffice_engine::ports::{Incarnation, JoinRecord, Ledger, LinePlace};

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
    let stood = ledger
        .record_joins(&[
            join(b[2], None, false),
            join(b[0], None, false),
            join(b[1], Some(3), false),
            join(b[0], Some(1), true),
            join(b[2], Some(2), true),
        ])
        .await
        .unwrap();
    assert_eq!(stood, vec![true; 5]);
    // Retried: the first records stand; a retry at the same place stands too.
    let stood = ledger
        .record_joins(&[
            join(b[1], Some(9), false),
            join(b[3], Some(4), false),
            join(b[1], Some(3), false),
        ])
        .await
        .unwrap();
    assert_eq!(stood, vec![false, true, true]);
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

/// A position in line is one buyer's: the first journaled at it keeps it, a later
/// buyer's record for it does not stand (the queue store that handed it out is behind
/// the ledger), and of many buyers journaled at one position at once, exactly one
/// stands.
pub async fn a_position_in_line_is_journaled_for_one_buyer_only(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 1, 4).await;
    let b: Vec<BuyerId> = (0..3).map(|_| BuyerId::random()).collect();
    let join = |buyer, position| JoinRecord {
        event: e.id,
        buyer,
        at: Millis(5),
        position: Some(position),
        pool: false,
    };
    let stood = ledger
        .record_joins(&[join(b[0], 1), join(b[1], 1), join(b[2], 2)])
        .await
        .unwrap();
    assert_eq!(stood, vec![true, false, true]);
    let stood = ledger.record_joins(&[join(b[1], 2)]).await.unwrap();
    assert_eq!(stood, vec![false], "position 2 is taken");
    let stood = ledger.record_joins(&[join(b[1], 3)]).await.unwrap();
    assert_eq!(
        stood,
        vec![true],
        "the refused buyer is placed further back"
    );
    let placed: Vec<(BuyerId, u64)> = ledger
        .line_places(e.id)
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.buyer, p.position))
        .collect();
    assert_eq!(placed, vec![(b[0], 1), (b[2], 2), (b[1], 3)]);

    // Many buyers at one position, each in a write of its own: exactly one keeps it.
    let racers: Vec<BuyerId> = (0..32).map(|_| BuyerId::random()).collect();
    let writes = racers.iter().map(|&buyer| {
        let ledger = ledger.clone();
        async move { ledger.record_joins(&[join(buyer, 4)]).await.unwrap()[0] }
    });
    let stood = futures::future::join_all(writes).await;
    assert_eq!(stood.iter().filter(|s| **s).count(), 1, "{stood:?}");
    let at_four: Vec<LinePlace> = ledger
        .line_places(e.id)
        .await
        .unwrap()
        .into_iter()
        .filter(|p| p.position == 4)
        .collect();
    assert_eq!(at_four.len(), 1);
    let winner = racers[stood.iter().position(|s| *s).unwrap()];
    assert_eq!(at_four[0].buyer, winner);
}

/// Processed webhook ids are forgotten once their lifetime is over, a batch at a time,
/// and only those: an id claimed before the cut-off is handled again if it is
/// delivered again; one claimed after is still a duplicate.
pub async fn processed_webhook_ids_are_forgotten_after_their_lifetime(ledger: Arc<dyn Ledger>) {
    let id = |name: &str| format!("evt_{name}_{}", uuid::Uuid::new_v4().simple());
    let (old, unfinished, recent) = (id("old"), id("unfinished"), id("recent"));
    let (a, b) = (Incarnation::random(), Incarnation::random());
    let never = Millis(0);
    assert!(
        ledger
            .claim_webhook(&old, a, Millis(1_000), never)
            .await
            .unwrap()
    );
    ledger.finish_webhook(&old, true).await.unwrap();
    assert!(
        ledger
            .claim_webhook(&unfinished, a, Millis(2_000), never)
            .await
            .unwrap()
    );
    assert!(
        ledger
            .claim_webhook(&recent, a, Millis(50_000), never)
            .await
            .unwrap()
    );
    ledger.finish_webhook(&recent, true).await.unwrap();
    // Until pruned, the handled id is a duplicate for every node.
    assert!(
        !ledger
            .claim_webhook(&old, b, Millis(60_000), never)
            .await
            .unwrap()
    );
    let cut = Millis(10_000);
    let mut forgotten = 0;
    loop {
        let gone = ledger.prune_webhooks(cut, 1).await.unwrap();
        assert!(gone <= 1, "a batch at most: {gone}");
        if gone == 0 {
            break;
        }
        forgotten += gone;
        assert!(forgotten <= 2, "only ids claimed before the cut-off");
    }
    assert_eq!(forgotten, 2);
    // The old ids are handled again when delivered again; the recent one is remembered.
    assert!(
        ledger
            .claim_webhook(&old, b, Millis(60_000), never)
            .await
            .unwrap()
    );
    assert!(
        ledger
            .claim_webhook(&unfinished, b, Millis(60_000), never)
            .await
            .unwrap()
    );
    assert!(
        !ledger
            .claim_webhook(&recent, b, Millis(60_000), never)
            .await
            .unwrap()
    );
}

/// An event's waiting-room settings are kept by name, the last write winning, apart
/// from every other event's.
pub async fn the_operators_line_settings_are_kept_last_write_first(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 1, 4).await;
    let other = event(&ledger, 1, 4).await;
    assert_eq!(ledger.line_settings(e.id).await.unwrap(), vec![]);
    ledger
        .keep_line_setting(e.id, "admission", r#"{"rate_per_s":5}"#)
        .await
        .unwrap();
    ledger.keep_line_setting(e.id, "rules", "{}").await.unwrap();
    ledger
        .keep_line_setting(e.id, "admission", r#"{"rate_per_s":7}"#)
        .await
        .unwrap();
    ledger
        .keep_line_setting(other.id, "admission", "{}")
        .await
        .unwrap();
    let kept = |name: &str, value: &str| (name.to_string(), value.to_string());
    assert_eq!(
        ledger.line_settings(e.id).await.unwrap(),
        vec![
            kept("admission", r#"{"rate_per_s":7}"#),
            kept("rules", "{}")
        ]
    );
    assert_eq!(
        ledger.line_settings(other.id).await.unwrap(),
        vec![kept("admission", "{}")]
    );
}
