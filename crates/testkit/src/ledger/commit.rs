//! Cases: the commit point. A commit sells all of an order's seats or none, refuses a
//! sold seat (P1) and a buyer over the limit (P6), and a refusal writes nothing.

use std::sync::Arc;

use boxoffice_domain::{BuyerId, OrderEvent, OrderId, OrderState};
use boxoffice_engine::ports::{CommitOutcome, InsertOrder, Ledger, Order};
use futures::future::join_all;

use super::fixtures::{T0, authorized, commit_of, event, order, sold_labels};

pub async fn a_committed_order_has_its_seats_sold_to_its_buyer(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    let buyer = BuyerId::random();
    let o = authorized(&ledger, &e, buyer, &[1, 3]).await;
    assert_eq!(
        ledger.commit(&commit_of(&o, 4)).await.unwrap(),
        CommitOutcome::Committed
    );
    let mut sold = ledger.sold_seats(e.id).await.unwrap();
    sold.sort();
    assert_eq!(
        sold,
        vec![
            (e.seats[1].label.clone(), buyer),
            (e.seats[3].label.clone(), buyer)
        ]
    );
    let stored = ledger.order(o.id).await.unwrap().unwrap();
    assert_eq!(
        (stored.state, stored.updated_at),
        (OrderState::Committed, T0.plus_secs(2))
    );
}

/// P5: the hot store may offer a seat the ledger sold (it lost track of the sale). The
/// ledger refuses to write an order naming it, so no card is authorized for a seat that
/// can only lose at commit; a retried insert of an order that exists still finds it.
pub async fn an_order_for_a_seat_the_ledger_sold_is_not_written(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 2).await;
    let first = authorized(&ledger, &e, BuyerId::random(), &[2]).await;
    assert_eq!(
        ledger.commit(&commit_of(&first, 2)).await.unwrap(),
        CommitOutcome::Committed
    );
    let late = order(&e, BuyerId::random(), &[4, 2], T0);
    assert_eq!(
        ledger.insert_order(&late).await.unwrap(),
        InsertOrder::SeatSold {
            seat_id: e.seats[2].label.clone()
        }
    );
    assert_eq!(ledger.order(late.id).await.unwrap(), None);
    assert_eq!(ledger.order_of_hold(late.hold).await.unwrap(), None);
    // The sale's own order, inserted again (a retried checkout), is found as it is.
    let retry = Order {
        id: OrderId::random(),
        ..first.clone()
    };
    let found = ledger.insert_order(&retry).await.unwrap();
    assert!(
        matches!(&found, InsertOrder::Exists(o) if o.id == first.id),
        "{found:?}"
    );
    // A free seat is still sold as before.
    let other = order(&e, BuyerId::random(), &[4], T0);
    assert_eq!(
        ledger.insert_order(&other).await.unwrap(),
        InsertOrder::Inserted
    );
}

pub async fn a_second_order_for_a_sold_seat_gets_seat_taken_and_writes_nothing(
    ledger: Arc<dyn Ledger>,
) {
    let e = event(&ledger, 5, 2).await;
    let first = authorized(&ledger, &e, BuyerId::random(), &[2]).await;
    // The loser asks for a free seat and the one the first order is about to buy: it
    // must get neither. (Its order is written before that sale: afterwards the ledger
    // would not write it at all, see the next case.)
    let loser_buyer = BuyerId::random();
    let loser = authorized(&ledger, &e, loser_buyer, &[4, 2]).await;
    assert_eq!(
        ledger.commit(&commit_of(&first, 2)).await.unwrap(),
        CommitOutcome::Committed
    );
    let outcome = ledger.commit(&commit_of(&loser, 2)).await.unwrap();
    assert_eq!(
        outcome,
        CommitOutcome::SeatTaken {
            seat_id: e.seats[2].label.clone()
        }
    );
    assert_eq!(
        sold_labels(&ledger, &e).await,
        vec![e.seats[2].label.clone()]
    );
    assert_eq!(
        ledger.order(loser.id).await.unwrap().map(|o| o.state),
        Some(OrderState::Authorized)
    );
    // Nothing counted against the loser's limit either: two more seats still fit.
    let retry = authorized(&ledger, &e, loser_buyer, &[3, 4]).await;
    assert_eq!(
        ledger.commit(&commit_of(&retry, 2)).await.unwrap(),
        CommitOutcome::Committed
    );
    let lost = ledger
        .apply(loser.id, OrderEvent::CommitLost, None, T0.plus_secs(3))
        .await
        .unwrap();
    assert_eq!(lost.state, OrderState::Lost);
}

