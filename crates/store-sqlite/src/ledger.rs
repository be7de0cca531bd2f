//! `SqliteLedger`: the `Ledger` port over one SQLite file. Writes queue for the single
//! writer thread (group commit); reads run on the reader pool.

use std::any::Any;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use async_trait::async_trait;
use boxoffice_domain::{
    BuyerId, Event, EventId, EventSpec, HoldId, Millis, OrderEvent, OrderId, OrderState, SaleStatus,
};
use boxoffice_engine::ports::{
    AuditFacts, Commit, CommitOutcome, DueOrders, EventCancellation, EventOrders, Incarnation,
    InsertOrder, JoinRecord, Ledger, LedgerError, LinePlace, Order, StoreError,
};
use parking_lot::Mutex;

use crate::idempotency::SqliteIdempotency;
use crate::options::SqliteOptions;
use crate::reader::ReadPool;
use crate::writer::Writer;
use crate::{audit, cancel, commit, conn, event_cancel, events, migrate, moves, orders};

/// Things that must live as long as the file is in use, such as a test's temp directory.
pub(crate) type Guards = Arc<Mutex<Vec<Box<dyn Any + Send>>>>;

/// The ledger over one SQLite file. Cheap to share behind an `Arc`; the writer thread
/// stops when the ledger and every `SqliteIdempotency` taken from it are dropped.
pub struct SqliteLedger {
    pub(crate) writer: Writer,
    pub(crate) readers: Arc<ReadPool>,
    guards: Guards,
}

impl SqliteLedger {
    /// Opens (creating if need be) the file at `path`, migrates it to the newest schema
    /// and starts the writer thread.
    pub fn open(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let write = conn::open(path, options.busy_timeout())?;
        migrate::run(&write)?;
        let readers = ReadPool::open(
            path.to_path_buf(),
            options.read_connections,
            options.busy_timeout(),
        )?;
        let writer = Writer::spawn(write, path, &options)?;
        Ok(SqliteLedger {
            writer,
            readers,
            guards: Guards::default(),
        })
    }

    /// The idempotency store in the same file, sharing this ledger's writer.
    pub fn idempotency(&self) -> SqliteIdempotency {
        SqliteIdempotency {
            writer: self.writer.clone(),
            _guards: self.guards.clone(),
        }
    }

    /// Keeps `guard` alive until the ledger and its idempotency stores are dropped (e.g.
    /// the `TempDir` of a test).
    pub fn keep_alive(&self, guard: impl Any + Send) {
        self.guards.lock().push(Box::new(guard));
    }

    /// Checkpoints the checkpointer ran since open (none runs on the writer's thread).
    pub fn checkpoints(&self) -> u64 {
        self.writer.stats.checkpoints.load(Ordering::Relaxed)
    }

    /// (transactions, writes) since open: writes per transaction is the grouping.
    pub fn write_stats(&self) -> (u64, u64) {
        let s = &self.writer.stats;
        (
            s.transactions.load(Ordering::Relaxed),
            s.jobs.load(Ordering::Relaxed),
        )
    }
}

