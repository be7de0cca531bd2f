//! Cases: the recovery sweep's work list (idle, due orders of some states, paged from a
//! cursor) and its per-order schedule (the claim of an attempt and its count).

use std::sync::Arc;

use boxoffice_domain::{BuyerId, OrderEvent, OrderId, OrderState};
use boxoffice_engine::ports::{CommitOutcome, DueOrders, Ledger, Order};

use super::fixtures::{T0, authorized, commit_of, event, order};

/// Orders `mine` (inserted due at T0 + 0..4 s and moved at T0 + 10..40 s, the odd ones
/// authorized, the even ones declined), as the cases below read them.
async fn scheduled(ledger: &Arc<dyn Ledger>) -> Vec<Order> {
    let e = event(ledger, 10, 4).await;
    let mut mine = Vec::new();
    for i in 0..4u64 {
        let mut o = order(&e, BuyerId::random(), &[i as usize], T0);
        o.next_attempt_at = T0.plus_secs(i);
        ledger.insert_order(&o).await.unwrap();
        let event = if i % 2 == 0 {
            OrderEvent::Declined
        } else {
            OrderEvent::Authorized
        };
        let at = T0.plus_secs(10 * (i + 1));
        mine.push(ledger.apply(o.id, event, None, at).await.unwrap());
    }
    mine
}

fn due(states: &[OrderState], idle_since: u64, due_at_ms: i64, limit: usize) -> DueOrders<'_> {
    DueOrders {
        states,
        idle_since: T0.plus_secs(idle_since),
        due_at: T0.plus_millis(due_at_ms),
        after: None,
        limit,
    }
}

pub async fn orders_due_are_idle_and_due_orders_of_the_states_in_schedule_order(
    ledger: Arc<dyn Ledger>,
) {
    let mine = scheduled(&ledger).await;
    let ids = |orders: Vec<Order>| -> Vec<OrderId> {
        orders
            .into_iter()
            .filter(|o| mine.iter().any(|m| m.id == o.id))
            .map(|o| o.id)
            .collect()
    };
    let read = |q: DueOrders<'static>| {
        let ledger = ledger.clone();
        async move { ledger.orders_due(&q).await.unwrap() }
    };
    const AUTH: &[OrderState] = &[OrderState::Authorized];
    const BOTH: &[OrderState] = &[OrderState::Declined, OrderState::Authorized];
    assert_eq!(
        ids(read(due(AUTH, 40, 100_000, 10_000)).await),
        vec![mine[1].id, mine[3].id]
    );
    let idle = ids(read(due(AUTH, 39, 100_000, 10_000)).await);
    assert_eq!(idle, vec![mine[1].id], "moved after idle_since: not yet");
    let early = ids(read(due(BOTH, 40, 1_000, 10_000)).await);
    assert_eq!(
        early,
        vec![mine[0].id, mine[1].id],
        "not due yet: left alone"
    );
    let stored = ledger.order(mine[1].id).await.unwrap().unwrap();
    assert_eq!(
        (stored.attempts, stored.next_attempt_at),
        (0, T0.plus_secs(1))
    );
    assert!(read(due(&[], 40, 100_000, 10)).await.is_empty());
}

/// A page at a time from a cursor, however many other orders a shared backend holds:
/// every order is met once, in (next attempt, id) order.
pub async fn orders_due_page_from_a_cursor(ledger: Arc<dyn Ledger>) {
    let mine = scheduled(&ledger).await;
    let states = [OrderState::Declined, OrderState::Authorized];
    let mut q = due(&states, 40, 100_000, 2);
    let (mut met, mut pages) = (Vec::new(), 0);
    loop {
        let page = ledger.orders_due(&q).await.unwrap();
        assert!(page.len() <= 2);
        let Some(last) = page.last() else { break };
        q.after = Some((last.next_attempt_at, last.id));
        met.extend(
            page.iter()
                .filter(|o| mine.iter().any(|m| m.id == o.id))
                .map(|o| o.id),
        );
        pages += 1;
        assert!(pages < 100_000, "the cursor must move on");
    }
    let expected: Vec<OrderId> = mine.iter().map(|o| o.id).collect();
    assert_eq!(met, expected);
}

/// The sweep's claim: counted once per read, lost to any move in between, and a move to
/// a new state (not a repeat of the same one) starts the count again.
pub async fn a_claimed_attempt_is_counted_once_and_a_new_state_starts_the_count_again(
    ledger: Arc<dyn Ledger>,
) {
    let e = event(&ledger, 5, 4).await;
    let o = authorized(&ledger, &e, BuyerId::random(), &[0]).await;
    let next = |s: u64| T0.plus_secs(s);
    assert!(ledger.claim_attempt(&o, next(30)).await.unwrap());
    assert!(
        !ledger.claim_attempt(&o, next(30)).await.unwrap(),
        "a second claim of the same read loses"
    );
    let claimed = ledger.order(o.id).await.unwrap().unwrap();
    assert_eq!((claimed.attempts, claimed.next_attempt_at), (1, next(30)));
    let committed = ledger.commit(&commit_of(&claimed, 4)).await.unwrap();
    assert_eq!(committed, CommitOutcome::Committed);
    let failed = ledger
        .apply(o.id, OrderEvent::CaptureFailed, None, next(3))
        .await
        .unwrap();
    assert_eq!(
        (failed.state, failed.attempts),
        (OrderState::PendingCapture, 0)
    );
    assert!(
        !ledger.claim_attempt(&claimed, next(60)).await.unwrap(),
        "it moved"
    );
    let stored = ledger.order(o.id).await.unwrap().unwrap();
    assert_eq!(stored.attempts, 0);
    assert!(ledger.claim_attempt(&stored, next(60)).await.unwrap());
    let again = ledger
        .apply(o.id, OrderEvent::CaptureFailed, None, next(61))
        .await
        .unwrap();
    assert_eq!(again.attempts, 1, "the same state again keeps its count");
    let stored = ledger.order(o.id).await.unwrap().unwrap();
    assert_eq!((stored.attempts, stored.next_attempt_at), (1, next(60)));
}