pub async fn an_order_can_be_committed_only_once(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    let o = authorized(&ledger, &e, BuyerId::random(), &[0]).await;
    assert_eq!(
        ledger.commit(&commit_of(&o, 4)).await.unwrap(),
        CommitOutcome::Committed
    );
    let again = ledger.commit(&commit_of(&o, 4)).await.unwrap();
    assert_eq!(again, CommitOutcome::NotCommittable(OrderState::Committed));
    assert_eq!(sold_labels(&ledger, &e).await.len(), 1);
}

pub async fn only_an_authorized_order_can_be_committed(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    let o = order(&e, BuyerId::random(), &[0], T0);
    ledger.insert_order(&o).await.unwrap();
    let outcome = ledger.commit(&commit_of(&o, 4)).await.unwrap();
    assert_eq!(
        outcome,
        CommitOutcome::NotCommittable(OrderState::PendingPayment)
    );
    assert!(sold_labels(&ledger, &e).await.is_empty());
}

pub async fn a_buyer_over_the_limit_gets_limit_exceeded_and_no_seats(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 6, 2).await;
    let buyer = BuyerId::random();
    let two = authorized(&ledger, &e, buyer, &[0, 1]).await;
    assert_eq!(
        ledger.commit(&commit_of(&two, 2)).await.unwrap(),
        CommitOutcome::Committed
    );
    let third = authorized(&ledger, &e, buyer, &[2]).await;
    assert_eq!(
        ledger.commit(&commit_of(&third, 2)).await.unwrap(),
        CommitOutcome::LimitExceeded
    );
    assert_eq!(
        sold_labels(&ledger, &e).await,
        vec![e.seats[0].label.clone(), e.seats[1].label.clone()]
    );
    assert_eq!(
        ledger.order(third.id).await.unwrap().map(|o| o.state),
        Some(OrderState::Authorized)
    );
    // Another buyer is not affected by the first one's count.
    let other = authorized(&ledger, &e, BuyerId::random(), &[2, 3]).await;
    assert_eq!(
        ledger.commit(&commit_of(&other, 2)).await.unwrap(),
        CommitOutcome::Committed
    );
}

pub async fn an_order_larger_than_the_limit_is_refused(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 6, 2).await;
    let o = authorized(&ledger, &e, BuyerId::random(), &[0, 1, 2]).await;
    assert_eq!(
        ledger.commit(&commit_of(&o, 2)).await.unwrap(),
        CommitOutcome::LimitExceeded
    );
    assert!(sold_labels(&ledger, &e).await.is_empty());
}

pub async fn a_committed_order_moves_on_to_capture_and_keeps_its_seats(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    let o = authorized(&ledger, &e, BuyerId::random(), &[0]).await;
    ledger.commit(&commit_of(&o, 4)).await.unwrap();
    let failed = ledger
        .apply(o.id, OrderEvent::CaptureFailed, None, T0.plus_secs(3))
        .await
        .unwrap();
    assert_eq!(failed.state, OrderState::PendingCapture);
    let done = ledger
        .apply(o.id, OrderEvent::Captured, Some("cap_1"), T0.plus_secs(4))
        .await
        .unwrap();
    assert_eq!(
        (done.state, done.payment_ref.as_deref()),
        (OrderState::Confirmed, Some("cap_1"))
    );
    assert_eq!(
        sold_labels(&ledger, &e).await,
        vec![e.seats[0].label.clone()]
    );
}

/// Commits issued together may share a transaction; the one that loses its seat must
/// not take the others down with it.
pub async fn one_conflicting_commit_in_a_batch_does_not_undo_the_others(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 20, 4).await;
    let mut orders = Vec::new();
    for i in 0..16 {
        orders.push(authorized(&ledger, &e, BuyerId::random(), &[i]).await);
    }
    let rival = authorized(&ledger, &e, BuyerId::random(), &[7]).await;
    orders.insert(8, rival);
    let outcomes = join_all(orders.iter().map(|o| {
        let ledger = ledger.clone();
        let commit = commit_of(o, 4);
        async move { ledger.commit(&commit).await.unwrap() }
    }))
    .await;
    let won = outcomes
        .iter()
        .filter(|o| **o == CommitOutcome::Committed)
        .count();
    let taken = CommitOutcome::SeatTaken {
        seat_id: e.seats[7].label.clone(),
    };
    assert_eq!(won, 16, "{outcomes:?}");
    assert_eq!(
        outcomes.iter().filter(|o| **o == taken).count(),
        1,
        "{outcomes:?}"
    );
    assert_eq!(sold_labels(&ledger, &e).await.len(), 16);
}
