//! Cases: undoing a sale after the exchange. A ticket sold on through the exchange
//! stands apart from the seller's order: revoking that order keeps it (and its seat)
//! with its swap buyer, and the exchange's payouts stay counted against the order. An
//! event's cancellation claims each finished swap's refund once, however many claims
//! race, revoking the ticket and giving its seat back in the same step. One ticket
//! cancelled on its own is claimed once however many cancellations race, its seat
//! given back once; every refused cancellation writes nothing.

use boxoffice_domain::exchange::SwapState;
use boxoffice_domain::{BuyerId, Money, OrderState};
use boxoffice_engine::ports::{CheckIn, Listing, ScanAttempt, Swap, TicketCancelRefusal};
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

/// Cancellations racing per ticket: many more than the tickets.
const CANCELS_PER_TICKET: usize = 16;

pub async fn n_cancels_racing_over_k_tickets_cancel_each_once(s: ExchangeStores) {
    const K: usize = 3;
    let (e, o, rows) = sold(&s, K as u32 + 1).await;
    let racing: FuturesUnordered<_> = rows[..K]
        .iter()
        .flat_map(|r| std::iter::repeat_n(r.id, CANCELS_PER_TICKET))
        .map(|id| {
            let t = s.tickets.clone();
            tokio::spawn(async move { (id, t.cancel_ticket(id, NOW.plus_secs(5)).await) })
        })
        .collect();
    let mut won = Vec::new();
    for joined in racing.collect::<Vec<_>>().await {
        let (id, answer) = joined.expect("the cancellation ran");
        match answer.expect("the store answered") {
            Ok(c) => {
                assert_eq!(
                    (c.ticket, c.order, c.state),
                    (id, o.id, OrderState::Refunding)
                );
                assert!(c.amount.0 > 0);
                won.push(c);
            }
            Err(TicketCancelRefusal::AlreadyCancelled) => {}
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    let mut ids: Vec<_> = won.iter().map(|c| c.ticket).collect();
    ids.sort();
    let mut want: Vec<_> = rows[..K].iter().map(|r| r.id).collect();
    want.sort();
    assert_eq!(ids, want, "each ticket cancelled exactly once");
    // Each seat given back once; the order keeps its last ticket and stays confirmed.
    let seats = s.ledger.sold_seats(e.id).await.unwrap();
    assert_eq!(seats, vec![(rows[K].seat.as_str().to_owned(), o.buyer)]);
    let order = s.ledger.order(o.id).await.unwrap().unwrap();
    assert_eq!(order.state, OrderState::Confirmed);
    for r in &rows[..K] {
        let t = s.tickets.ticket(r.id).await.unwrap().unwrap();
        assert_eq!(t.order_state, OrderState::Refunding, "revoked at the door");
    }
    let sum: i64 = won.iter().map(|c| c.amount.0).sum();
    assert_eq!(s.tickets.cancelled_parts(o.id).await.unwrap(), Money(sum));
    audit_is_clean(&s, &e).await;
    let facts = s.ledger.audit_facts().await.unwrap();
    assert!(!facts.orders_missing_seats.contains(&o.id), "{facts:?}");
    // The sweep's work list, and each ticket's money marked back once.
    let due = s
        .tickets
        .tickets_refunding(NOW.plus_secs(6), 100)
        .await
        .unwrap();
    let mine: Vec<_> = due.iter().filter(|c| c.order == o.id).collect();
    assert_eq!(mine.len(), K);
    assert!(
        s.tickets
            .tickets_refunding(NOW.plus_secs(5), 100)
            .await
            .unwrap()
            .iter()
            .all(|c| c.order != o.id),
        "only tickets claimed before the cut"
    );
    for c in &won {
        assert!(s.tickets.ticket_refunded(c.ticket).await.unwrap());
        assert!(!s.tickets.ticket_refunded(c.ticket).await.unwrap());
        let again = s.tickets.cancel_ticket(c.ticket, NOW.plus_secs(7)).await;
        assert_eq!(again.unwrap(), Err(TicketCancelRefusal::AlreadyCancelled));
    }
    assert_eq!(s.tickets.cancelled_parts(o.id).await.unwrap(), Money(sum));
    // Undoing the whole order later frees only its last seat.
    s.ledger.revoke_sale(o.id, NOW.plus_secs(8)).await.unwrap();
    assert!(s.ledger.sold_seats(e.id).await.unwrap().is_empty());
    audit_is_clean(&s, &e).await;
}

pub async fn refused_ticket_cancellations_write_nothing(s: ExchangeStores) {
    use TicketCancelRefusal as No;
    let (swaps, (e, o, rows)) = exchange_away(&s, 1, 5).await;
    let ts = TicketStores {
        ledger: s.ledger.clone(),
        tickets: s.tickets.clone(),
    };
    let g = gate(&ts, &e, "Main").await;
    let scan = ScanAttempt {
        ticket: rows[1].id,
        version: 1,
        gate: g.id,
        at: DOORS,
        offline: false,
    };
    assert_eq!(
        s.tickets.check_in(&scan).await.unwrap(),
        CheckIn::Admitted { replaced: None }
    );
    s.exchange
        .list(&listing_of(&rows[2]))
        .await
        .unwrap()
        .unwrap();
    let before = s.ledger.sold_seats(e.id).await.unwrap();
    let at = NOW.plus_secs(5);
    let cancel = |id| s.tickets.cancel_ticket(id, at);
    assert_eq!(cancel(rows[0].id).await.unwrap(), Err(No::Exchanged));
    assert_eq!(swaps[0].ticket, rows[0].id);
    assert_eq!(cancel(rows[1].id).await.unwrap(), Err(No::CheckedIn));
    assert_eq!(cancel(rows[2].id).await.unwrap(), Err(No::Listed));
    let unknown = boxoffice_domain::ticket::TicketId::for_seat(
        boxoffice_domain::OrderId::random(),
        &rows[3].seat,
    );
    assert_eq!(cancel(unknown).await.unwrap(), Err(No::NotFound));
    assert_eq!(s.ledger.sold_seats(e.id).await.unwrap(), before);
    assert!(cancel(rows[3].id).await.unwrap().is_ok());
    let after = s.ledger.sold_seats(e.id).await.unwrap();
    assert_eq!(after.len(), before.len() - 1, "only the one cancelled");
    // An order's last ticket still following it cannot go alone.
    let (e1, _, single) = sold(&s, 1).await;
    let last = s.tickets.cancel_ticket(single[0].id, at).await.unwrap();
    assert_eq!(last, Err(No::LastTicket));
    assert_eq!(s.ledger.sold_seats(e1.id).await.unwrap().len(), 1);
    // An order no longer confirmed.
    s.ledger.revoke_sale(o.id, NOW.plus_secs(6)).await.unwrap();
    assert_eq!(
        cancel(rows[4].id).await.unwrap(),
        Err(No::NotConfirmed(OrderState::Refunding))
    );
    audit_is_clean(&s, &e).await;
}

pub async fn a_listed_ticket_is_not_offered_for_transfer_until_withdrawn(s: ExchangeStores) {
    use boxoffice_domain::TransferId;
    use boxoffice_engine::ports::{TransferOffer, TransferRefusal, TransferState};
    let (_, o, rows) = sold(&s, 1).await;
    let l = listing_of(&rows[0]);
    s.exchange.list(&l).await.unwrap().unwrap();
    let offer = |at: boxoffice_domain::Millis| TransferOffer {
        id: TransferId::random(),
        ticket: rows[0].id,
        event: rows[0].event,
        from: o.buyer,
        to: BuyerId::random(),
        version: 1,
        state: TransferState::Offered,
        created_at: at,
        expires_at: at.plus_secs(600),
        ended_at: None,
    };
    let refused = s.tickets.offer_transfer(&offer(NOW)).await.unwrap();
    assert_eq!(refused, Err(TransferRefusal::Listed));
    stands_until_withdrawn(&s, &l, o.buyer).await;
    let offered = s.tickets.offer_transfer(&offer(NOW.plus_secs(2))).await;
    assert_eq!(offered.unwrap(), Ok(()));
}

/// A rename issues a new version, and a listing is good for the version listed: a
/// listed ticket renamed left its listing stale (gone from the exchange, still open in
/// the store, blocking a new listing or an offer) and a buyer paying for a reserved one
/// charged and then refunded. Renames wait for the listing to end, like offers.
pub async fn a_listed_ticket_is_not_renamed_until_withdrawn(s: ExchangeStores) {
    use boxoffice_domain::ticket::AttendeeName;
    use boxoffice_engine::ports::{Rename, RenameRefusal};
    let (_, o, rows) = sold(&s, 1).await;
    let l = listing_of(&rows[0]);
    s.exchange.list(&l).await.unwrap().unwrap();
    let rename = |at: boxoffice_domain::Millis| Rename {
        ticket: rows[0].id,
        by: o.buyer,
        version: 1,
        attendee: AttendeeName::parse("Ada Lovelace").expect("a name"),
        counted: None,
        now: at,
    };
    let refused = s.tickets.rename_ticket(&rename(NOW)).await.unwrap();
    assert_eq!(refused, Err(RenameRefusal::Listed));
    let facts = s
        .tickets
        .ticket(rows[0].id)
        .await
        .unwrap()
        .expect("the ticket");
    assert_eq!((facts.ticket.version, facts.ticket.attendee), (1, None));
    stands_until_withdrawn(&s, &l, o.buyer).await;
    let renamed = s.tickets.rename_ticket(&rename(NOW.plus_secs(2))).await;
    assert_eq!(renamed.unwrap().map(|t| t.version), Ok(2));
}

/// `l` is still listed, alone; its seller then withdraws it.
async fn stands_until_withdrawn(s: &ExchangeStores, l: &Listing, seller: BuyerId) {
    let open = s.exchange.open_listings(l.event, None, 10).await.unwrap();
    assert_eq!(open.len(), 1, "the listing stands");
    s.exchange
        .withdraw(l.id, seller, NOW.plus_secs(1))
        .await
        .unwrap()
        .unwrap();
}
