//! Cases: transfers. An accepted offer moves the ticket, its sold seat and both
//! buyers' counts in one step and supersedes the old version at the door; every
//! refusal writes nothing; and of offers, accepts and cancels racing over one ticket
//! exactly one wins (STYLE habit 8: K tickets, N ≫ K contenders, exactly K winners).

use boxoffice_domain::{BuyerId, Event, Millis, TransferId};
use boxoffice_engine::ports::{
    Accept, CheckIn, Order, ScanAttempt, TicketRow, TransferOffer, TransferRefusal, TransferState,
};
use futures::stream::{FuturesUnordered, StreamExt};

use super::{DOORS, TicketStores, confirmed_order, gate, rows_of};
use crate::ledger::fixtures::{T0, captured, event};

/// When the cases offer: after the fixtures' order moves, before the doors.
const NOW: Millis = Millis(T0.0 + 60_000);

fn offer_of(row: &TicketRow, to: BuyerId) -> TransferOffer {
    TransferOffer {
        id: TransferId::random(),
        ticket: row.id,
        event: row.event,
        from: row.holder,
        to,
        version: row.version,
        state: TransferState::Offered,
        created_at: NOW,
        expires_at: NOW.plus_secs(600),
        ended_at: None,
    }
}

fn accept_of(offer: &TransferOffer, by: BuyerId, limit: u32) -> Accept {
    Accept {
        transfer: offer.id,
        by,
        max_per_buyer: limit,
        now: NOW.plus_secs(1),
    }
}

/// A confirmed order of `seats` seats with its tickets written.
async fn sold(s: &TicketStores, seats: u32) -> (Event, Order, Vec<TicketRow>) {
    let (e, o) = confirmed_order(s, seats).await;
    let rows = rows_of(&o);
    s.tickets
        .insert_tickets(&rows)
        .await
        .expect("write the tickets");
    (e, o, rows)
}

/// The audit's P2 and P6 findings about this event: none, when the seats and counts
/// followed the tickets.
async fn audit_is_clean(s: &TicketStores, e: &Event) {
    let facts = s.ledger.audit_facts().await.expect("audit facts");
    let mine = |ev: &boxoffice_domain::EventId| *ev == e.id;
    assert!(
        !facts.sold_without_order.iter().any(|(ev, _)| mine(ev)),
        "{facts:?}"
    );
    assert!(
        !facts.buyers_over_limit.iter().any(|(ev, _, _)| mine(ev)),
        "{facts:?}"
    );
}

pub async fn an_accepted_transfer_moves_the_ticket_its_seat_and_both_counts(s: TicketStores) {
    let (e, o, rows) = sold(&s, 2).await;
    let bob = BuyerId::random();
    let offer = offer_of(&rows[0], bob);
    assert_eq!(s.tickets.offer_transfer(&offer).await.unwrap(), Ok(()));
    let second = offer_of(&rows[0], BuyerId::random());
    assert_eq!(
        s.tickets.offer_transfer(&second).await.unwrap(),
        Err(TransferRefusal::AlreadyOffered)
    );
    let stranger = accept_of(&offer, BuyerId::random(), 2);
    assert_eq!(
        s.tickets.accept_transfer(&stranger).await.unwrap(),
        Err(TransferRefusal::NotFound),
        "only the recipient accepts"
    );
    let done = s.tickets.accept_transfer(&accept_of(&offer, bob, 2)).await;
    let done = done.unwrap().expect("accepted");
    assert_eq!(done.offer.state, TransferState::Accepted);
    assert_eq!((done.ticket.holder, done.ticket.version), (bob, 2));
    assert_eq!(done.ticket.issued_at, NOW.plus_secs(1), "a new barcode");
    let again = s.tickets.accept_transfer(&accept_of(&offer, bob, 2)).await;
    assert_eq!(
        again.unwrap(),
        Err(TransferRefusal::Ended(TransferState::Accepted))
    );
    // The seat is the recipient's in the ledger, the other still the buyer's.
    let mut sold = s.ledger.sold_seats(e.id).await.unwrap();
    sold.sort();
    let mut want = vec![
        (rows[0].seat.as_str().to_owned(), bob),
        (rows[1].seat.as_str().to_owned(), o.buyer),
    ];
    want.sort();
    assert_eq!(sold, want);
    audit_is_clean(&s, &e).await;
    let held = s.tickets.tickets_of_holder(bob).await.unwrap();
    assert_eq!(held.len(), 1);
    let kept = s.tickets.tickets_of_holder(o.buyer).await.unwrap();
    assert_eq!(kept.len(), 1, "the sender keeps only the other ticket");
    // The old version is refused at the door; the new one admits.
    let g = gate(&s, &e, "Main").await;
    let mut scan = ScanAttempt {
        ticket: rows[0].id,
        version: 1,
        gate: g.id,
        at: DOORS,
        offline: false,
    };
    let old = s.tickets.check_in(&scan).await.unwrap();
    assert_eq!(old, CheckIn::OldVersion { current: 2 });
    scan.version = 2;
    let new = s.tickets.check_in(&scan).await.unwrap();
    assert_eq!(new, CheckIn::Admitted { replaced: None });
    let listed = s.tickets.transfers_of(bob, 10).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, offer.id);
    // Undoing the sale takes each seat off its holder's count: the recipient's too.
    s.ledger
        .revoke_sale(o.id, NOW)
        .await
        .expect("refund the order");
    assert!(s.ledger.sold_seats(e.id).await.unwrap().is_empty());
    audit_is_clean(&s, &e).await;
}

