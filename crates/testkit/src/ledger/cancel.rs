//! Cases: cancelling a sale that can no longer be paid for. The only write besides the
//! commit that changes which seats an order owns, so it gets the commit's guarantees:
//! all of it or nothing, and only from the state that allows it.

use std::sync::Arc;

use boxoffice_domain::{BuyerId, OrderEvent, OrderId, OrderState};
use boxoffice_engine::ports::{CommitOutcome, Ledger, LedgerError};

use super::fixtures::{T0, authorized, commit_of, event, sold_labels};

pub async fn cancelling_a_sale_gives_its_seats_back_in_one_step(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 2).await;
    let buyer = BuyerId::random();
    let o = authorized(&ledger, &e, buyer, &[0, 1]).await;
    let committed = ledger.commit(&commit_of(&o, 2)).await.unwrap();
    assert_eq!(committed, CommitOutcome::Committed);
    let early = ledger.cancel_sale(o.id, T0.plus_secs(3)).await.unwrap_err();
    assert_eq!(early, LedgerError::Conflict(OrderState::Committed));
    ledger
        .apply(o.id, OrderEvent::CaptureFailed, None, T0.plus_secs(3))
        .await
        .unwrap();
    let cancelled = ledger.cancel_sale(o.id, T0.plus_secs(4)).await.unwrap();
    assert_eq!(
        (cancelled.state, cancelled.updated_at, cancelled.id),
        (OrderState::Cancelling, T0.plus_secs(4), o.id)
    );
    assert!(
        sold_labels(&ledger, &e).await.is_empty(),
        "the seats are back"
    );
    // The buyer's count went down with the seats: two fit again under the limit of two.
    let again = authorized(&ledger, &e, buyer, &[0, 1]).await;
    let recommitted = ledger.commit(&commit_of(&again, 2)).await.unwrap();
    assert_eq!(recommitted, CommitOutcome::Committed);
    let twice = ledger.cancel_sale(o.id, T0.plus_secs(5)).await.unwrap_err();
    assert_eq!(twice, LedgerError::Conflict(OrderState::Cancelling));
    let facts = ledger.audit_facts().await.unwrap();
    let ours = [o.id, again.id];
    assert!(
        !facts
            .orders_missing_seats
            .iter()
            .any(|id| ours.contains(id))
    );
    assert!(
        !facts
            .seats_of_unsold_orders
            .iter()
            .any(|id| ours.contains(id))
    );
    assert!(!facts.buyers_over_limit.iter().any(|(_, b, _)| *b == buyer));
    let ended = ledger
        .apply(o.id, OrderEvent::Voided, None, T0.plus_secs(6))
        .await
        .unwrap();
    assert_eq!(ended.state, OrderState::Cancelled);
    let unknown = ledger.cancel_sale(OrderId::random(), T0).await.unwrap_err();
    assert_eq!(unknown, LedgerError::NotFound);
}

/// Only `cancel_sale` may take an order's seats back; a bare state move would leave a
/// cancelled order's seats sold to nobody (P2).
pub async fn apply_cannot_cancel_a_sale_without_giving_its_seats_back(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    let o = authorized(&ledger, &e, BuyerId::random(), &[0]).await;
    ledger.commit(&commit_of(&o, 4)).await.unwrap();
    ledger
        .apply(o.id, OrderEvent::CaptureFailed, None, T0.plus_secs(3))
        .await
        .unwrap();
    let err = ledger
        .apply(o.id, OrderEvent::CaptureAbandoned, None, T0.plus_secs(4))
        .await
        .unwrap_err();
    assert_eq!(err, LedgerError::Conflict(OrderState::PendingCapture));
    assert_eq!(
        sold_labels(&ledger, &e).await,
        vec![e.seats[0].label.clone()]
    );
}
