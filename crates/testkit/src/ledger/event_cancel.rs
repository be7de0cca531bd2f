//! Cases: an event's cancellation job as the ledger keeps it. Starting it closes the
//! sale and records the job once; its progress is saved only over the progress it was
//! computed from; the event's orders page in id order from a cursor, and are counted
//! by state.

use std::sync::Arc;

use boxoffice_domain::{BuyerId, EventId, OrderState, SaleStatus};
use boxoffice_engine::ports::{
    CancellationCounts, CommitOutcome, EventCancellation, EventOrders, InsertOrder, Ledger,
};

use super::fixtures::{T0, authorized, commit_of, event, order};

pub async fn cancelling_an_event_closes_its_sale_and_records_the_job_once(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    ledger
        .set_sale_status(e.id, SaleStatus::Open)
        .await
        .unwrap();
    assert_eq!(ledger.event_cancellation(e.id).await.unwrap(), None);
    let job = ledger.cancel_event(e.id, T0).await.unwrap();
    assert_eq!(job, EventCancellation::new(e.id, T0));
    let read = ledger.event(e.id).await.unwrap().unwrap();
    assert_eq!(read.status, SaleStatus::Closed);
    assert!(
        !ledger
            .events_with_status(SaleStatus::Open)
            .await
            .unwrap()
            .contains(&e.id)
    );
    let again = ledger.cancel_event(e.id, T0.plus_secs(9)).await.unwrap();
    assert_eq!(again, job, "a second cancel returns the job as it is");
    assert_eq!(
        ledger.event_cancellation(e.id).await.unwrap(),
        Some(job.clone())
    );
    assert!(ledger.running_cancellations().await.unwrap().contains(&job));
    assert!(ledger.cancel_event(EventId(i64::MAX), T0).await.is_err());
}

/// Once an event's cancellation started, no order of it is written (a node whose
/// cached status lagged asks too late), so none can be sold after the refund job's
/// pass looked; an order written before it answers a retried checkout as before.
pub async fn no_order_is_written_for_a_cancelled_event(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    let before = order(&e, BuyerId::random(), &[0], T0);
    assert_eq!(
        ledger.insert_order(&before).await.unwrap(),
        InsertOrder::Inserted
    );
    ledger.cancel_event(e.id, T0.plus_secs(1)).await.unwrap();
    let late = order(&e, BuyerId::random(), &[1], T0.plus_secs(2));
    assert_eq!(
        ledger.insert_order(&late).await.unwrap(),
        InsertOrder::EventCancelled
    );
    assert_eq!(ledger.order(late.id).await.unwrap(), None);
    assert_eq!(ledger.order_of_hold(late.hold).await.unwrap(), None);
    let retry = boxoffice_engine::ports::Order {
        id: boxoffice_domain::OrderId::random(),
        ..before.clone()
    };
    assert_eq!(
        ledger.insert_order(&retry).await.unwrap(),
        InsertOrder::Exists(before)
    );
    // Another event's orders are written as before.
    let other = event(&ledger, 5, 4).await;
    let theirs = order(&other, BuyerId::random(), &[0], T0.plus_secs(2));
    assert_eq!(
        ledger.insert_order(&theirs).await.unwrap(),
        InsertOrder::Inserted
    );
}

pub async fn cancellation_progress_is_saved_only_over_what_it_was_read_as(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    let o = authorized(&ledger, &e, BuyerId::random(), &[0]).await;
    let job = ledger.cancel_event(e.id, T0).await.unwrap();
    let next = EventCancellation {
        cursor: Some(o.id),
        counts: CancellationCounts {
            seen: 3,
            returned: 2,
            unsold: 1,
            pending: 0,
        },
        updated_at: T0.plus_secs(1),
        ..job.clone()
    };
    assert!(ledger.save_cancellation(&job, &next).await.unwrap());
    assert_eq!(
        ledger.event_cancellation(e.id).await.unwrap(),
        Some(next.clone())
    );
    // A node that read the job before that save does not overwrite it.
    let stale = EventCancellation {
        counts: CancellationCounts::default(),
        ..next.clone()
    };
    assert!(!ledger.save_cancellation(&job, &stale).await.unwrap());
    assert_eq!(
        ledger.event_cancellation(e.id).await.unwrap(),
        Some(next.clone())
    );
    let finished = EventCancellation {
        finished_at: Some(T0.plus_secs(2)),
        ..next.clone()
    };
    assert!(ledger.save_cancellation(&next, &finished).await.unwrap());
    assert!(
        !ledger
            .running_cancellations()
            .await
            .unwrap()
            .iter()
            .any(|j| j.event == e.id)
    );
    assert!(
        !ledger.save_cancellation(&finished, &next).await.unwrap(),
        "a finished job stays finished"
    );
}

pub async fn an_events_orders_page_in_id_order_from_a_cursor(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    let other = event(&ledger, 5, 4).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(authorized(&ledger, &e, BuyerId::random(), &[i]).await.id);
    }
    authorized(&ledger, &other, BuyerId::random(), &[0]).await;
    ids.sort_by_key(|id| id.to_string());
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let q = EventOrders {
            event: e.id,
            after,
            limit: 2,
        };
        let page = ledger.orders_of_event(&q).await.unwrap();
        assert!(page.len() <= 2);
        let Some(last) = page.last() else { break };
        after = Some(last.id);
        assert!(page.iter().all(|o| o.event == e.id && !o.seats.is_empty()));
        seen.extend(page.iter().map(|o| o.id));
    }
    assert_eq!(seen, ids, "every order once, in id order");
}

pub async fn an_events_orders_are_counted_by_state(ledger: Arc<dyn Ledger>) {
    let e = event(&ledger, 5, 4).await;
    let other = event(&ledger, 5, 4).await;
    assert_eq!(ledger.order_states(e.id).await.unwrap(), vec![]);
    for i in 0..3 {
        authorized(&ledger, &e, BuyerId::random(), &[i]).await;
    }
    let sold = authorized(&ledger, &e, BuyerId::random(), &[3]).await;
    let outcome = ledger.commit(&commit_of(&sold, 4)).await.unwrap();
    assert_eq!(outcome, CommitOutcome::Committed);
    authorized(&ledger, &other, BuyerId::random(), &[0]).await;
    let mut counts = ledger.order_states(e.id).await.unwrap();
    counts.sort_by_key(|(s, _)| s.as_str());
    assert_eq!(
        counts,
        vec![(OrderState::Authorized, 3), (OrderState::Committed, 1)]
    );
    assert_eq!(
        ledger.order_states(EventId(i64::MAX)).await.unwrap(),
        vec![],
        "an unknown event has no orders"
    );
}
