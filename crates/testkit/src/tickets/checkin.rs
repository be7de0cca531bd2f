//! Cases: check-in. A ticket is admitted once; it admits only at its current version
//! and only while its order is confirmed (the validity is read from the order, so a
//! refund or a cancellation needs no call of its own); offline scans are reconciled
//! by scan time.

use boxoffice_domain::ticket::TicketId;
use boxoffice_domain::{BuyerId, Millis, OrderEvent, OrderState};
use boxoffice_engine::ports::{
    Accept, CheckIn, FirstScan, LedgerError, ScanAttempt, TransferOffer, TransferState,
};

use super::{DOORS, TicketStores, confirmed_order, gate, rows_of};
use crate::ledger::fixtures::{T0, authorized, commit_of, event};

fn attempt(ticket: TicketId, gate: &boxoffice_engine::ports::Gate, at: Millis) -> ScanAttempt {
    ScanAttempt {
        ticket,
        version: 1,
        gate: gate.id,
        at,
        offline: false,
    }
}

pub async fn a_ticket_is_admitted_once_and_a_second_scan_names_the_first(s: TicketStores) {
    let (e, o) = confirmed_order(&s, 2).await;
    let rows = rows_of(&o);
    s.tickets.insert_tickets(&rows).await.unwrap();
    let (north, south) = (gate(&s, &e, "North").await, gate(&s, &e, "South").await);
    let first = s
        .tickets
        .check_in(&attempt(rows[0].id, &north, DOORS))
        .await
        .unwrap();
    assert_eq!(first, CheckIn::Admitted { replaced: None });
    let expected = FirstScan {
        gate: north.id,
        gate_name: "North".into(),
        at: DOORS,
    };
    for g in [&south, &north] {
        let again = s
            .tickets
            .check_in(&attempt(rows[0].id, g, DOORS.plus_secs(5)))
            .await
            .unwrap();
        assert_eq!(again, CheckIn::AlreadyScanned(expected.clone()));
    }
    let facts = s.tickets.ticket(rows[0].id).await.unwrap().unwrap();
    assert_eq!(facts.checked_in, Some(expected));
    let other = s
        .tickets
        .check_in(&attempt(rows[1].id, &south, DOORS.plus_secs(6)))
        .await
        .unwrap();
    assert_eq!(
        other,
        CheckIn::Admitted { replaced: None },
        "its own ticket"
    );
}

pub async fn a_ticket_admits_only_while_its_order_is_confirmed(s: TicketStores) {
    // Committed, not captured: no money yet, no admit.
    let e = event(&s.ledger, 2, 2).await;
    let o = authorized(&s.ledger, &e, BuyerId::random(), &[0, 1]).await;
    s.ledger.commit(&commit_of(&o, 2)).await.unwrap();
    let rows = rows_of(&o);
    s.tickets.insert_tickets(&rows).await.unwrap();
    let g = gate(&s, &e, "Main").await;
    let scan = attempt(rows[0].id, &g, DOORS);
    let early = s.tickets.check_in(&scan).await.unwrap();
    assert_eq!(early, CheckIn::NotPaid(OrderState::Committed));
    // The capture fails, the sale is cancelled: still no admit, with no call to us.
    let at = T0.plus_secs(3);
    let ledger = &s.ledger;
    ledger
        .apply(o.id, OrderEvent::CaptureFailed, None, at)
        .await
        .unwrap();
    ledger.cancel_sale(o.id, at).await.unwrap();
    let cancelled = s.tickets.check_in(&scan).await.unwrap();
    assert_eq!(cancelled, CheckIn::NotPaid(OrderState::Cancelling));
    let facts = s.tickets.ticket(rows[0].id).await.unwrap().unwrap();
    assert_eq!(
        (facts.order_state, facts.checked_in),
        (OrderState::Cancelling, None)
    );
    // The same path to a confirmed order admits.
    let (e2, paid) = confirmed_order(&s, 1).await;
    let paid_rows = rows_of(&paid);
    s.tickets.insert_tickets(&paid_rows).await.unwrap();
    let g2 = gate(&s, &e2, "Main").await;
    let ok = s
        .tickets
        .check_in(&attempt(paid_rows[0].id, &g2, DOORS))
        .await
        .unwrap();
    assert_eq!(ok, CheckIn::Admitted { replaced: None });
}

