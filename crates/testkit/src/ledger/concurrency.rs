//! The case every suite has (STYLE habit 8): K seats, N ≫ K buyers racing for them,
//! exactly K win. Here 100 seats and 2,000 authorized orders, twenty per seat, all
//! committed at once from many tasks.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use boxoffice_domain::BuyerId;
use boxoffice_engine::ports::{CommitOutcome, Ledger, Order};
use futures::StreamExt;
use futures::stream::{self, FuturesUnordered};

use super::fixtures::{authorized, commit_of, event};

const SEATS: usize = 100;
const ORDERS: usize = 2_000;

pub async fn k_seats_and_many_more_orders_sell_exactly_k_seats(ledger: Arc<dyn Ledger>) {
    let e = Arc::new(event(&ledger, SEATS as u32, 4).await);
    // A stride coprime with the seat count spreads the twenty rivals of each seat
    // through the whole run instead of queuing them back to back.
    let orders: Vec<Order> = stream::iter(0..ORDERS)
        .map(|i| {
            let (ledger, e) = (ledger.clone(), e.clone());
            async move { authorized(&ledger, &e, BuyerId::random(), &[(i * 37) % SEATS]).await }
        })
        .buffer_unordered(128)
        .collect()
        .await;
    let racers: FuturesUnordered<_> = orders
        .iter()
        .map(|o| {
            let (ledger, commit, order) = (ledger.clone(), commit_of(o, 4), o.clone());
            tokio::spawn(async move { (order, ledger.commit(&commit).await) })
        })
        .collect();
    let results: Vec<_> = racers.collect().await;
    let mut winners: HashMap<String, BuyerId> = HashMap::new();
    for joined in results {
        let (order, outcome) = joined.expect("the commit task ran");
        let seat = order.seats[0].seat_id.clone();
        match outcome.expect("the store answered") {
            CommitOutcome::Committed => assert!(
                winners.insert(seat, order.buyer).is_none(),
                "a seat sold twice"
            ),
            CommitOutcome::SeatTaken { seat_id } => assert_eq!(seat_id, seat),
            other => panic!("unexpected outcome {other:?}"),
        }
    }
    assert_eq!(winners.len(), SEATS, "exactly one winner per seat");
    let sold = ledger.sold_seats(e.id).await.unwrap();
    assert_eq!(sold.len(), SEATS);
    assert_eq!(
        sold.iter().map(|(s, _)| s).collect::<HashSet<_>>().len(),
        SEATS
    );
    for (seat, buyer) in sold {
        assert_eq!(
            winners.get(&seat),
            Some(&buyer),
            "seat {seat} sold to its winner"
        );
    }
}