#[async_trait]
impl Ledger for SqliteLedger {
    #[tracing::instrument(level = "debug", skip_all)]
    async fn create_event(&self, spec: &EventSpec, now: Millis) -> Result<Event, StoreError> {
        let spec = spec.clone();
        self.writer
            .submit(move |c| events::create(c, &spec, now))
            .await?
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %id))]
    async fn event(&self, id: EventId) -> Result<Option<Event>, StoreError> {
        self.readers.read(move |c| events::read(c, id)).await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn events_with_status(&self, status: SaleStatus) -> Result<Vec<EventId>, StoreError> {
        self.readers
            .read(move |c| events::with_status(c, status))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %id))]
    async fn set_sale_status(&self, id: EventId, status: SaleStatus) -> Result<(), StoreError> {
        self.writer
            .submit(move |c| events::set_status(c, id, status))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn create_buyer(&self, buyer: BuyerId, now: Millis) -> Result<(), StoreError> {
        self.writer
            .submit(move |c| events::create_buyer(c, buyer, now))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn fairness_seed(&self, event: EventId, fresh: &str) -> Result<String, StoreError> {
        let fresh = fresh.to_string();
        self.writer
            .submit(move |c| events::fairness_seed(c, event, &fresh))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn record_pool_join(
        &self,
        event: EventId,
        buyer: BuyerId,
        now: Millis,
    ) -> Result<(), StoreError> {
        self.writer
            .submit(move |c| events::record_pool_join(c, event, buyer, now))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn pool_joins(&self, event: EventId) -> Result<Vec<BuyerId>, StoreError> {
        self.readers
            .read(move |c| events::pool_joins(c, event))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn record_joins(&self, joins: &[JoinRecord]) -> Result<Vec<bool>, StoreError> {
        let joins = joins.to_vec();
        self.writer
            .submit(move |c| events::record_joins(c, &joins))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn line_places(&self, event: EventId) -> Result<Vec<LinePlace>, StoreError> {
        self.readers
            .read(move |c| events::line_places(c, event))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn record_admission(
        &self,
        event: EventId,
        serving_up_to: u64,
        at: Millis,
    ) -> Result<(), StoreError> {
        self.writer
            .submit(move |c| events::record_admission(c, event, serving_up_to, at))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn admissions(&self, event: EventId) -> Result<Vec<(u64, Millis)>, StoreError> {
        self.readers
            .read(move |c| events::admissions(c, event))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn keep_line_setting(
        &self,
        event: EventId,
        name: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        let (name, value) = (name.to_string(), value.to_string());
        self.writer
            .submit(move |c| events::keep_line_setting(c, event, &name, &value))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn line_settings(&self, event: EventId) -> Result<Vec<(String, String)>, StoreError> {
        self.readers
            .read(move |c| events::line_settings(c, event))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn claim_webhook(
        &self,
        id: &str,
        by: Incarnation,
        now: Millis,
        stale_before: Millis,
    ) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.writer
            .submit(move |c| events::claim_webhook(c, &id, by, now, stale_before))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn finish_webhook(&self, id: &str, handled: bool) -> Result<(), StoreError> {
        let id = id.to_string();
        self.writer
            .submit(move |c| events::finish_webhook(c, &id, handled))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn prune_webhooks(&self, before: Millis, limit: u32) -> Result<u64, StoreError> {
        self.writer
            .submit(move |c| events::prune_webhooks(c, before, limit))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn insert_order(&self, order: &Order) -> Result<InsertOrder, StoreError> {
        let order = order.clone();
        self.writer.submit(move |c| moves::insert(c, &order)).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(order = %id))]
    async fn order(&self, id: OrderId) -> Result<Option<Order>, StoreError> {
        self.readers
            .read(move |c| orders::by_id(c, &id.to_string()))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(hold = %hold))]
    async fn order_of_hold(&self, hold: HoldId) -> Result<Option<Order>, StoreError> {
        self.readers
            .read(move |c| orders::by_hold(c, &hold.to_string()))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn orders_of_buyer(
        &self,
        buyer: BuyerId,
        limit: usize,
    ) -> Result<Vec<Order>, StoreError> {
        self.readers
            .read(move |c| orders::of_buyer(c, &buyer.to_string(), limit))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn orders_due(&self, q: &DueOrders<'_>) -> Result<Vec<Order>, StoreError> {
        let (after_at, after_id) = q
            .after
            .map_or((i64::MIN, String::new()), |(at, id)| (at.0, id.to_string()));
        let query = orders::DueQuery {
            states: orders::state_list(q.states.iter().copied()),
            idle_since: q.idle_since.0,
            due_at: q.due_at.0,
            after: (after_at, after_id),
            limit: i64::try_from(q.limit).unwrap_or(i64::MAX),
        };
        self.readers.read(move |c| orders::due(c, &query)).await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn claim_attempt(
        &self,
        order: &Order,
        next_attempt_at: Millis,
    ) -> Result<bool, StoreError> {
        let order = order.clone();
        self.writer
            .submit(move |c| moves::claim_attempt(c, &order, next_attempt_at))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(order = %order))]
    async fn apply(
        &self,
        order: OrderId,
        event: OrderEvent,
        payment_ref: Option<&str>,
        now: Millis,
    ) -> Result<Order, LedgerError> {
        let payment_ref = payment_ref.map(str::to_owned);
        self.writer
            .submit(move |c| moves::apply(c, order, event, payment_ref.as_deref(), now))
            .await?
    }

    #[tracing::instrument(level = "debug", skip_all, fields(order = %commit.order))]
    async fn commit(&self, commit: &Commit) -> Result<CommitOutcome, StoreError> {
        let commit = commit.clone();
        self.writer
            .submit(move |c| commit::commit(c, &commit))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(order = %commit.order))]
    async fn authorize_and_commit(
        &self,
        commit: &Commit,
        reference: &str,
    ) -> Result<(Order, CommitOutcome), LedgerError> {
        let (commit, reference) = (commit.clone(), reference.to_owned());
        self.writer
            .submit(move |c| commit::authorize_and_commit(c, &commit, &reference))
            .await?
    }

    #[tracing::instrument(level = "debug", skip_all, fields(order = %order))]
    async fn cancel_sale(&self, order: OrderId, now: Millis) -> Result<Order, LedgerError> {
        self.writer
            .submit(move |c| {
                cancel::cancel_sale(c, order, OrderEvent::CaptureAbandoned, now, false)
            })
            .await?
    }

    #[tracing::instrument(level = "debug", skip_all, fields(order = %order))]
    async fn revoke_sale(&self, order: OrderId, now: Millis) -> Result<Order, LedgerError> {
        self.writer
            .submit(move |c| cancel::cancel_sale(c, order, OrderEvent::CancelRequested, now, false))
            .await?
    }

    #[tracing::instrument(level = "debug", skip_all, fields(order = %order))]
    async fn revoke_unused_sale(&self, order: OrderId, now: Millis) -> Result<Order, LedgerError> {
        // The one writer runs check-ins too: none lands between the check and the claim.
        self.writer
            .submit(move |c| cancel::cancel_sale(c, order, OrderEvent::CancelRequested, now, true))
            .await?
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn cancel_event(
        &self,
        event: EventId,
        now: Millis,
    ) -> Result<EventCancellation, StoreError> {
        self.writer
            .submit(move |c| event_cancel::start(c, event, now))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn event_cancellation(
        &self,
        event: EventId,
    ) -> Result<Option<EventCancellation>, StoreError> {
        self.readers
            .read(move |c| event_cancel::read(c, event))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn running_cancellations(&self) -> Result<Vec<EventCancellation>, StoreError> {
        self.readers.read(event_cancel::running).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %read.event))]
    async fn save_cancellation(
        &self,
        read: &EventCancellation,
        next: &EventCancellation,
    ) -> Result<bool, StoreError> {
        let (read, next) = (read.clone(), next.clone());
        self.writer
            .submit(move |c| event_cancel::save(c, &read, &next))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %q.event))]
    async fn orders_of_event(&self, q: &EventOrders) -> Result<Vec<Order>, StoreError> {
        let q = *q;
        self.readers
            .read(move |c| event_cancel::orders_of_event(c, &q))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn order_states(&self, event: EventId) -> Result<Vec<(OrderState, u64)>, StoreError> {
        self.readers
            .read(move |c| event_cancel::order_states(c, event))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn sold_seats(&self, event: EventId) -> Result<Vec<(String, BuyerId)>, StoreError> {
        self.readers
            .read(move |c| events::sold_seats(c, event))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn audit_facts(&self) -> Result<AuditFacts, StoreError> {
        self.readers.read(audit::facts).await
    }
}
