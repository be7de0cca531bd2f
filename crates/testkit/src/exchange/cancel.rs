//! Cases: undoing a sale after the exchange. A ticket sold on through the exchange
//! stands apart from the seller's order: revoking that order keeps it (and its seat)
//! with its swap buyer, and the exchange's payouts stay counted against the order. An
//! event's cancellation claims each finished swap's refund once, however many claims
//! race, revoking the ticket and giving its seat back in the same step.

use boxoffice_domain::exchange::SwapState;
use boxoffice_domain::{BuyerId, Money, OrderState};
use boxoffice_engine::ports::{CheckIn, ScanAttempt, Swap};
use futures::stream::{FuturesUnordered, StreamExt};

use super::{ExchangeStores, NOW, audit_is_clean, finish, listing_of, reserve_of, sold};
use crate::tickets::{DOORS, TicketStores, gate};

/// Lists and sells `n` of the order's tickets to new buyers; the swaps, done.
async fn exchange_away(s: &ExchangeStores, n: usize, seats: u32) -> (Vec<Swap>, super::Fixture) {
    let (e, o, rows) = sold(s, seats).await;
    let mut swaps = Vec::new();
    for row in rows.iter().take(n) {
        let l = listing_of(row);
        s.exchange.list(&l).await.unwrap().unwrap();
        let r = reserve_of(&l, &o, BuyerId::random(), seats);
        s.exchange.reserve(&r).await.unwrap().unwrap();
        finish(s, r.swap.id, seats).await;
        swaps.push(s.exchange.swap(r.swap.id).await.unwrap().unwrap());
    }
    (swaps, (e, o, rows))
}

pub async fn revoking_the_sellers_order_revoked_the_ticket_its_swap_buyer_paid_for(
    s: ExchangeStores,
) {
    let (swaps, (e, o, rows)) = exchange_away(&s, 1, 2).await;
    let bob = swaps[0].buyer;
    assert_eq!(s.exchange.payouts_of(o.id).await.unwrap(), Money(3_600));
    let claimed = s.ledger.revoke_sale(o.id, NOW.plus_secs(10)).await.unwrap();
    assert_eq!(claimed.state, OrderState::Refunding);
    // The exchanged seat stays sold, to its swap buyer; the seller's other seat is free.
    let seats = s.ledger.sold_seats(e.id).await.unwrap();
    assert_eq!(seats, vec![(rows[0].seat.as_str().to_owned(), bob)]);
    let theirs = s.tickets.ticket(rows[0].id).await.unwrap().unwrap();
    assert_eq!(
        (theirs.ticket.holder, theirs.order_state),
        (bob, OrderState::Confirmed),
        "the swap buyer's ticket stands apart from the seller's order"
    );
    let mine = s.tickets.ticket(rows[1].id).await.unwrap().unwrap();
    assert_eq!(mine.order_state, OrderState::Refunding);
    let ts = TicketStores {
        ledger: s.ledger.clone(),
        tickets: s.tickets.clone(),
    };
    let g = gate(&ts, &e, "Main").await;
    let scan = |ticket, version| ScanAttempt {
        ticket,
        version,
        gate: g.id,
        at: DOORS,
        offline: false,
    };
    let refused = s.tickets.check_in(&scan(rows[1].id, 1)).await.unwrap();
    assert_eq!(refused, CheckIn::NotPaid(OrderState::Refunding));
    let admitted = s.tickets.check_in(&scan(rows[0].id, 2)).await.unwrap();
    assert_eq!(admitted, CheckIn::Admitted { replaced: None });
    // The payout stays counted against the order: its refund is only the rest.
    assert_eq!(s.exchange.payouts_of(o.id).await.unwrap(), Money(3_600));
    audit_is_clean(&s, &e).await;
    let facts = s.ledger.audit_facts().await.unwrap();
    assert!(!facts.seats_of_unsold_orders.contains(&o.id), "{facts:?}");
}

/// Claims racing per swap: many more than the swaps.
const CLAIMS_PER_SWAP: usize = 16;

pub async fn n_claims_racing_over_k_exchanged_tickets_claim_each_once(s: ExchangeStores) {
    const K: usize = 3;
    let (swaps, (e, o, rows)) = exchange_away(&s, K, K as u32 + 1).await;
    s.ledger.revoke_sale(o.id, NOW.plus_secs(10)).await.unwrap();
    let racing: FuturesUnordered<_> = swaps
        .iter()
        .flat_map(|w| std::iter::repeat_n(w.id, CLAIMS_PER_SWAP))
        .map(|id| {
            let x = s.exchange.clone();
            tokio::spawn(async move { (id, x.claim_cancelled_swap(id, NOW.plus_secs(20)).await) })
        })
        .collect();
    let mut won = Vec::new();
    for joined in racing.collect::<Vec<_>>().await {
        let (id, claimed) = joined.expect("the claim ran");
        if claimed.expect("the store answered") {
            won.push(id);
        }
    }
    won.sort();
    let mut want: Vec<_> = swaps.iter().map(|w| w.id).collect();
    want.sort();
    assert_eq!(won, want, "each finished swap claimed exactly once");
    // Every ticket revoked, every seat given back, every count down, once.
    for (w, row) in swaps.iter().zip(&rows) {
        let now = s.exchange.swap(w.id).await.unwrap().unwrap();
        assert_eq!(now.state, SwapState::Refunding);
        let t = s.tickets.ticket(row.id).await.unwrap().unwrap();
        assert_eq!(t.order_state, OrderState::Refunded, "the ticket is revoked");
    }
    assert!(s.ledger.sold_seats(e.id).await.unwrap().is_empty());
    audit_is_clean(&s, &e).await;
    // The payouts were made before: still counted against the seller's order.
    assert_eq!(
        s.exchange.payouts_of(o.id).await.unwrap(),
        Money(3_600 * K as i64)
    );
    let live = s.exchange.live_swaps(e.id).await.unwrap();
    assert_eq!(live.len(), K);
    for w in &swaps {
        let undone = s.exchange.advance(
            w.id,
            SwapState::Refunding,
            SwapState::Undone,
            None,
            NOW.plus_secs(21),
        );
        assert!(undone.await.unwrap());
        let again = s.exchange.claim_cancelled_swap(w.id, NOW.plus_secs(22));
        assert!(!again.await.unwrap(), "an undone swap is not claimed again");
    }
    assert!(s.exchange.live_swaps(e.id).await.unwrap().is_empty());
    assert_eq!(
        s.exchange.payouts_of(o.id).await.unwrap(),
        Money(3_600 * K as i64)
    );
}
