//! Cases: a sale undone on request (`revoke_sale`), the claim that makes a refund
//! happen once. It gives the seats back as `cancel_sale` does, only from a state that
//! owns seats, and of any number of concurrent requests exactly one wins.

use std::collections::HashMap;
use std::sync::Arc;

use boxoffice_domain::{BuyerId, OrderEvent, OrderId, OrderState};
use boxoffice_engine::ports::{CommitOutcome, Ledger, LedgerError, Order};
use futures::StreamExt;
use futures::stream::{self, FuturesUnordered};

use super::fixtures::{T0, authorized, commit_of, event, sold_labels};

/// An order of `buyer` for the seats at `indexes`, committed and captured.
async fn confirmed(
    ledger: &Arc<dyn Ledger>,
    e: &boxoffice_domain::Event,
    buyer: BuyerId,
    indexes: &[usize],
) -> Order {
    let o = authorized(ledger, e, buyer, indexes).await;
    let committed = ledger.commit(&commit_of(&o, 4)).await.unwrap();
    assert_eq!(committed, CommitOutcome::Committed);
    let captured = ledger
        .apply(o.id, OrderEvent::Captured, None, T0.plus_secs(3))
        .await
        .unwrap();
    assert_eq!(captured.state, OrderState::Confirmed);
    captured
}

pub async fn revoking_a_confirmed_sale_claims_it_and_gives_its_seats_back(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 2).await;
    let buyer = BuyerId::random();
    let o = confirmed(&ledger, &e, buyer, &[0, 1]).await;
    let claimed = ledger.revoke_sale(o.id, T0.plus_secs(4)).await.unwrap();
    assert_eq!(
        (claimed.state, claimed.updated_at, claimed.seats.len()),
        (OrderState::Refunding, T0.plus_secs(4), 2)
    );
    assert!(
        sold_labels(&ledger, &e).await.is_empty(),
        "the seats are back"
    );
    // The buyer's count went down with the seats: two fit again under the limit of two.
    let again = authorized(&ledger, &e, buyer, &[0, 1]).await;
    let recommitted = ledger.commit(&commit_of(&again, 2)).await.unwrap();
    assert_eq!(recommitted, CommitOutcome::Committed);
    let twice = ledger.revoke_sale(o.id, T0.plus_secs(5)).await.unwrap_err();
    assert_eq!(twice, LedgerError::Conflict(OrderState::Refunding));
    let facts = ledger.audit_facts().await.unwrap();
    assert!(!facts.seats_of_unsold_orders.contains(&o.id));
    assert!(!facts.orders_missing_seats.contains(&again.id));
    let refunded = ledger
        .apply(o.id, OrderEvent::Refunded, None, T0.plus_secs(6))
        .await
        .unwrap();
    assert_eq!(refunded.state, OrderState::Refunded);
    let after = ledger.revoke_sale(o.id, T0.plus_secs(7)).await.unwrap_err();
    assert_eq!(after, LedgerError::Conflict(OrderState::Refunded));
}

pub async fn revoking_a_sale_not_yet_captured_cancels_it(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    let o = authorized(&ledger, &e, BuyerId::random(), &[3]).await;
    ledger.commit(&commit_of(&o, 4)).await.unwrap();
    let claimed = ledger.revoke_sale(o.id, T0.plus_secs(3)).await.unwrap();
    assert_eq!(claimed.state, OrderState::Cancelling);
    assert!(sold_labels(&ledger, &e).await.is_empty());
    let captured = ledger
        .apply(o.id, OrderEvent::Captured, None, T0.plus_secs(4))
        .await
        .unwrap_err();
    assert_eq!(captured, LedgerError::Conflict(OrderState::Cancelling));
}

pub async fn revoking_an_order_without_seats_is_a_conflict_and_writes_nothing(
    ledger: Arc<dyn Ledger>,
) {
    let e = event(&ledger, 5, 4).await;
    let o = authorized(&ledger, &e, BuyerId::random(), &[0]).await;
    let err = ledger.revoke_sale(o.id, T0.plus_secs(3)).await.unwrap_err();
    assert_eq!(err, LedgerError::Conflict(OrderState::Authorized));
    let still = ledger.order(o.id).await.unwrap().unwrap();
    assert_eq!((still.state, still.updated_at), (o.state, o.updated_at));
    let unknown = ledger.revoke_sale(OrderId::random(), T0).await.unwrap_err();
    assert_eq!(unknown, LedgerError::NotFound);
    // Only `revoke_sale` may take the seats back; a bare move would leave them sold.
    let other = confirmed(&ledger, &e, BuyerId::random(), &[1]).await;
    let bare = ledger
        .apply(other.id, OrderEvent::CancelRequested, None, T0.plus_secs(4))
        .await
        .unwrap_err();
    assert_eq!(bare, LedgerError::Conflict(OrderState::Confirmed));
    assert_eq!(
        sold_labels(&ledger, &e).await,
        vec![e.seats[1].label.clone()]
    );
}

const SALES: usize = 20;
const REQUESTS_PER_SALE: usize = 10;

/// A revoke retried on a store error, as a caller told "unavailable" does: with
/// several writers, two batches may each hold a row the other waits for, and the
/// database then undoes one of the two writes (nothing of it stays).
async fn revoke_retrying(ledger: &dyn Ledger, id: OrderId) -> Result<Order, LedgerError> {
    let mut tries = 0;
    loop {
        match ledger.revoke_sale(id, T0.plus_secs(5)).await {
            Err(LedgerError::Store(_)) if tries < 10 => tries += 1,
            other => return other,
        }
    }
}

/// K sales, N ≫ K cancel requests racing for them (ten per sale, from many tasks at
/// once): exactly one request per sale claims it, every seat is back once.
pub async fn concurrent_cancels_of_one_order_claim_it_exactly_once(ledger: Arc<dyn Ledger>) {
    let e = Arc::new(event(&ledger, SALES as u32, 4).await);
    let sales: Vec<Order> = stream::iter(0..SALES)
        .map(|i| {
            let (ledger, e) = (ledger.clone(), e.clone());
            async move { confirmed(&ledger, &e, BuyerId::random(), &[i]).await }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    let racers: FuturesUnordered<_> = (0..SALES * REQUESTS_PER_SALE)
        .map(|i| {
            let (ledger, id) = (ledger.clone(), sales[(i * 7) % SALES].id);
            tokio::spawn(async move { (id, revoke_retrying(&*ledger, id).await) })
        })
        .collect();
    let mut wins: HashMap<OrderId, usize> = HashMap::new();
    for joined in racers.collect::<Vec<_>>().await {
        let (id, outcome) = joined.expect("the cancel task ran");
        match outcome {
            Ok(o) => {
                assert_eq!(o.state, OrderState::Refunding);
                *wins.entry(id).or_default() += 1;
            }
            Err(LedgerError::Conflict(OrderState::Refunding)) => {}
            Err(other) => panic!("unexpected answer {other:?}"),
        }
    }
    assert_eq!(wins.len(), SALES, "every sale was claimed");
    assert!(
        wins.values().all(|&n| n == 1),
        "one claim per sale: {wins:?}"
    );
    assert!(sold_labels(&ledger, &e).await.is_empty());
    for sale in &sales {
        let o = ledger.order(sale.id).await.unwrap().unwrap();
        assert_eq!(o.state, OrderState::Refunding);
    }
}
