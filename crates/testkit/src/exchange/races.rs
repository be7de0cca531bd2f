//! Cases: races (STYLE habit 8). N ≫ 1 buyers on one listing: exactly one reserves it.
//! K listings and N ≫ K buyers: exactly K swaps, each finished once, each ticket with
//! its winner at the next version, the counts and the audit in step.

use std::collections::{HashMap, HashSet};

use boxoffice_domain::BuyerId;
use boxoffice_engine::ports::{ListingRefusal, Reserve};
use futures::stream::{FuturesUnordered, StreamExt};

use super::{ExchangeStores, audit_is_clean, finish, listing_of, reserve_of, sold};
use crate::ledger::fixtures::{captured, event};
use crate::tickets::rows_of;

/// Runs every reservation at once; returns the winners.
async fn race(s: &ExchangeStores, all: Vec<Reserve>) -> Vec<Reserve> {
    let racing: FuturesUnordered<_> = all
        .into_iter()
        .map(|r| {
            let x = s.exchange.clone();
            tokio::spawn(async move { (x.reserve(&r).await, r) })
        })
        .collect();
    let mut won = Vec::new();
    for joined in racing.collect::<Vec<_>>().await {
        let (answer, r) = joined.expect("the buyer task ran");
        match answer.expect("the store answered") {
            Ok(()) => won.push(r),
            Err(ListingRefusal::NotOpen(_)) => {}
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    won
}

const BUYERS_ON_ONE: usize = 64;

pub async fn n_buyers_racing_for_one_listing_exactly_one_wins(s: ExchangeStores) {
    let (e, o, rows) = sold(&s, 1).await;
    let l = listing_of(&rows[0]);
    s.exchange.list(&l).await.unwrap().unwrap();
    let all = (0..BUYERS_ON_ONE)
        .map(|_| reserve_of(&l, &o, BuyerId::random(), 1))
        .collect();
    let won = race(&s, all).await;
    assert_eq!(won.len(), 1, "exactly one buyer reserves the listing");
    let t = finish(&s, won[0].swap.id, 1).await;
    assert_eq!((t.holder, t.version), (won[0].swap.buyer, 2));
    audit_is_clean(&s, &e).await;
}

const LISTINGS: usize = 100;
const BUYERS: usize = 1_000;
const SELLERS: usize = 4;

pub async fn k_listings_and_n_buyers_make_exactly_k_swaps(s: ExchangeStores) {
    // Sellers of a quarter of the seats each, at the event's limit.
    let per = LISTINGS / SELLERS;
    let e = event(&s.ledger, LISTINGS as u32, per as u32).await;
    let mut sellers = Vec::new();
    for k in 0..SELLERS {
        let seats: Vec<usize> = (k * per..(k + 1) * per).collect();
        let o = captured(&s.ledger, &e, BuyerId::random(), &seats, per as u32).await;
        let rows = rows_of(&o);
        s.tickets
            .insert_tickets(&rows)
            .await
            .expect("write the tickets");
        sellers.extend(rows.into_iter().map(|r| (r, o.clone())));
    }
    let listings: Vec<_> = sellers.iter().map(|(r, _)| listing_of(r)).collect();
    for l in &listings {
        s.exchange.list(l).await.unwrap().unwrap();
    }
    let all = (0..BUYERS)
        .map(|n| {
            let k = n % LISTINGS;
            reserve_of(&listings[k], &sellers[k].1, BuyerId::random(), 4)
        })
        .collect();
    let won = race(&s, all).await;
    assert_eq!(won.len(), LISTINGS, "exactly one swap per listing");
    let per_listing: HashSet<_> = won.iter().map(|r| r.swap.listing).collect();
    assert_eq!(per_listing.len(), LISTINGS);
    let finishing: FuturesUnordered<_> = won
        .iter()
        .map(|r| {
            let (s, id) = (s.clone(), r.swap.id);
            tokio::spawn(async move { finish(&s, id, 4).await })
        })
        .collect();
    let moved: Vec<_> = finishing.collect().await;
    let holders: HashMap<_, _> = moved
        .into_iter()
        .map(|t| t.expect("finished"))
        .map(|t| (t.id, (t.holder, t.version)))
        .collect();
    for r in &won {
        assert_eq!(holders[&r.swap.ticket], (r.swap.buyer, 2));
    }
    let seats = s.ledger.sold_seats(e.id).await.unwrap();
    let from: HashSet<_> = sellers.iter().map(|(r, _)| r.holder).collect();
    assert_eq!(seats.len(), LISTINGS);
    assert!(
        seats.iter().all(|(_, b)| !from.contains(b)),
        "the sellers sold every seat"
    );
    assert!(
        s.exchange
            .open_listings(e.id, None, 200)
            .await
            .unwrap()
            .is_empty()
    );
    audit_is_clean(&s, &e).await;
}