/// A buyer's own revoke (`revoke_unused_sale`) is refused, writing nothing, once a
/// ticket of the order that they hold was admitted; before that it claims the order as
/// `revoke_sale` does, and the operator's `revoke_sale` is never refused for it.
pub async fn a_buyers_revoke_is_refused_once_a_ticket_they_hold_was_admitted(s: TicketStores) {
    let (e, used) = confirmed_order(&s, 2).await;
    let rows = rows_of(&used);
    s.tickets.insert_tickets(&rows).await.unwrap();
    let north = gate(&s, &e, "North").await;
    let admitted = s
        .tickets
        .check_in(&attempt(rows[1].id, &north, DOORS))
        .await
        .unwrap();
    assert_eq!(admitted, CheckIn::Admitted { replaced: None });
    let refused = s
        .ledger
        .revoke_unused_sale(used.id, DOORS.plus_secs(1))
        .await;
    assert_eq!(refused, Err(LedgerError::Used));
    let unchanged = s.ledger.order(used.id).await.unwrap().unwrap();
    assert_eq!(unchanged.state, OrderState::Confirmed);
    assert_eq!(s.ledger.sold_seats(e.id).await.unwrap().len(), 2);
    let revoked = s.ledger.revoke_sale(used.id, DOORS.plus_secs(2)).await;
    assert_eq!(revoked.unwrap().state, OrderState::Refunding);

    // An order none of whose tickets was used is claimed as `revoke_sale` claims it.
    let (_, unused) = confirmed_order(&s, 1).await;
    s.tickets.insert_tickets(&rows_of(&unused)).await.unwrap();
    let claimed = s.ledger.revoke_unused_sale(unused.id, DOORS).await;
    assert_eq!(claimed.unwrap().state, OrderState::Refunding);
}

pub async fn an_old_version_or_an_unknown_ticket_is_refused(s: TicketStores) {
    let (e, o) = confirmed_order(&s, 1).await;
    let rows = rows_of(&o);
    // Version 2, as a transfer makes it.
    let offer = TransferOffer {
        id: boxoffice_domain::TransferId::random(),
        ticket: rows[0].id,
        event: e.id,
        from: o.buyer,
        to: BuyerId::random(),
        version: 1,
        state: TransferState::Offered,
        created_at: T0.plus_secs(5),
        expires_at: DOORS,
        ended_at: None,
    };
    s.tickets.offer_transfer(&offer).await.unwrap().unwrap();
    let accept = Accept {
        transfer: offer.id,
        by: offer.to,
        max_per_buyer: 1,
        now: T0.plus_secs(6),
    };
    s.tickets.accept_transfer(&accept).await.unwrap().unwrap();
    let g = gate(&s, &e, "Main").await;
    let old = s
        .tickets
        .check_in(&attempt(rows[0].id, &g, DOORS))
        .await
        .unwrap();
    assert_eq!(old, CheckIn::OldVersion { current: 2 });
    let unknown = TicketId(uuid::Uuid::new_v4());
    let none = s
        .tickets
        .check_in(&attempt(unknown, &g, DOORS))
        .await
        .unwrap();
    assert_eq!(none, CheckIn::Unknown);
    let current = ScanAttempt {
        version: 2,
        ..attempt(rows[0].id, &g, DOORS)
    };
    let ok = s.tickets.check_in(&current).await.unwrap();
    assert_eq!(ok, CheckIn::Admitted { replaced: None });
}

pub async fn offline_scans_are_reconciled_earliest_first(s: TicketStores) {
    let (e, o) = confirmed_order(&s, 1).await;
    let rows = rows_of(&o);
    s.tickets.insert_tickets(&rows).await.unwrap();
    let (online, offline) = (gate(&s, &e, "Online").await, gate(&s, &e, "Offline").await);
    let later = attempt(rows[0].id, &online, DOORS.plus_secs(60));
    assert_eq!(
        s.tickets.check_in(&later).await.unwrap(),
        CheckIn::Admitted { replaced: None }
    );
    // Uploaded afterwards, made before: it is the first scan, and says whom it displaced.
    let earlier = ScanAttempt {
        offline: true,
        ..attempt(rows[0].id, &offline, DOORS)
    };
    let displaced = FirstScan {
        gate: online.id,
        gate_name: "Online".into(),
        at: DOORS.plus_secs(60),
    };
    assert_eq!(
        s.tickets.check_in(&earlier).await.unwrap(),
        CheckIn::Admitted {
            replaced: Some(displaced)
        }
    );
    let first = FirstScan {
        gate: offline.id,
        gate_name: "Offline".into(),
        at: DOORS,
    };
    // A later offline scan, and the same upload again, find the earliest.
    for at in [DOORS.plus_secs(30), DOORS] {
        let again = ScanAttempt {
            at,
            ..earlier.clone()
        };
        let outcome = s.tickets.check_in(&again).await.unwrap();
        assert_eq!(outcome, CheckIn::AlreadyScanned(first.clone()));
    }
    let facts = s.tickets.ticket(rows[0].id).await.unwrap().unwrap();
    assert_eq!(facts.checked_in, Some(first));
}
