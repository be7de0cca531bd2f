//! Cases: the audit's facts on a ledger that only the port has written to. Seeding a
//! violation needs a backdoor the port does not offer, so those cases live in each
//! adapter's own tests.

use std::sync::Arc;

use boxoffice_domain::{BuyerId, OrderEvent, OrderState};
use boxoffice_engine::ports::{CommitOutcome, Ledger};

use super::fixtures::{T0, authorized, commit_of, event};

pub async fn a_clean_ledger_has_clean_audit_facts(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 10, 2).await;
    let buyer = BuyerId::random();
    let won = authorized(&ledger, &e, buyer, &[0, 1]).await;
    let lost = authorized(&ledger, &e, BuyerId::random(), &[1, 2]).await;
    let over = authorized(&ledger, &e, buyer, &[5]).await;
    assert_eq!(
        ledger.commit(&commit_of(&won, 2)).await.unwrap(),
        CommitOutcome::Committed
    );
    assert!(matches!(
        ledger.commit(&commit_of(&lost, 2)).await.unwrap(),
        CommitOutcome::SeatTaken { .. }
    ));
    assert_eq!(
        ledger.commit(&commit_of(&over, 2)).await.unwrap(),
        CommitOutcome::LimitExceeded
    );
    ledger
        .apply(lost.id, OrderEvent::CommitLost, None, T0.plus_secs(3))
        .await
        .unwrap();
    ledger
        .apply(won.id, OrderEvent::Captured, Some("cap_1"), T0.plus_secs(3))
        .await
        .unwrap();

    let facts = ledger.audit_facts().await.unwrap();
    let mine = facts
        .events
        .iter()
        .find(|f| f.event == e.id)
        .expect("the event is audited");
    assert_eq!((mine.capacity, mine.sold), (10, 2));
    assert!(mine.unknown_seats.is_empty());
    let ids = [won.id, lost.id, over.id];
    assert!(!facts.sold_without_order.iter().any(|(ev, _)| *ev == e.id));
    assert!(!facts.orders_missing_seats.iter().any(|o| ids.contains(o)));
    assert!(!facts.seats_of_unsold_orders.iter().any(|o| ids.contains(o)));
    assert!(!facts.buyers_over_limit.iter().any(|(ev, _, _)| *ev == e.id));
    let states: Vec<_> = facts
        .orders
        .iter()
        .filter(|(id, _, _)| ids.contains(id))
        .cloned()
        .collect();
    assert!(
        states.contains(&(won.id, OrderState::Confirmed, Some("cap_1".into()))),
        "{states:?}"
    );
    assert!(
        states.contains(&(lost.id, OrderState::Lost, Some(format!("auth_{}", lost.id)))),
        "{states:?}"
    );
    assert_eq!(states.len(), 3);
}
