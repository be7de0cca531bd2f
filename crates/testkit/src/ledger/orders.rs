//! Cases: order insertion (one per hold), reads, and the state machine's moves.

use std::sync::Arc;

use boxoffice_domain::{BuyerId, OrderEvent, OrderId, OrderState};
use boxoffice_engine::ports::{InsertOrder, Ledger, LedgerError, Order};

use super::fixtures::{T0, authorized, event, order, sold_labels};

pub async fn an_order_is_inserted_once_per_hold(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    let first = order(&e, BuyerId::random(), &[0], T0);
    assert_eq!(
        ledger.insert_order(&first).await.unwrap(),
        InsertOrder::Inserted
    );
    // A retried checkout builds a new order for the same hold: it gets the first back.
    let retry = Order {
        id: OrderId::random(),
        ..first.clone()
    };
    assert_eq!(
        ledger.insert_order(&retry).await.unwrap(),
        InsertOrder::Exists(first.clone())
    );
    assert_eq!(ledger.order(retry.id).await.unwrap(), None);
}

pub async fn orders_read_back_by_id_hold_and_buyer(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    let buyer = BuyerId::random();
    let a = order(&e, buyer, &[0, 1], T0);
    let b = order(&e, buyer, &[2], T0.plus_secs(1));
    for o in [&a, &b] {
        ledger.insert_order(o).await.unwrap();
    }
    assert_eq!(ledger.order(a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(ledger.order_of_hold(b.hold).await.unwrap(), Some(b.clone()));
    assert_eq!(
        ledger.orders_of_buyer(buyer, 10).await.unwrap(),
        vec![a.clone(), b.clone()]
    );
    // A buyer's history is read to a limit: the most recent orders, oldest first (with
    // every order that owns seats, which these do not).
    assert_eq!(
        ledger.orders_of_buyer(buyer, 1).await.unwrap(),
        vec![b.clone()]
    );
    let c = order(&e, buyer, &[3], T0.plus_secs(2));
    ledger.insert_order(&c).await.unwrap();
    assert_eq!(ledger.orders_of_buyer(buyer, 2).await.unwrap(), vec![b, c]);
    assert_eq!(ledger.order(OrderId::random()).await.unwrap(), None);
    assert_eq!(
        ledger.orders_of_buyer(BuyerId::random(), 10).await.unwrap(),
        vec![]
    );
}

pub async fn legal_moves_advance_the_order_and_record_the_payment_ref(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    let o = order(&e, BuyerId::random(), &[0], T0);
    ledger.insert_order(&o).await.unwrap();
    let moved = ledger
        .apply(
            o.id,
            OrderEvent::Authorized,
            Some("auth_1"),
            T0.plus_secs(3),
        )
        .await
        .unwrap();
    assert_eq!(
        (moved.state, moved.payment_ref.as_deref(), moved.updated_at),
        (OrderState::Authorized, Some("auth_1"), T0.plus_secs(3))
    );
    // A move without a reference keeps the one recorded.
    let voided = ledger
        .apply(o.id, OrderEvent::Voided, None, T0.plus_secs(4))
        .await
        .unwrap();
    assert_eq!(
        (voided.state, voided.payment_ref.as_deref()),
        (OrderState::Voided, Some("auth_1"))
    );
    assert_eq!(ledger.order(o.id).await.unwrap(), Some(voided));
}

pub async fn an_illegal_move_is_a_conflict_holding_the_actual_state(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    let o = order(&e, BuyerId::random(), &[0], T0);
    ledger.insert_order(&o).await.unwrap();
    let err = ledger
        .apply(o.id, OrderEvent::Captured, Some("cap_1"), T0.plus_secs(1))
        .await
        .unwrap_err();
    assert_eq!(err, LedgerError::Conflict(OrderState::PendingPayment));
    // A retried move (a duplicate webhook) is a conflict too, and changes nothing.
    ledger
        .apply(o.id, OrderEvent::Declined, None, T0.plus_secs(2))
        .await
        .unwrap();
    let again = ledger
        .apply(o.id, OrderEvent::Declined, None, T0.plus_secs(3))
        .await
        .unwrap_err();
    assert_eq!(again, LedgerError::Conflict(OrderState::Declined));
    let stored = ledger.order(o.id).await.unwrap().unwrap();
    assert_eq!(
        (stored.state, stored.payment_ref, stored.updated_at),
        (OrderState::Declined, None, T0.plus_secs(2))
    );
}

pub async fn moving_an_unknown_order_is_not_found(ledger: Arc<dyn Ledger>) {
    let err = ledger
        .apply(OrderId::random(), OrderEvent::Authorized, None, T0)
        .await
        .unwrap_err();
    assert_eq!(err, LedgerError::NotFound);
}

/// Only `commit` may make an order own seats; a bare state move would leave an order
/// "committed" with nothing sold (P2).
pub async fn apply_cannot_commit_an_order_without_selling_its_seats(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    let o = authorized(&ledger, &e, BuyerId::random(), &[0]).await;
    let err = ledger
        .apply(o.id, OrderEvent::Committed, None, T0.plus_secs(5))
        .await
        .unwrap_err();
    assert_eq!(err, LedgerError::Conflict(OrderState::Authorized));
    assert_eq!(
        ledger.order(o.id).await.unwrap().map(|o| o.state),
        Some(OrderState::Authorized)
    );
    assert!(sold_labels(&ledger, &e).await.is_empty());
}
