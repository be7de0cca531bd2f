//! Cases: one swap at a time. A finished swap moves the ticket, its sold seat and both
//! counts once and supersedes the old barcode; every refusal writes nothing; a ticket
//! that can no longer move sends the swap to `refunding`.

use boxoffice_domain::exchange::{ListingState, SwapState};
use boxoffice_domain::{BuyerId, Event, Millis};
use boxoffice_engine::ports::{
    CheckIn, Listing, ListingRefusal, Moved, Order, Reserve, ScanAttempt,
};

use super::{ExchangeStores, NOW, audit_is_clean, finish, listing_of, reserve_of, sold};
use crate::ledger::fixtures::{captured, event};
use crate::tickets::{DOORS, TicketStores, gate, rows_of};

pub async fn a_finished_swap_moves_the_ticket_its_seat_and_both_counts_once(s: ExchangeStores) {
    let (e, o, rows) = sold(&s, 2).await;
    let l = listing_of(&rows[0]);
    assert_eq!(s.exchange.list(&l).await.unwrap(), Ok(()));
    let twice = s.exchange.list(&listing_of(&rows[0])).await.unwrap();
    assert_eq!(twice, Err(ListingRefusal::AlreadyListed));
    let open = s.exchange.open_listings(e.id, None, 10).await.unwrap();
    assert_eq!(open.iter().map(|x| x.id).collect::<Vec<_>>(), vec![l.id]);
    let own = s.exchange.reserve(&reserve_of(&l, &o, o.buyer, 2)).await;
    assert_eq!(own.unwrap(), Err(ListingRefusal::OwnListing));
    let bob = BuyerId::random();
    let r = reserve_of(&l, &o, bob, 2);
    assert_eq!(s.exchange.reserve(&r).await.unwrap(), Ok(()));
    let late = s
        .exchange
        .reserve(&reserve_of(&l, &o, BuyerId::random(), 2))
        .await;
    assert_eq!(
        late.unwrap(),
        Err(ListingRefusal::NotOpen(ListingState::Reserved))
    );
    assert!(
        s.exchange
            .open_listings(e.id, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let ticket = finish(&s, r.swap.id, 2).await;
    assert_eq!((ticket.holder, ticket.version), (bob, 2));
    assert_eq!(ticket.issued_at, NOW.plus_secs(2), "a new barcode");
    // Every step repeated is a no-op.
    let again = s
        .exchange
        .move_ticket(r.swap.id, 2, NOW.plus_secs(3))
        .await
        .unwrap();
    assert_eq!(again, Moved::NotCharged(SwapState::Done));
    let x = s
        .exchange
        .advance(r.swap.id, SwapState::Moved, SwapState::Done, None, NOW);
    assert!(!x.await.unwrap());
    let swap = s.exchange.swap(r.swap.id).await.unwrap().unwrap();
    assert_eq!(
        (swap.state, swap.charge_ref.as_deref()),
        (SwapState::Done, Some("ref"))
    );
    let listing = s.exchange.listing(l.id).await.unwrap().unwrap();
    assert_eq!(listing.state, ListingState::Sold);
    let mut seats = s.ledger.sold_seats(e.id).await.unwrap();
    seats.sort();
    let mut want = vec![
        (rows[0].seat.as_str().to_owned(), bob),
        (rows[1].seat.as_str().to_owned(), o.buyer),
    ];
    want.sort();
    assert_eq!(seats, want);
    audit_is_clean(&s, &e).await;
    let charges = s.exchange.swap_charges().await.unwrap();
    assert!(charges.contains(&(r.swap.charge, SwapState::Done)));
    // The old version is refused at the door; the new one admits.
    let ts = TicketStores {
        ledger: s.ledger.clone(),
        tickets: s.tickets.clone(),
    };
    let g = gate(&ts, &e, "Main").await;
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
}

pub async fn refused_listings_and_reservations_write_nothing(s: ExchangeStores) {
    let (e, o, rows) = sold(&s, 3).await;
    let ts = TicketStores {
        ledger: s.ledger.clone(),
        tickets: s.tickets.clone(),
    };
    // Not the holder's at that version, or not the holder at all.
    let mut stale = listing_of(&rows[0]);
    stale.version = 2;
    assert_eq!(
        s.exchange.list(&stale).await.unwrap(),
        Err(ListingRefusal::Superseded)
    );
    let mut stranger = listing_of(&rows[0]);
    stranger.seller = BuyerId::random();
    assert_eq!(
        s.exchange.list(&stranger).await.unwrap(),
        Err(ListingRefusal::Superseded)
    );
    // A scanned ticket cannot be listed.
    let g = gate(&ts, &e, "Main").await;
    let scan = ScanAttempt {
        ticket: rows[2].id,
        version: 1,
        gate: g.id,
        at: DOORS,
        offline: false,
    };
    s.tickets.check_in(&scan).await.unwrap();
    let scanned = s.exchange.list(&listing_of(&rows[2])).await.unwrap();
    assert_eq!(scanned, Err(ListingRefusal::CheckedIn));
    // Withdrawal: only by the seller, only while open.
    let l = listing_of(&rows[0]);
    s.exchange.list(&l).await.unwrap().unwrap();
    let wrong = s
        .exchange
        .withdraw(l.id, BuyerId::random(), NOW)
        .await
        .unwrap();
    assert_eq!(wrong, Err(ListingRefusal::NotFound));
    let ended = s
        .exchange
        .withdraw(l.id, o.buyer, NOW)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ended.state, ListingState::Withdrawn);
    let twice = s.exchange.withdraw(l.id, o.buyer, NOW).await.unwrap();
    assert_eq!(twice, Err(ListingRefusal::NotOpen(ListingState::Withdrawn)));
    let gone = s
        .exchange
        .reserve(&reserve_of(&l, &o, BuyerId::random(), 3))
        .await;
    assert_eq!(
        gone.unwrap(),
        Err(ListingRefusal::NotOpen(ListingState::Withdrawn))
    );
    // A buyer's swaps in flight count toward the limit: with a limit of one, a second
    // reservation is refused.
    let again = listing_of(&rows[0]);
    s.exchange.list(&again).await.unwrap().unwrap();
    let other = listing_of(&rows[1]);
    let unknown = s
        .exchange
        .reserve(&reserve_of(&other, &o, BuyerId::random(), 3))
        .await;
    assert_eq!(
        unknown.unwrap(),
        Err(ListingRefusal::NotFound),
        "not listed yet"
    );
    s.exchange.list(&other).await.unwrap().unwrap();
    let dave = BuyerId::random();
    s.exchange
        .reserve(&reserve_of(&again, &o, dave, 1))
        .await
        .unwrap()
        .unwrap();
    let limited = s.exchange.reserve(&reserve_of(&other, &o, dave, 1)).await;
    assert_eq!(limited.unwrap(), Err(ListingRefusal::LimitExceeded));
    let open = s.exchange.open_listings(e.id, None, 10).await.unwrap();
    assert_eq!(
        open.iter().map(|x| x.id).collect::<Vec<_>>(),
        vec![other.id]
    );
    // A refunded order's tickets cannot be listed.
    s.ledger
        .revoke_sale(o.id, NOW)
        .await
        .expect("refund the order");
    let refunded = s.exchange.list(&listing_of(&rows[1])).await.unwrap();
    assert!(
        matches!(refunded, Err(ListingRefusal::NotPaid(_))),
        "{refunded:?}"
    );
    let t = s.tickets.ticket(rows[0].id).await.unwrap().unwrap().ticket;
    assert_eq!((t.holder, t.version), (o.buyer, 1), "nothing moved");
    let open = s.exchange.open_listings(e.id, None, 10).await.unwrap();
    assert!(open.is_empty(), "a refunded order's listings are not shown");
    audit_is_clean(&s, &e).await;
}

pub async fn a_swap_that_cannot_move_its_ticket_goes_to_refunding_and_undone_reopens(
    s: ExchangeStores,
) {
    let (e, o, rows) = sold(&s, 2).await;
    let ts = TicketStores {
        ledger: s.ledger.clone(),
        tickets: s.tickets.clone(),
    };
    // Undone before any charge: the listing is open again.
    let l = listing_of(&rows[0]);
    s.exchange.list(&l).await.unwrap().unwrap();
    let r = reserve_of(&l, &o, BuyerId::random(), 2);
    s.exchange.reserve(&r).await.unwrap().unwrap();
    let x = &s.exchange;
    assert!(
        x.advance(r.swap.id, SwapState::Reserved, SwapState::Undone, None, NOW)
            .await
            .unwrap()
    );
    assert!(
        !x.advance(
            r.swap.id,
            SwapState::Reserved,
            SwapState::Charged,
            None,
            NOW
        )
        .await
        .unwrap()
    );
    assert_eq!(
        x.listing(l.id).await.unwrap().unwrap().state,
        ListingState::Open
    );
    assert!(
        x.advance(r.swap.id, SwapState::Undone, SwapState::Done, None, NOW)
            .await
            .is_err()
    );
    // Charged, then the ticket is scanned: it stays, the swap owes the buyer a refund.
    let r = reserve_of(&l, &o, BuyerId::random(), 2);
    x.reserve(&r).await.unwrap().unwrap();
    assert!(
        x.advance(
            r.swap.id,
            SwapState::Reserved,
            SwapState::Charged,
            Some("c"),
            NOW
        )
        .await
        .unwrap()
    );
    let g = gate(&ts, &e, "Main").await;
    let scan = ScanAttempt {
        ticket: rows[0].id,
        version: 1,
        gate: g.id,
        at: DOORS,
        offline: false,
    };
    s.tickets.check_in(&scan).await.unwrap();
    let moved = x.move_ticket(r.swap.id, 2, NOW).await.unwrap();
    assert_eq!(moved, Moved::Refused(ListingRefusal::CheckedIn));
    let swap = x.swap(r.swap.id).await.unwrap().unwrap();
    assert_eq!(swap.state, SwapState::Refunding);
    assert_eq!(
        x.listing(l.id).await.unwrap().unwrap().state,
        ListingState::Withdrawn
    );
    let t = s.tickets.ticket(rows[0].id).await.unwrap().unwrap().ticket;
    assert_eq!((t.holder, t.version), (o.buyer, 1));
    let unfinished = x.unfinished_swaps(NOW.plus_secs(60), 100).await.unwrap();
    assert!(unfinished.iter().any(|u| u.id == r.swap.id));
    assert!(
        x.advance(
            r.swap.id,
            SwapState::Refunding,
            SwapState::Undone,
            None,
            NOW
        )
        .await
        .unwrap()
    );
    let unfinished = x.unfinished_swaps(NOW.plus_secs(60), 100).await.unwrap();
    assert!(!unfinished.iter().any(|u| u.id == r.swap.id));
    // A buyer who reached the limit since reserving gets a refund, not the ticket.
    let e2 = event(&s.ledger, 3, 1).await;
    let seller = captured(&s.ledger, &e2, BuyerId::random(), &[0], 1).await;
    let srows = rows_of(&seller);
    s.tickets.insert_tickets(&srows).await.unwrap();
    let l2 = listing_of(&srows[0]);
    x.list(&l2).await.unwrap().unwrap();
    let carol = BuyerId::random();
    let r2 = reserve_of(&l2, &seller, carol, 1);
    x.reserve(&r2).await.unwrap().unwrap();
    captured(&s.ledger, &e2, carol, &[1], 1).await;
    assert!(
        x.advance(
            r2.swap.id,
            SwapState::Reserved,
            SwapState::Charged,
            Some("c"),
            NOW
        )
        .await
        .unwrap()
    );
    let over = x.move_ticket(r2.swap.id, 1, NOW).await.unwrap();
    assert_eq!(over, Moved::Refused(ListingRefusal::LimitExceeded));
    assert_eq!(
        x.listing(l2.id).await.unwrap().unwrap().state,
        ListingState::Open
    );
    audit_is_clean(&s, &e).await;
    audit_is_clean(&s, &e2).await;
}

/// A swap whose payment waits for the buyer (3-D Secure) stays `reserved` with its
/// charge's reference recorded, the listing kept for it; the provider's webhook finds
/// it by its charge; declined at the bank, it ends `undone` and the listing reopens.
pub async fn a_swap_waiting_for_the_buyer_is_found_by_its_charge_and_undone_reopens(
    s: ExchangeStores,
) {
    let (e, o, rows) = sold(&s, 1).await;
    let l = listing_of(&rows[0]);
    assert_eq!(s.exchange.list(&l).await.unwrap(), Ok(()));
    let r = reserve_of(&l, &o, BuyerId::random(), 2);
    assert_eq!(s.exchange.reserve(&r).await.unwrap(), Ok(()));
    let by_charge = s.exchange.swap_by_charge(r.swap.charge).await.unwrap();
    assert_eq!(by_charge.map(|w| w.id), Some(r.swap.id));
    let waits = s.exchange.advance(
        r.swap.id,
        SwapState::Reserved,
        SwapState::Reserved,
        Some("pi_3ds"),
        NOW.plus_secs(1),
    );
    assert!(waits.await.unwrap());
    let found = s.exchange.swap_by_charge(r.swap.charge).await.unwrap();
    let found = found.expect("the swap, by its charge");
    assert_eq!(found.id, r.swap.id);
    assert_eq!(
        (found.state, found.charge_ref.as_deref(), found.updated_at),
        (SwapState::Reserved, Some("pi_3ds"), NOW.plus_secs(1))
    );
    let other = s
        .exchange
        .swap_by_charge(boxoffice_domain::OrderId::random());
    assert_eq!(other.await.unwrap(), None);
    let listing = s.exchange.listing(l.id).await.unwrap().unwrap();
    assert_eq!(listing.state, ListingState::Reserved, "kept for the buyer");
    assert!(
        s.exchange
            .open_listings(e.id, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let undone = s.exchange.advance(
        r.swap.id,
        SwapState::Reserved,
        SwapState::Undone,
        None,
        NOW.plus_secs(2),
    );
    assert!(undone.await.unwrap());
    let open = s.exchange.open_listings(e.id, None, 10).await.unwrap();
    assert_eq!(open.iter().map(|x| x.id).collect::<Vec<_>>(), vec![l.id]);
    let swap = s.exchange.swap(r.swap.id).await.unwrap().unwrap();
    assert_eq!(swap.state, SwapState::Undone);
    audit_is_clean(&s, &e).await;
}

/// A ticket sold on through the exchange stands apart from its order, and its order's
/// payment, which pays a seller back, paid out for it once. Handed back to its first
/// buyer (a transfer), it was listed again: the second sale's payout came out of the
/// same payment again (refused by the provider past its capture, the swap left stuck),
/// so it is refused, and the refusal writes nothing.
pub async fn a_ticket_sold_on_once_is_not_listed_again(s: ExchangeStores) {
    use boxoffice_domain::TransferId;
    use boxoffice_domain::transfers::TransferState;
    use boxoffice_engine::ports::{Accept, TransferOffer};

    let (e, o, rows) = sold(&s, 2).await;
    let l = listing_of(&rows[0]);
    assert_eq!(s.exchange.list(&l).await.unwrap(), Ok(()));
    let bob = BuyerId::random();
    let r = reserve_of(&l, &o, bob, 2);
    assert_eq!(s.exchange.reserve(&r).await.unwrap(), Ok(()));
    let ticket = finish(&s, r.swap.id, 2).await;
    // Bob gives it back to its first buyer.
    let offer = TransferOffer {
        id: TransferId::random(),
        ticket: ticket.id,
        event: ticket.event,
        from: bob,
        to: o.buyer,
        version: ticket.version,
        state: TransferState::Offered,
        created_at: NOW.plus_secs(10),
        expires_at: NOW.plus_secs(600),
        ended_at: None,
    };
    assert_eq!(s.tickets.offer_transfer(&offer).await.unwrap(), Ok(()));
    let accept = Accept {
        transfer: offer.id,
        by: o.buyer,
        max_per_buyer: 2,
        now: NOW.plus_secs(11),
    };
    let back = s.tickets.accept_transfer(&accept).await.unwrap();
    let back = back.expect("accepted").ticket;
    assert_eq!(back.holder, o.buyer);
    let mut again = listing_of(&back);
    again.created_at = NOW.plus_secs(12);
    assert_eq!(
        s.exchange.list(&again).await.unwrap(),
        Err(ListingRefusal::SoldOn)
    );
    assert_eq!(s.exchange.listing(again.id).await.unwrap(), None);
    let open = s.exchange.open_listings(e.id, None, 10).await.unwrap();
    assert!(open.is_empty(), "nothing listed: {open:?}");
    // Its order's other ticket, never sold on, lists as before.
    assert_eq!(
        s.exchange.list(&listing_of(&rows[1])).await.unwrap(),
        Ok(())
    );
}

/// A charged swap whose ticket cannot move because its buyer reached the event's limit
/// meanwhile goes to `refunding`, and its listing opens again in the same step. The
/// refunding swap still counted as the listing's one live swap, so every other buyer's
/// reservation of it failed (a store error) until the refund was through; it now
/// reserves, and the refunding swap ends as before.
pub async fn a_listing_reopened_by_a_refused_move_can_be_reserved_while_its_swap_refunds(
    s: ExchangeStores,
) {
    let (_, o, l, first) = listed_and_reserved(&s).await;
    let x = &s.exchange;
    let at = NOW.plus_secs(2);
    let charged = x.advance(
        first.swap.id,
        SwapState::Reserved,
        SwapState::Charged,
        Some("ref"),
        at,
    );
    assert!(charged.await.unwrap());
    // The limit is reached by then (0 here): the ticket stays, the listing reopens.
    let moved = x.move_ticket(first.swap.id, 0, at).await.unwrap();
    assert_eq!(moved, Moved::Refused(ListingRefusal::LimitExceeded));
    let refunding = x.swap(first.swap.id).await.unwrap().unwrap();
    assert_eq!(refunding.state, SwapState::Refunding);
    assert_eq!(
        x.listing(l.id).await.unwrap().unwrap().state,
        ListingState::Open
    );
    let second = reserve_of(&l, &o, BuyerId::random(), 2);
    assert_eq!(x.reserve(&second).await.unwrap(), Ok(()));
    let third = x.reserve(&reserve_of(&l, &o, BuyerId::random(), 2)).await;
    assert_eq!(
        third.unwrap(),
        Err(ListingRefusal::NotOpen(ListingState::Reserved))
    );
    let undone = x.advance(
        first.swap.id,
        SwapState::Refunding,
        SwapState::Undone,
        None,
        at,
    );
    assert!(undone.await.unwrap());
    let ticket = finish(&s, second.swap.id, 2).await;
    assert_eq!(ticket.holder, second.swap.buyer);
}

/// A swap undone by a driver that found the provider silent, whose charge was then
/// captured by the buyer's own driver: it goes back to `refunding` (recording the
/// charge's reference) so its refund is retried until made. The listing it let go
/// stays as its next buyer left it, and the move is made once of two tries.
pub async fn an_undone_swap_whose_charge_was_captured_goes_back_to_refunding_its_listing_left_alone(
    s: ExchangeStores,
) {
    let (e, o, l, first) = listed_and_reserved(&s).await;
    let x = &s.exchange;
    let at = NOW.plus_secs(2);
    let undone = x.advance(
        first.swap.id,
        SwapState::Reserved,
        SwapState::Undone,
        None,
        at,
    );
    assert!(undone.await.unwrap());
    let second = reserve_of(&l, &o, BuyerId::random(), 2);
    assert_eq!(x.reserve(&second).await.unwrap(), Ok(()));
    let (from, to) = (SwapState::Undone, SwapState::Refunding);
    let back = |when| x.advance(first.swap.id, from, to, Some("pi_late"), when);
    assert!(back(at.plus_secs(1)).await.unwrap());
    assert!(!back(at.plus_secs(2)).await.unwrap(), "moved once");
    let refunding = x.swap(first.swap.id).await.unwrap().unwrap();
    assert_eq!(
        (refunding.state, refunding.charge_ref.as_deref()),
        (SwapState::Refunding, Some("pi_late"))
    );
    // The sweep finds it (the store may hold other cases' swaps).
    let unfinished = x.unfinished_swaps(Millis(i64::MAX), 1_000).await.unwrap();
    let found = unfinished.iter().find(|w| w.id == first.swap.id);
    assert_eq!(found.map(|w| w.state), Some(SwapState::Refunding));
    let listing = x.listing(l.id).await.unwrap().unwrap();
    assert_eq!(
        listing.state,
        ListingState::Reserved,
        "still the next buyer's"
    );
    let refunded = x.advance(
        first.swap.id,
        SwapState::Refunding,
        SwapState::Undone,
        None,
        at.plus_secs(3),
    );
    assert!(refunded.await.unwrap());
    assert_eq!(
        x.listing(l.id).await.unwrap().unwrap().state,
        ListingState::Reserved
    );
    let ticket = finish(&s, second.swap.id, 2).await;
    assert_eq!(ticket.holder, second.swap.buyer);
    audit_is_clean(&s, &e).await;
}

/// Two tickets sold, the first listed and reserved by a new buyer: the event, the
/// order, the listing and the reservation.
async fn listed_and_reserved(s: &ExchangeStores) -> (Event, Order, Listing, Reserve) {
    let (e, o, rows) = sold(s, 2).await;
    let l = listing_of(&rows[0]);
    s.exchange.list(&l).await.unwrap().unwrap();
    let first = reserve_of(&l, &o, BuyerId::random(), 2);
    s.exchange.reserve(&first).await.unwrap().unwrap();
    (e, o, l, first)
}