/// A buyer who gave a ticket away cannot then return the order (`revoke_unused_sale`):
/// the return took the recipient's ticket, so a ticket could be passed on and the money
/// taken back. Refused, nothing written, while an offer only made (not accepted)
/// does not count; the operator's `revoke_sale` is never refused for it.
pub async fn a_buyers_revoke_is_refused_once_a_ticket_was_given_away(s: TicketStores) {
    use boxoffice_domain::OrderState;
    use boxoffice_engine::ports::LedgerError;

    let (e, o, rows) = sold(&s, 2).await;
    let bob = BuyerId::random();
    let offer = offer_of(&rows[0], bob);
    assert_eq!(s.tickets.offer_transfer(&offer).await.unwrap(), Ok(()));
    let done = s.tickets.accept_transfer(&accept_of(&offer, bob, 2)).await;
    done.unwrap().expect("accepted");
    let refused = s.ledger.revoke_unused_sale(o.id, NOW.plus_secs(2)).await;
    assert_eq!(refused, Err(LedgerError::GivenAway));
    let unchanged = s.ledger.order(o.id).await.unwrap().unwrap();
    assert_eq!(unchanged.state, OrderState::Confirmed);
    assert_eq!(s.ledger.sold_seats(e.id).await.unwrap().len(), 2);
    let held = s.tickets.tickets_of_holder(bob).await.unwrap();
    assert_eq!(held.len(), 1, "the recipient keeps the ticket");
    let revoked = s.ledger.revoke_sale(o.id, NOW.plus_secs(3)).await;
    assert_eq!(revoked.unwrap().state, OrderState::Refunding);

    // An offer not accepted gives nothing away: the order is returned as before.
    let (_, offered, rows) = sold(&s, 1).await;
    let pending = offer_of(&rows[0], BuyerId::random());
    assert_eq!(s.tickets.offer_transfer(&pending).await.unwrap(), Ok(()));
    let claimed = s
        .ledger
        .revoke_unused_sale(offered.id, NOW.plus_secs(2))
        .await;
    assert_eq!(claimed.unwrap().state, OrderState::Refunding);
}

pub async fn a_refused_or_withdrawn_transfer_moves_nothing(s: TicketStores) {
    // Two buyers of two tickets each, at the event's limit of two.
    let e = event(&s.ledger, 5, 2).await;
    let o = captured(&s.ledger, &e, BuyerId::random(), &[0, 1], 2).await;
    let carol = BuyerId::random();
    captured(&s.ledger, &e, carol, &[2, 3], 2).await;
    let rows = rows_of(&o);
    s.tickets.insert_tickets(&rows).await.unwrap();
    let offer = offer_of(&rows[0], carol);
    s.tickets.offer_transfer(&offer).await.unwrap().unwrap();
    let over = s
        .tickets
        .accept_transfer(&accept_of(&offer, carol, 2))
        .await;
    assert_eq!(over.unwrap(), Err(TransferRefusal::LimitExceeded));
    let facts = s.tickets.ticket(rows[0].id).await.unwrap().unwrap();
    assert_eq!((facts.ticket.holder, facts.ticket.version), (o.buyer, 1));
    assert_eq!(
        s.tickets.transfer(offer.id).await.unwrap().unwrap().state,
        TransferState::Offered,
        "the offer stays open"
    );
    audit_is_clean(&s, &e).await;
    // The holder withdraws it; it cannot be accepted or withdrawn again.
    let wrong = s
        .tickets
        .cancel_transfer(offer.id, carol, NOW)
        .await
        .unwrap();
    assert_eq!(wrong, Err(TransferRefusal::NotFound), "only its sender");
    let ended = s.tickets.cancel_transfer(offer.id, o.buyer, NOW).await;
    assert_eq!(ended.unwrap().unwrap().state, TransferState::Cancelled);
    let twice = s.tickets.cancel_transfer(offer.id, o.buyer, NOW).await;
    assert_eq!(
        twice.unwrap(),
        Err(TransferRefusal::Ended(TransferState::Cancelled))
    );
    let late = s
        .tickets
        .accept_transfer(&accept_of(&offer, carol, 3))
        .await;
    assert_eq!(
        late.unwrap(),
        Err(TransferRefusal::Ended(TransferState::Cancelled))
    );
    // A lapsed offer cannot be accepted, and does not block a new one.
    let dave = BuyerId::random();
    let mut short = offer_of(&rows[1], dave);
    short.expires_at = NOW;
    s.tickets.offer_transfer(&short).await.unwrap().unwrap();
    let lapsed = s.tickets.accept_transfer(&accept_of(&short, dave, 2)).await;
    assert_eq!(
        lapsed.unwrap(),
        Err(TransferRefusal::Ended(TransferState::Expired))
    );
    let mut next = offer_of(&rows[1], dave);
    next.created_at = NOW.plus_secs(2);
    assert_eq!(s.tickets.offer_transfer(&next).await.unwrap(), Ok(()));
    let closed = s.tickets.transfer(short.id).await.unwrap().unwrap();
    assert_eq!(closed.state, TransferState::Expired);
    // A scanned ticket does not move, nor one whose order was refunded.
    let g = gate(&s, &e, "Main").await;
    let scan = ScanAttempt {
        ticket: rows[0].id,
        version: 1,
        gate: g.id,
        at: DOORS,
        offline: false,
    };
    s.tickets.check_in(&scan).await.unwrap();
    let scanned = s.tickets.offer_transfer(&offer_of(&rows[0], dave)).await;
    assert_eq!(scanned.unwrap(), Err(TransferRefusal::CheckedIn));
    s.ledger
        .revoke_sale(o.id, NOW)
        .await
        .expect("refund the order");
    let refunded = s.tickets.accept_transfer(&accept_of(&next, dave, 2)).await;
    assert!(
        matches!(refunded.unwrap(), Err(TransferRefusal::NotPaid(_))),
        "a refunded order's ticket stays put"
    );
    let facts = s.tickets.ticket(rows[1].id).await.unwrap().unwrap();
    assert_eq!((facts.ticket.holder, facts.ticket.version), (o.buyer, 1));
    audit_is_clean(&s, &e).await;
}

