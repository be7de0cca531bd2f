//! Cases: what the after-sale record keeps — keys, the rotating-code setting, tickets
//! and gates — each written once and read back as written.

use boxoffice_domain::ticket::KeyId;
use boxoffice_domain::{BuyerId, GateId, OrderState, Secret};
use boxoffice_engine::ports::{Gate, StoredKey};

use super::{TicketStores, confirmed_order, gate, random_digest, rows_of};
use crate::ledger::fixtures::{T0, event};

pub async fn keys_are_added_once_per_number_and_retired_keys_stop_verifying(s: TicketStores) {
    let e = event(&s.ledger, 2, 2).await;
    assert!(s.tickets.keys(e.id).await.unwrap().is_empty());
    let key = |kid, seed| StoredKey {
        kid: KeyId(kid),
        seed: Secret::new([seed; 32]),
        created_at: T0,
    };
    assert!(s.tickets.add_key(e.id, &key(1, 1)).await.unwrap());
    assert!(
        !s.tickets.add_key(e.id, &key(1, 2)).await.unwrap(),
        "a second key 1 is refused"
    );
    assert!(s.tickets.add_key(e.id, &key(2, 3)).await.unwrap());
    let keys = s.tickets.keys(e.id).await.unwrap();
    assert_eq!(keys, vec![key(1, 1), key(2, 3)], "oldest first, seeds kept");
    assert!(s.tickets.retire_key(e.id, KeyId(1), T0).await.unwrap());
    assert!(
        !s.tickets.retire_key(e.id, KeyId(1), T0).await.unwrap(),
        "retired once"
    );
    assert!(!s.tickets.retire_key(e.id, KeyId(9), T0).await.unwrap());
    assert_eq!(s.tickets.keys(e.id).await.unwrap(), vec![key(2, 3)]);
    let other = event(&s.ledger, 2, 2).await;
    assert!(s.tickets.keys(other.id).await.unwrap().is_empty());
}

pub async fn the_rotation_secret_is_drawn_once_and_kept_across_switches(s: TicketStores) {
    let e = event(&s.ledger, 2, 2).await;
    assert_eq!(s.tickets.barcode_setting(e.id).await.unwrap(), None);
    let on = s.tickets.set_rotating(e.id, true, [7; 32]).await.unwrap();
    assert!(on.rotating);
    assert_eq!(*on.rotation_secret.expose(), [7; 32]);
    let off = s.tickets.set_rotating(e.id, false, [8; 32]).await.unwrap();
    assert!(!off.rotating);
    assert_eq!(
        *off.rotation_secret.expose(),
        [7; 32],
        "the first secret is kept"
    );
    let again = s.tickets.set_rotating(e.id, true, [9; 32]).await.unwrap();
    assert_eq!(*again.rotation_secret.expose(), [7; 32]);
    assert_eq!(s.tickets.barcode_setting(e.id).await.unwrap(), Some(again));
}

pub async fn tickets_are_written_at_capture_once_and_read_back_with_their_orders_state(
    s: TicketStores,
) {
    let (e, o) = confirmed_order(&s, 3).await;
    let rows = rows_of(&o);
    let mut written = s.tickets.tickets_of_order(o.id).await.unwrap();
    written.sort_by(|a, b| a.seat.as_str().cmp(b.seat.as_str()));
    let mut want = rows.clone();
    want.sort_by(|a, b| a.seat.as_str().cmp(b.seat.as_str()));
    assert_eq!(written, want, "the capture wrote the tickets");
    s.tickets.insert_tickets(&rows).await.unwrap();
    // Written again with another holder, as a racing request might: nothing changes.
    let mut again = rows.clone();
    again[0].holder = BuyerId::random();
    again[0].version = 5;
    s.tickets.insert_tickets(&again).await.unwrap();
    let mut of_order = s.tickets.tickets_of_order(o.id).await.unwrap();
    of_order.sort_by(|a, b| a.seat.as_str().cmp(b.seat.as_str()));
    let mut expected = rows.clone();
    expected.sort_by(|a, b| a.seat.as_str().cmp(b.seat.as_str()));
    assert_eq!(of_order, expected);
    let one = s
        .tickets
        .ticket(rows[0].id)
        .await
        .unwrap()
        .expect("a ticket");
    assert_eq!(
        (one.ticket.clone(), one.order_state, one.checked_in),
        (rows[0].clone(), OrderState::Confirmed, None)
    );
    let held = s.tickets.tickets_of_holder(o.buyer).await.unwrap();
    assert_eq!(held.len(), 3);
    assert!(held.iter().all(|f| f.ticket.holder == o.buyer));
    assert_eq!(s.tickets.tickets_of_event(e.id).await.unwrap().len(), 3);
    let stranger = s.tickets.tickets_of_holder(BuyerId::random()).await;
    assert!(stranger.unwrap().is_empty());
    let unknown = boxoffice_domain::ticket::TicketId(uuid::Uuid::new_v4());
    assert_eq!(s.tickets.ticket(unknown).await.unwrap(), None);
}

pub async fn gates_are_created_once_per_key_found_by_digest_and_revoked(s: TicketStores) {
    let e = event(&s.ledger, 2, 2).await;
    let first = gate(&s, &e, "North 1").await;
    let (d2, d3) = (random_digest(), random_digest());
    let second = Gate {
        id: GateId::random(),
        digest: d2,
        ..first.clone()
    };
    let key = "create-north-2";
    assert_eq!(s.tickets.add_gate(&second, key).await.unwrap(), None);
    let retry = Gate {
        id: GateId::random(),
        digest: d3,
        ..second.clone()
    };
    assert_eq!(
        s.tickets.add_gate(&retry, key).await.unwrap(),
        Some(second.clone()),
        "the same key returns the first gate"
    );
    assert_eq!(s.tickets.gate_by_digest(&d3).await.unwrap(), None);
    assert_eq!(
        s.tickets.gate_by_digest(&d2).await.unwrap(),
        Some(second.clone())
    );
    assert_eq!(s.tickets.gate(first.id).await.unwrap(), Some(first.clone()));
    let revoked = s.tickets.revoke_gate(second.id).await.unwrap().unwrap();
    assert!(revoked.revoked);
    let again = s.tickets.revoke_gate(second.id).await.unwrap().unwrap();
    assert!(again.revoked, "revoking twice is harmless");
    assert!(
        s.tickets
            .revoke_gate(GateId::random())
            .await
            .unwrap()
            .is_none()
    );
    assert!(!s.tickets.gate(first.id).await.unwrap().unwrap().revoked);
}
