//! `PostgresLedger`: the `Ledger` port over a PostgreSQL database. Writes queue for the
//! writer (group commit); reads run on the pool, concurrently with the writer. The
//! after-sale writes that lock a ticket first run apart from the batches, each in its
//! own transaction, and like the batches' jobs run again when they lose a race.

use std::any::Any;
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
use sqlx::postgres::PgPoolOptions;
use sqlx::{PgConnection, PgPool};

use crate::idempotency::PostgresIdempotency;
use crate::options::PostgresOptions;
use crate::writer::{OpFuture, Writer};
use crate::{audit, cancel, commit, conn, event_cancel, events, migrate, moves, orders};

/// Things that must live as long as the database is in use, such as a test's
/// throw-away database (dropped with the last ledger or idempotency store).
pub(crate) type Guards = Arc<Mutex<Vec<Box<dyn Any + Send>>>>;

/// The ledger over one PostgreSQL database. Cheap to share behind an `Arc`; the writer
/// task stops when the ledger and every `PostgresIdempotency` taken from it are dropped.
pub struct PostgresLedger {
    writer: Writer,
    pub(crate) pool: PgPool,
    guards: Guards,
}

impl PostgresLedger {
    /// The writer job `cancel::cancel_sale` (`cancel_sale`, `revoke_sale` and, with
    /// `unless_used`, `revoke_unused_sale`).
    async fn undo_sale(
        &self,
        order: OrderId,
        event: OrderEvent,
        now: Millis,
        unless_used: bool,
    ) -> Result<Order, LedgerError> {
        self.writer
            .submit(move |c| Box::pin(cancel::cancel_sale(c, order, event, now, unless_used)))
            .await?
    }

    /// Connects to `url`, migrates the database to the newest schema and starts the
    /// writer. Fails (rather than waiting) when the database cannot be reached within
    /// the connect timeout.
    pub async fn connect(url: &str, options: PostgresOptions) -> Result<Self, StoreError> {
        let connect = conn::connect_options(url, &options)?;
        let pool = conn::pool(connect.clone(), options.pool_size, &options);
        let probe = conn::timed(
            &options,
            "connecting to the ledger database",
            pool.acquire(),
        );
        drop(probe.await?);
        migrate::run(&pool).await?;
        let writer = if options.group_commit {
            // The writers' own connections, so reads can never starve the commit path.
            // They are not tested before each batch (a round trip per batch); a batch
            // that finds its connection broken closes it and the next one reconnects.
            let writers = options.writers.max(1);
            let write_pool = PgPoolOptions::new()
                .max_connections(u32::try_from(writers).unwrap_or(u32::MAX))
                .acquire_timeout(options.acquire_timeout())
                .test_before_acquire(false)
                .connect_lazy_with(connect);
            Writer::group(
                write_pool,
                writers,
                options.max_batch,
                options.queue_capacity,
            )
        } else {
            Writer::single(pool.clone())
        };
        Ok(PostgresLedger {
            writer,
            pool,
            guards: Guards::default(),
        })
    }

    /// Applies any migration the database lacks; returns the versions applied.
    pub async fn migrate(&self) -> Result<Vec<i64>, StoreError> {
        migrate::run(&self.pool).await
    }

    /// Writes run again since connect because they lost a race with another
    /// transaction (a deadlock, a lock timeout): how often batches collide.
    pub fn reruns(&self) -> u64 {
        self.writer.stats.reruns.load(Ordering::Relaxed)
    }

    /// Runs `op` in a transaction of its own outside the writer's batches, run again when
    /// it loses a race (`Writer::apart`).
    pub(crate) async fn apart<T, F>(&self, op: F) -> Result<T, StoreError>
    where
        F: for<'c> Fn(&'c mut PgConnection) -> OpFuture<'c, T>,
    {
        self.writer.apart(&self.pool, op).await
    }

    /// The idempotency store in the same database, sharing this ledger's writer.
    pub fn idempotency(&self) -> PostgresIdempotency {
        PostgresIdempotency {
            writer: self.writer.clone(),
            pool: self.pool.clone(),
            _guards: self.guards.clone(),
        }
    }

    /// Keeps `guard` alive until the ledger and its idempotency stores are dropped (e.g.
    /// a test's throw-away database).
    pub fn keep_alive(&self, guard: impl Any + Send) {
        self.guards.lock().push(Box::new(guard));
    }

    /// The read pool, for health checks and for tests that must reach behind the port.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// (transactions, writes) since connect: writes per transaction is the grouping.
    pub fn write_stats(&self) -> (u64, u64) {
        let s = &self.writer.stats;
        (
            s.transactions.load(Ordering::Relaxed),
            s.jobs.load(Ordering::Relaxed),
        )
    }
}

