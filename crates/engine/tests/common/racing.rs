//! `Racing`: the ledger with a racer in front of it. When the engine first asks to move
//! the chosen order by the chosen event, another path gets there first: the order is
//! authorized and committed (as a late authorization that a webhook settled would do),
//! and only then does the engine's own move reach the ledger. It also counts the
//! ledger's listings of events by sale status (`status_reads`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use boxoffice_domain::{
    BuyerId, Event, EventId, EventSpec, HoldId, Millis, OrderEvent, OrderId, OrderState, SaleStatus,
};
use boxoffice_engine::ports::{
    AuditFacts, Commit, CommitOutcome, DueOrders, EventCancellation, EventOrders, Incarnation,
    InsertOrder, JoinRecord, Ledger, LedgerError, LinePlace, Order, StoreError,
};
use parking_lot::Mutex;
use tokio::sync::Notify;

pub struct Racing {
    inner: Arc<dyn Ledger>,
    trigger: Mutex<Option<(OrderId, OrderEvent)>>,
    /// Armed by `hold_next_joins`: (told when the write is held, releases it).
    joins_gate: Mutex<Option<(Arc<Notify>, Arc<Notify>)>>,
    /// Armed by `hold_next_sold_seats`: (told when the read is held, releases it).
    sold_gate: Mutex<Option<(Arc<Notify>, Arc<Notify>)>>,
    /// Set by `uncommitted`: orders the event's listings leave out.
    unseen: Mutex<Vec<OrderId>>,
    status_reads: AtomicUsize,
}

impl Racing {
    pub fn new(inner: Arc<dyn Ledger>) -> Racing {
        Racing {
            inner,
            trigger: Mutex::new(None),
            joins_gate: Mutex::new(None),
            sold_gate: Mutex::new(None),
            unseen: Mutex::new(Vec::new()),
            status_reads: AtomicUsize::new(0),
        }
    }

    /// How many times the ledger was asked for the events of a sale status.
    pub fn status_reads(&self) -> usize {
        self.status_reads.load(Ordering::Relaxed)
    }

    /// The next `record_joins` waits, before it reaches the ledger, until `release` is
    /// notified; `held` is notified once it waits.
    pub fn hold_next_joins(&self) -> (Arc<Notify>, Arc<Notify>) {
        let gate = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        *self.joins_gate.lock() = Some(gate.clone());
        gate
    }

    /// The next `sold_seats` reads the ledger, then waits until `release` is notified
    /// before answering (with what it read); `held` is notified once it waits.
    pub fn hold_next_sold_seats(&self) -> (Arc<Notify>, Arc<Notify>) {
        let gate = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        *self.sold_gate.lock() = Some(gate.clone());
        gate
    }

    /// `order` is left out of the event's listings (`orders_of_event`) until
    /// `committed`: an order whose write had not committed when they read.
    pub fn uncommitted(&self, order: OrderId) {
        self.unseen.lock().push(order);
    }

    /// Every order `uncommitted` left out is listed again.
    pub fn committed(&self) {
        self.unseen.lock().clear();
    }

    /// The next `apply(order, event)` finds the order committed by someone else.
    pub fn commit_before(&self, order: OrderId, event: OrderEvent) {
        *self.trigger.lock() = Some((order, event));
    }

    async fn race(&self, order: OrderId, now: Millis) {
        self.inner
            .apply(order, OrderEvent::Authorized, Some("racing_ref"), now)
            .await
            .expect("the racer authorizes");
        let commit = Commit {
            order,
            max_per_buyer: 10,
            now,
        };
        let outcome = self.inner.commit(&commit).await.expect("the racer commits");
        assert_eq!(outcome, CommitOutcome::Committed);
    }
}

