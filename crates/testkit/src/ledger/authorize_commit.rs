//! Cases: `authorize_and_commit`, a live checkout's authorization and commit as one
//! write. The authorization stands whatever the commit's outcome (a lost commit leaves
//! an `authorized` order to void), a refused move writes nothing, and K seats raced by
//! N ≫ K orders still sell exactly K times.

use std::collections::HashSet;
use std::sync::Arc;

use boxoffice_domain::{BuyerId, OrderEvent, OrderState};
use boxoffice_engine::ports::{CommitOutcome, InsertOrder, Ledger, LedgerError, Order};
use futures::StreamExt;
use futures::stream::{self, FuturesUnordered};

use super::fixtures::{T0, commit_of, event, order};

/// A `pending_payment` order of a new buyer for the seats at `indexes`.
async fn pending(
    ledger: &Arc<dyn Ledger>,
    e: &boxoffice_domain::Event,
    indexes: &[usize],
) -> Order {
    let o = order(e, BuyerId::random(), indexes, T0);
    assert_eq!(
        ledger.insert_order(&o).await.unwrap(),
        InsertOrder::Inserted
    );
    o
}

pub async fn authorizing_and_committing_in_one_sells_the_seats_with_the_reference(
    ledger: Arc<dyn Ledger>,
) {
    let e = event(&ledger, 5, 4).await;
    let o = pending(&ledger, &e, &[1, 3]).await;
    let (authorized, outcome) = ledger
        .authorize_and_commit(&commit_of(&o, 4), "auth_1")
        .await
        .unwrap();
    assert_eq!(outcome, CommitOutcome::Committed);
    assert_eq!(authorized.state, OrderState::Authorized);
    assert_eq!(authorized.payment_ref.as_deref(), Some("auth_1"));
    let stored = ledger.order(o.id).await.unwrap().unwrap();
    assert_eq!(stored.state, OrderState::Committed);
    assert_eq!(stored.payment_ref.as_deref(), Some("auth_1"));
    let mut sold = ledger.sold_seats(e.id).await.unwrap();
    sold.sort();
    let labels = [e.seats[1].label.clone(), e.seats[3].label.clone()];
    assert_eq!(sold, labels.map(|l| (l, o.buyer)).to_vec());
}

pub async fn a_commit_lost_after_the_authorization_leaves_the_order_authorized(
    ledger: Arc<dyn Ledger>,
) {
    let e = event(&ledger, 5, 4).await;
    let (first, second) = (
        pending(&ledger, &e, &[2]).await,
        pending(&ledger, &e, &[4, 2]).await,
    );
    let won = ledger
        .authorize_and_commit(&commit_of(&first, 4), "auth_1")
        .await;
    assert_eq!(won.unwrap().1, CommitOutcome::Committed);
    let (_, lost) = ledger
        .authorize_and_commit(&commit_of(&second, 4), "auth_2")
        .await
        .unwrap();
    let taken = e.seats[2].label.clone();
    assert_eq!(
        lost,
        CommitOutcome::SeatTaken {
            seat_id: taken.clone()
        }
    );
    // The authorization stands, for the caller to void; none of the commit does.
    let stored = ledger.order(second.id).await.unwrap().unwrap();
    assert_eq!(stored.state, OrderState::Authorized);
    assert_eq!(stored.payment_ref.as_deref(), Some("auth_2"));
    assert_eq!(
        ledger.sold_seats(e.id).await.unwrap(),
        vec![(taken, first.buyer)]
    );
}

pub async fn an_authorization_the_orders_state_refuses_writes_nothing(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    let o = pending(&ledger, &e, &[0]).await;
    // A webhook's decline got there first.
    ledger
        .apply(o.id, OrderEvent::Declined, None, T0.plus_secs(1))
        .await
        .unwrap();
    let refused = ledger
        .authorize_and_commit(&commit_of(&o, 4), "auth_1")
        .await;
    assert!(
        matches!(refused, Err(LedgerError::Conflict(OrderState::Declined))),
        "{refused:?}"
    );
    let stored = ledger.order(o.id).await.unwrap().unwrap();
    assert_eq!(
        (stored.state, stored.payment_ref),
        (OrderState::Declined, None)
    );
    assert!(ledger.sold_seats(e.id).await.unwrap().is_empty());
}

const SEATS: usize = 50;
const ORDERS: usize = 1_000;

pub async fn k_seats_and_many_more_orders_authorized_and_committed_in_one_sell_exactly_k(
    ledger: Arc<dyn Ledger>,
) {
    let e = Arc::new(event(&ledger, SEATS as u32, 4).await);
    let orders: Vec<Order> = stream::iter(0..ORDERS)
        .map(|i| {
            let (ledger, e) = (ledger.clone(), e.clone());
            async move { pending(&ledger, &e, &[(i * 37) % SEATS]).await }
        })
        .buffer_unordered(128)
        .collect()
        .await;
    let racers: FuturesUnordered<_> = orders
        .iter()
        .map(|o| {
            let (ledger, commit, order) = (ledger.clone(), commit_of(o, 4), o.clone());
            tokio::spawn(async move {
                let reference = format!("auth_{}", order.id);
                (
                    order,
                    ledger.authorize_and_commit(&commit, &reference).await,
                )
            })
        })
        .collect();
    let results: Vec<_> = racers.collect().await;
    let mut winners = HashSet::new();
    for joined in results {
        let (order, answer) = joined.expect("the task ran");
        let (authorized, outcome) = answer.expect("the store answered");
        assert_eq!(authorized.state, OrderState::Authorized);
        let seat = order.seats[0].seat_id.clone();
        match outcome {
            CommitOutcome::Committed => assert!(winners.insert(seat), "a seat sold twice"),
            CommitOutcome::SeatTaken { seat_id } => assert_eq!(seat_id, seat),
            other => panic!("unexpected outcome {other:?}"),
        }
    }
    assert_eq!(winners.len(), SEATS, "exactly one winner per seat");
    assert_eq!(ledger.sold_seats(e.id).await.unwrap().len(), SEATS);
}