#[async_trait]
impl Ledger for PostgresLedger {
    #[tracing::instrument(level = "debug", skip_all)]
    async fn create_event(&self, spec: &EventSpec, now: Millis) -> Result<Event, StoreError> {
        let spec = spec.clone();
        self.writer
            .submit(move |c| {
                let spec = spec.clone();
                Box::pin(async move { events::create(c, &spec, now).await })
            })
            .await?
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %id))]
    async fn event(&self, id: EventId) -> Result<Option<Event>, StoreError> {
        events::read(&self.pool, id).await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn events_with_status(&self, status: SaleStatus) -> Result<Vec<EventId>, StoreError> {
        events::with_status(&self.pool, status).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %id))]
    async fn set_sale_status(&self, id: EventId, status: SaleStatus) -> Result<(), StoreError> {
        self.writer
            .submit(move |c| Box::pin(events::set_status(c, id, status)))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn create_buyer(&self, buyer: BuyerId, now: Millis) -> Result<(), StoreError> {
        self.writer
            .submit(move |c| Box::pin(events::create_buyer(c, buyer, now)))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn fairness_seed(&self, event: EventId, fresh: &str) -> Result<String, StoreError> {
        let fresh = fresh.to_string();
        self.writer
            .submit(move |c| {
                let fresh = fresh.clone();
                Box::pin(async move { events::fairness_seed(c, event, &fresh).await })
            })
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
            .submit(move |c| Box::pin(events::record_pool_join(c, event, buyer, now)))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn pool_joins(&self, event: EventId) -> Result<Vec<BuyerId>, StoreError> {
        events::pool_joins(&self.pool, event).await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn record_joins(&self, joins: &[JoinRecord]) -> Result<Vec<bool>, StoreError> {
        let joins = joins.to_vec();
        self.writer
            .submit(move |c| {
                let joins = joins.clone();
                Box::pin(async move { events::record_joins(c, &joins).await })
            })
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn line_places(&self, event: EventId) -> Result<Vec<LinePlace>, StoreError> {
        events::line_places(&self.pool, event).await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn record_admission(
        &self,
        event: EventId,
        serving_up_to: u64,
        at: Millis,
    ) -> Result<(), StoreError> {
        self.writer
            .submit(move |c| Box::pin(events::record_admission(c, event, serving_up_to, at)))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn admissions(&self, event: EventId) -> Result<Vec<(u64, Millis)>, StoreError> {
        events::admissions(&self.pool, event).await
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
            .submit(move |c| {
                let (name, value) = (name.clone(), value.clone());
                Box::pin(async move { events::keep_line_setting(c, event, &name, &value).await })
            })
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn line_settings(&self, event: EventId) -> Result<Vec<(String, String)>, StoreError> {
        events::line_settings(&self.pool, event).await
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
            .submit(move |c| {
                let id = id.clone();
                Box::pin(async move { events::claim_webhook(c, &id, by, now, stale_before).await })
            })
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn finish_webhook(&self, id: &str, handled: bool) -> Result<(), StoreError> {
        let id = id.to_string();
        self.writer
            .submit(move |c| {
                let id = id.clone();
                Box::pin(async move { events::finish_webhook(c, &id, handled).await })
            })
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn prune_webhooks(&self, before: Millis, limit: u32) -> Result<u64, StoreError> {
        self.writer
            .submit(move |c| {
                Box::pin(async move { events::prune_webhooks(c, before, limit).await })
            })
            .await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn insert_order(&self, order: &Order) -> Result<InsertOrder, StoreError> {
        let order = order.clone();
        self.writer
            .submit(move |c| {
                let order = order.clone();
                Box::pin(async move { moves::insert(c, &order).await })
            })
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(order = %id))]
    async fn order(&self, id: OrderId) -> Result<Option<Order>, StoreError> {
        orders::by_id(&self.pool, &id.to_string()).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(hold = %hold))]
    async fn order_of_hold(&self, hold: HoldId) -> Result<Option<Order>, StoreError> {
        orders::by_hold(&self.pool, &hold.to_string()).await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn orders_of_buyer(
        &self,
        buyer: BuyerId,
        limit: usize,
    ) -> Result<Vec<Order>, StoreError> {
        orders::of_buyer(&self.pool, &buyer.to_string(), limit).await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn orders_due(&self, q: &DueOrders<'_>) -> Result<Vec<Order>, StoreError> {
        orders::due(&self.pool, q).await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn claim_attempt(
        &self,
        order: &Order,
        next_attempt_at: Millis,
    ) -> Result<bool, StoreError> {
        let order = order.clone();
        self.writer
            .submit(move |c| {
                let order = order.clone();
                Box::pin(async move { moves::claim_attempt(c, &order, next_attempt_at).await })
            })
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
            .submit(move |c| {
                let payment_ref = payment_ref.clone();
                Box::pin(
                    async move { moves::apply(c, order, event, payment_ref.as_deref(), now).await },
                )
            })
            .await?
    }

    #[tracing::instrument(level = "debug", skip_all, fields(order = %commit.order))]
    async fn commit(&self, commit: &Commit) -> Result<CommitOutcome, StoreError> {
        self.writer.commit(commit.clone()).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(order = %commit.order))]
    async fn authorize_and_commit(
        &self,
        commit: &Commit,
        reference: &str,
    ) -> Result<(Order, CommitOutcome), LedgerError> {
        let (commit, reference) = (commit.clone(), reference.to_owned());
        self.writer
            .submit(move |c| {
                let (commit, reference) = (commit.clone(), reference.clone());
                Box::pin(async move { commit::authorize_and_commit(c, &commit, &reference).await })
            })
            .await?
    }

    #[tracing::instrument(level = "debug", skip_all, fields(order = %order))]
    async fn cancel_sale(&self, order: OrderId, now: Millis) -> Result<Order, LedgerError> {
        self.undo_sale(order, OrderEvent::CaptureAbandoned, now, false)
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(order = %order))]
    async fn revoke_sale(&self, order: OrderId, now: Millis) -> Result<Order, LedgerError> {
        self.undo_sale(order, OrderEvent::CancelRequested, now, false)
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(order = %order))]
    async fn revoke_unused_sale(&self, order: OrderId, now: Millis) -> Result<Order, LedgerError> {
        self.undo_sale(order, OrderEvent::CancelRequested, now, true)
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn cancel_event(
        &self,
        event: EventId,
        now: Millis,
    ) -> Result<EventCancellation, StoreError> {
        self.writer
            .submit(move |c| Box::pin(event_cancel::start(c, event, now)))
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn event_cancellation(
        &self,
        event: EventId,
    ) -> Result<Option<EventCancellation>, StoreError> {
        event_cancel::read(&self.pool, event).await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn running_cancellations(&self) -> Result<Vec<EventCancellation>, StoreError> {
        event_cancel::running(&self.pool).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %read.event))]
    async fn save_cancellation(
        &self,
        read: &EventCancellation,
        next: &EventCancellation,
    ) -> Result<bool, StoreError> {
        let (read, next) = (read.clone(), next.clone());
        self.writer
            .submit(move |c| {
                let (read, next) = (read.clone(), next.clone());
                Box::pin(async move { event_cancel::save(c, &read, &next).await })
            })
            .await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %q.event))]
    async fn orders_of_event(&self, q: &EventOrders) -> Result<Vec<Order>, StoreError> {
        orders::of_event(&self.pool, q).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn order_states(&self, event: EventId) -> Result<Vec<(OrderState, u64)>, StoreError> {
        orders::states_of_event(&self.pool, event).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(event = %event))]
    async fn sold_seats(&self, event: EventId) -> Result<Vec<(String, BuyerId)>, StoreError> {
        events::sold_seats(&self.pool, event).await
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn audit_facts(&self) -> Result<AuditFacts, StoreError> {
        audit::facts(&self.pool).await
    }
}