#[async_trait]
impl Ledger for Racing {
    async fn create_event(&self, spec: &EventSpec, now: Millis) -> Result<Event, StoreError> {
        self.inner.create_event(spec, now).await
    }
    async fn event(&self, id: EventId) -> Result<Option<Event>, StoreError> {
        self.inner.event(id).await
    }
    async fn order_states(&self, event: EventId) -> Result<Vec<(OrderState, u64)>, StoreError> {
        self.inner.order_states(event).await
    }
    async fn events_with_status(&self, status: SaleStatus) -> Result<Vec<EventId>, StoreError> {
        self.status_reads.fetch_add(1, Ordering::Relaxed);
        self.inner.events_with_status(status).await
    }
    async fn set_sale_status(&self, id: EventId, status: SaleStatus) -> Result<(), StoreError> {
        self.inner.set_sale_status(id, status).await
    }
    async fn create_buyer(&self, buyer: BuyerId, now: Millis) -> Result<(), StoreError> {
        self.inner.create_buyer(buyer, now).await
    }
    async fn fairness_seed(&self, event: EventId, fresh: &str) -> Result<String, StoreError> {
        self.inner.fairness_seed(event, fresh).await
    }
    async fn record_pool_join(
        &self,
        event: EventId,
        buyer: BuyerId,
        now: Millis,
    ) -> Result<(), StoreError> {
        self.inner.record_pool_join(event, buyer, now).await
    }
    async fn pool_joins(&self, event: EventId) -> Result<Vec<BuyerId>, StoreError> {
        self.inner.pool_joins(event).await
    }
    async fn record_joins(&self, joins: &[JoinRecord]) -> Result<Vec<bool>, StoreError> {
        let gate = self.joins_gate.lock().take();
        if let Some((held, release)) = gate {
            held.notify_one();
            release.notified().await;
        }
        self.inner.record_joins(joins).await
    }
    async fn line_places(&self, event: EventId) -> Result<Vec<LinePlace>, StoreError> {
        self.inner.line_places(event).await
    }
    async fn record_admission(
        &self,
        event: EventId,
        serving_up_to: u64,
        at: Millis,
    ) -> Result<(), StoreError> {
        self.inner.record_admission(event, serving_up_to, at).await
    }
    async fn admissions(&self, event: EventId) -> Result<Vec<(u64, Millis)>, StoreError> {
        self.inner.admissions(event).await
    }
    async fn claim_webhook(
        &self,
        id: &str,
        by: Incarnation,
        now: Millis,
        stale_before: Millis,
    ) -> Result<bool, StoreError> {
        self.inner.claim_webhook(id, by, now, stale_before).await
    }
    async fn finish_webhook(&self, id: &str, handled: bool) -> Result<(), StoreError> {
        self.inner.finish_webhook(id, handled).await
    }
    async fn keep_line_setting(
        &self,
        event: EventId,
        name: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        self.inner.keep_line_setting(event, name, value).await
    }
    async fn line_settings(&self, event: EventId) -> Result<Vec<(String, String)>, StoreError> {
        self.inner.line_settings(event).await
    }
    async fn prune_webhooks(&self, before: Millis, limit: u32) -> Result<u64, StoreError> {
        self.inner.prune_webhooks(before, limit).await
    }
    async fn insert_order(&self, order: &Order) -> Result<InsertOrder, StoreError> {
        self.inner.insert_order(order).await
    }
    async fn order(&self, id: OrderId) -> Result<Option<Order>, StoreError> {
        self.inner.order(id).await
    }
    async fn order_of_hold(&self, hold: HoldId) -> Result<Option<Order>, StoreError> {
        self.inner.order_of_hold(hold).await
    }
    async fn orders_of_buyer(
        &self,
        buyer: BuyerId,
        limit: usize,
    ) -> Result<Vec<Order>, StoreError> {
        self.inner.orders_of_buyer(buyer, limit).await
    }
    async fn orders_due(&self, q: &DueOrders<'_>) -> Result<Vec<Order>, StoreError> {
        self.inner.orders_due(q).await
    }
    async fn claim_attempt(&self, order: &Order, next: Millis) -> Result<bool, StoreError> {
        self.inner.claim_attempt(order, next).await
    }
    async fn apply(
        &self,
        order: OrderId,
        event: OrderEvent,
        payment_ref: Option<&str>,
        now: Millis,
    ) -> Result<Order, LedgerError> {
        let fire = {
            let mut t = self.trigger.lock();
            if *t == Some((order, event)) {
                t.take()
            } else {
                None
            }
        };
        if fire.is_some() {
            self.race(order, now).await;
        }
        self.inner.apply(order, event, payment_ref, now).await
    }
    async fn commit(&self, commit: &Commit) -> Result<CommitOutcome, StoreError> {
        self.inner.commit(commit).await
    }
    async fn cancel_sale(&self, order: OrderId, now: Millis) -> Result<Order, LedgerError> {
        self.inner.cancel_sale(order, now).await
    }
    async fn revoke_sale(&self, order: OrderId, now: Millis) -> Result<Order, LedgerError> {
        self.inner.revoke_sale(order, now).await
    }
    async fn revoke_unused_sale(&self, order: OrderId, now: Millis) -> Result<Order, LedgerError> {
        self.inner.revoke_unused_sale(order, now).await
    }
    async fn cancel_event(
        &self,
        event: EventId,
        now: Millis,
    ) -> Result<EventCancellation, StoreError> {
        self.inner.cancel_event(event, now).await
    }
    async fn event_cancellation(
        &self,
        event: EventId,
    ) -> Result<Option<EventCancellation>, StoreError> {
        self.inner.event_cancellation(event).await
    }
    async fn running_cancellations(&self) -> Result<Vec<EventCancellation>, StoreError> {
        self.inner.running_cancellations().await
    }
    async fn save_cancellation(
        &self,
        read: &EventCancellation,
        next: &EventCancellation,
    ) -> Result<bool, StoreError> {
        self.inner.save_cancellation(read, next).await
    }
    async fn orders_of_event(&self, q: &EventOrders) -> Result<Vec<Order>, StoreError> {
        let mut orders = self.inner.orders_of_event(q).await?;
        let unseen = self.unseen.lock();
        orders.retain(|o| !unseen.contains(&o.id));
        Ok(orders)
    }
    async fn sold_seats(&self, event: EventId) -> Result<Vec<(String, BuyerId)>, StoreError> {
        let read = self.inner.sold_seats(event).await;
        let gate = self.sold_gate.lock().take();
        if let Some((held, release)) = gate {
            held.notify_one();
            release.notified().await;
        }
        read
    }
    async fn audit_facts(&self) -> Result<AuditFacts, StoreError> {
        self.inner.audit_facts().await
    }
}