const TICKETS: usize = 8;
/// Contenders per ticket in each round.
const RACERS: usize = 8;

/// Round one: `RACERS` offers of each of K tickets, to as many recipients, at once;
/// exactly one opens per ticket. Round two: for each open offer, its recipient's
/// accepts and its holder's cancels at once (half each); exactly one ends it. The
/// accepted tickets (and only they) moved, and the counts followed.
pub async fn n_offers_and_accepts_racing_over_k_tickets_one_wins_each(s: TicketStores) {
    let (e, o, rows) = sold(&s, TICKETS as u32).await;
    let offers: Vec<TransferOffer> = (0..RACERS)
        .flat_map(|_| rows.iter().map(|r| offer_of(r, BuyerId::random())))
        .collect();
    let racing: FuturesUnordered<_> = offers
        .iter()
        .cloned()
        .map(|offer| {
            let tickets = s.tickets.clone();
            tokio::spawn(async move { (tickets.offer_transfer(&offer).await, offer) })
        })
        .collect();
    let mut open = Vec::new();
    for joined in racing.collect::<Vec<_>>().await {
        let (answer, offer) = joined.expect("the offer task ran");
        match answer.expect("the store answered") {
            Ok(()) => open.push(offer),
            Err(TransferRefusal::AlreadyOffered) => {}
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    assert_eq!(open.len(), TICKETS, "as many offers opened as tickets");
    let distinct: std::collections::HashSet<_> = open.iter().map(|o| o.ticket).collect();
    assert_eq!(distinct.len(), TICKETS, "one open offer per ticket");
    let contenders: FuturesUnordered<_> = (0..RACERS)
        .flat_map(|n| open.iter().map(move |offer| (n, offer.clone())))
        .map(|(n, offer)| {
            let tickets = s.tickets.clone();
            tokio::spawn(async move {
                let won = if n % 2 == 0 {
                    let a = accept_of(&offer, offer.to, TICKETS as u32);
                    tickets
                        .accept_transfer(&a)
                        .await
                        .expect("answered")
                        .map(|_| true)
                } else {
                    (tickets.cancel_transfer(offer.id, offer.from, NOW).await)
                        .expect("answered")
                        .map(|_| false)
                };
                (offer, won)
            })
        })
        .collect();
    let mut winners: std::collections::HashMap<_, Vec<bool>> = Default::default();
    for joined in contenders.collect::<Vec<_>>().await {
        let (offer, won) = joined.expect("the contender ran");
        match won {
            Ok(accepted) => winners.entry(offer.ticket).or_default().push(accepted),
            Err(TransferRefusal::Ended(_)) => {}
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    assert_eq!(winners.len(), TICKETS);
    assert!(
        winners.values().all(|w| w.len() == 1),
        "exactly one winner each"
    );
    for offer in &open {
        let accepted = winners[&offer.ticket][0];
        let t = s
            .tickets
            .ticket(offer.ticket)
            .await
            .unwrap()
            .unwrap()
            .ticket;
        let (holder, version) = if accepted {
            (offer.to, 2)
        } else {
            (o.buyer, 1)
        };
        assert_eq!((t.holder, t.version), (holder, version));
        let state = s.tickets.transfer(offer.id).await.unwrap().unwrap().state;
        let want = if accepted {
            TransferState::Accepted
        } else {
            TransferState::Cancelled
        };
        assert_eq!(state, want);
    }
    audit_is_clean(&s, &e).await;
}
