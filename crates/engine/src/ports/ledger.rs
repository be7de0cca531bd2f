use async_trait::async_trait;
use boxoffice_domain::{
    BuyerId, Event, EventId, EventSpec, HoldId, Millis, Money, OrderEvent, OrderId, OrderState,
    SaleStatus,
};
use serde::{Deserialize, Serialize};

use super::{EventCancellation, EventOrders, Incarnation, StoreError};

/// One seat of an order, priced at the hold's quote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderSeat {
    pub seat_id: String,
    pub price: Money,
    /// The attendee named at checkout, for events whose tickets carry names: the
    /// ticket written at capture carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attendee: Option<boxoffice_domain::ticket::AttendeeName>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Order {
    pub id: OrderId,
    pub event: EventId,
    pub buyer: BuyerId,
    pub hold: HoldId,
    pub seats: Vec<OrderSeat>,
    pub total: Money,
    pub currency: String,
    pub state: OrderState,
    pub payment_ref: Option<String>,
    pub created_at: Millis,
    pub updated_at: Millis,
    /// Attempts the recovery sweep made at the order in its current state (a move to
    /// another state starts the count again).
    #[serde(default)]
    pub attempts: u32,
    /// The sweep leaves the order alone until then (its backoff, kept in the ledger so
    /// that it survives a restart).
    #[serde(default)]
    pub next_attempt_at: Millis,
}

/// One page of the recovery sweep's work list: unfinished orders, idle and due, in
/// (`next_attempt_at`, id) order from just after a cursor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DueOrders<'a> {
    pub states: &'a [OrderState],
    /// Only orders whose state last moved at or before this, so that a checkout still
    /// running is not raced.
    pub idle_since: Millis,
    /// Only orders whose next attempt is due at or before this.
    pub due_at: Millis,
    /// The (`next_attempt_at`, id) of the last order of the previous page; `None` for
    /// the first page.
    pub after: Option<(Millis, OrderId)>,
    pub limit: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InsertOrder {
    Inserted,
    /// The hold already has an order (a retried checkout): here it is.
    Exists(Order),
    /// The ledger has already sold one of the order's seats (to this seat the hot store
    /// still offered): no order is written, so no card is authorized for a seat that can
    /// only lose at commit (P5).
    SeatSold {
        seat_id: String,
    },
    /// The event is cancelled (its refund job started): no order is written, so none
    /// can be sold after the job looked. A node whose cached status lags learns it here.
    EventCancelled,
}

/// The commit point: the order's seats become sold, or nothing happens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Commit {
    pub order: OrderId,
    pub max_per_buyer: u32,
    pub now: Millis,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommitOutcome {
    Committed,
    /// A seat is already sold to another order; nothing was written.
    SeatTaken {
        seat_id: String,
    },
    /// The buyer would own more than the event allows; nothing was written.
    LimitExceeded,
    /// The order is not `authorized` (already committed, or finished another way).
    NotCommittable(OrderState),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LedgerError {
    NotFound,
    /// The order is in another state than the move expects; holds the actual state.
    Conflict(OrderState),
    /// A buyer's own revoke (`revoke_unused_sale`): a ticket of the order that its
    /// buyer holds was admitted at a gate. Nothing was written.
    Used,
    /// A buyer's own revoke (`revoke_unused_sale`): a ticket of the order was given to
    /// someone else (an accepted transfer), whose ticket the revoke would take. Nothing
    /// was written.
    GivenAway,
    Store(StoreError),
}

impl From<StoreError> for LedgerError {
    fn from(e: StoreError) -> Self {
        LedgerError::Store(e)
    }
}

/// Facts the audit checks the promises against.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AuditFacts {
    pub events: Vec<EventFacts>,
    /// Sold seats whose order does not own seats (P2).
    pub sold_without_order: Vec<(EventId, String)>,
    /// Orders that own seats but whose sold-seat count differs from the order (P2).
    pub orders_missing_seats: Vec<OrderId>,
    /// Orders that do not own seats yet have sold seats (P2).
    pub seats_of_unsold_orders: Vec<OrderId>,
    /// (event, buyer, tickets) above the event's limit (P6).
    pub buyers_over_limit: Vec<(EventId, BuyerId, u32)>,
    /// Orders with their payment reference and state, for payment reconciliation.
    pub orders: Vec<(OrderId, OrderState, Option<String>)>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EventFacts {
    pub event: EventId,
    pub capacity: u32,
    pub sold: u32,
    /// Sold seat ids that are not in the event's catalog (P1).
    pub unknown_seats: Vec<String>,
}

/// A join to journal: a buyer entering an event's pre-opening pool, or taking a place
/// in its line (a pool member's drawn place included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JoinRecord {
    pub event: EventId,
    pub buyer: BuyerId,
    pub at: Millis,
    /// `None`: into the pool, no position yet.
    pub position: Option<u64>,
    /// The place was drawn for a member of the pre-opening pool.
    pub pool: bool,
}

/// A place in an event's line as the ledger keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinePlace {
    pub buyer: BuyerId,
    pub position: u64,
    /// Drawn for a member of the pre-opening pool.
    pub pool: bool,
}

/// The durable record. Only commits and order moves come here, never holds.
#[async_trait]
pub trait Ledger: Send + Sync {
    async fn create_event(&self, spec: &EventSpec, now: Millis) -> Result<Event, StoreError>;
    async fn event(&self, id: EventId) -> Result<Option<Event>, StoreError>;
    async fn events_with_status(&self, status: SaleStatus) -> Result<Vec<EventId>, StoreError>;
    async fn set_sale_status(&self, id: EventId, status: SaleStatus) -> Result<(), StoreError>;

    async fn create_buyer(&self, buyer: BuyerId, now: Millis) -> Result<(), StoreError>;

    /// The event's fairness seed (hex), kept for good: the first `fresh` stored wins and
    /// every later call returns it, so the commitment published before opening holds
    /// across restarts and hot-store losses (P7).
    async fn fairness_seed(&self, event: EventId, fresh: &str) -> Result<String, StoreError>;

    /// Records that `buyer` joined the event's pre-opening pool (a buyer recorded before
    /// keeps their first record), so the pool survives the loss of the queue store.
    async fn record_pool_join(
        &self,
        event: EventId,
        buyer: BuyerId,
        now: Millis,
    ) -> Result<(), StoreError>;

    /// The pre-opening pool as recorded, in arrival order.
    async fn pool_joins(&self, event: EventId) -> Result<Vec<BuyerId>, StoreError>;

    /// Journals joins, many at once (one write for the whole batch): pool entries as
    /// `record_pool_join` does, places in line so the line survives the loss of the
    /// queue store. A buyer's first record of each kind stands, and a position belongs
    /// to the first buyer journaled at it. Answers, for each join, whether it stands:
    /// always for a pool entry; for a place, only if the ledger now holds this buyer at
    /// this position (not when the buyer was journaled elsewhere, nor when another
    /// buyer has the position: the queue store that handed it out is behind the ledger).
    async fn record_joins(&self, joins: &[JoinRecord]) -> Result<Vec<bool>, StoreError>;

    /// The event's journaled places in line, by position.
    async fn line_places(&self, event: EventId) -> Result<Vec<LinePlace>, StoreError>;

    /// Journals an admission batch: every position up to `serving_up_to` is admitted
    /// as of `at` (the first record of a batch end stands).
    async fn record_admission(
        &self,
        event: EventId,
        serving_up_to: u64,
        at: Millis,
    ) -> Result<(), StoreError>;

    /// The event's admission batches, (serving_up_to, when), ascending.
    async fn admissions(&self, event: EventId) -> Result<Vec<(u64, Millis)>, StoreError>;

    /// Keeps an operator's waiting-room setting of the event (the admission override,
    /// the rules: `name` and its value as the queue store keeps them), so it comes back
    /// with a line the queue store lost. The last write of a name wins.
    async fn keep_line_setting(
        &self,
        event: EventId,
        name: &str,
        value: &str,
    ) -> Result<(), StoreError>;

    /// The event's kept waiting-room settings, (name, value), by name.
    async fn line_settings(&self, event: EventId) -> Result<Vec<(String, String)>, StoreError>;

    /// Claims a payment webhook's event id for handling, for every node and across
    /// restarts (P4): `true` when `by` is to handle it (the first delivery, or a claim
    /// that never finished and is dead: taken before `stale_before`, or, in a ledger one
    /// process opens at a time, taken by an earlier life of this process), `false` for
    /// a duplicate (handled, or being handled, elsewhere or earlier).
    async fn claim_webhook(
        &self,
        id: &str,
        by: Incarnation,
        now: Millis,
        stale_before: Millis,
    ) -> Result<bool, StoreError>;

    /// Ends a claim: `handled` keeps the id for good; otherwise the claim is given back,
    /// so the provider's retry is handled in full.
    async fn finish_webhook(&self, id: &str, handled: bool) -> Result<(), StoreError>;

    /// Forgets up to `limit` webhook ids claimed before `before` (handled, or claims
    /// that never finished), so the table does not grow with every payment for ever;
    /// answers how many went. A duplicate delivered after its id was forgotten is
    /// handled again, so `before` must lie further back than the provider retries.
    async fn prune_webhooks(&self, before: Millis, limit: u32) -> Result<u64, StoreError>;

    /// Writes the order as `pending_payment` before the provider is called. One order
    /// per hold: a second insert for the same hold returns the first. An order naming a
    /// seat the ledger has sold is refused (`SeatSold`) and nothing is written.
    async fn insert_order(&self, order: &Order) -> Result<InsertOrder, StoreError>;
    async fn order(&self, id: OrderId) -> Result<Option<Order>, StoreError>;
    async fn order_of_hold(&self, hold: HoldId) -> Result<Option<Order>, StoreError>;
    /// The buyer's orders that own seats, and of the others the `limit` most recent
    /// (by creation), oldest first: a buyer's history grows with every attempt,
    /// declined ones included, and a read of it must not, while a sale (bounded by the
    /// per-buyer limit of its event) is never pushed out by failed attempts.
    async fn orders_of_buyer(&self, buyer: BuyerId, limit: usize)
    -> Result<Vec<Order>, StoreError>;
    /// A page of the recovery sweep's work list (see `DueOrders`); a cursor, so a page
    /// costs the same however deep into the list it is.
    async fn orders_due(&self, q: &DueOrders<'_>) -> Result<Vec<Order>, StoreError>;
    /// Claims the sweep's next attempt at `order` as it was read: if it is still in
    /// `order.state` with `order.next_attempt_at`, one more attempt is counted and the
    /// next one is due at `next_attempt_at`. `false` when another path (or node) moved
    /// or claimed it first, which then leaves it alone.
    async fn claim_attempt(
        &self,
        order: &Order,
        next_attempt_at: Millis,
    ) -> Result<bool, StoreError>;

    /// Moves an order by `event` if its state allows, appending to its history.
    /// `payment_ref` is recorded when given. A move to another state starts the
    /// sweep's attempt count again. Events that move seats (`OrderEvent::moves_seats`)
    /// are refused as a `Conflict`: `commit` and `cancel_sale` apply those.
    async fn apply(
        &self,
        order: OrderId,
        event: OrderEvent,
        payment_ref: Option<&str>,
        now: Millis,
    ) -> Result<Order, LedgerError>;
    /// Authorized → committed: sold seats, buyer guard, outbox and history in one
    /// transaction. Concurrent commits may share a transaction (group commit); each
    /// gets its own outcome.
    async fn commit(&self, commit: &Commit) -> Result<CommitOutcome, StoreError>;
    /// A live checkout's two moves after the provider approved: `apply(Authorized,
    /// reference)` at `commit.now`, then `commit`, as one write where the store can. The
    /// authorization is recorded whatever the commit's outcome (a refused commit leaves
    /// the order `authorized` for its caller to void), and nothing is written when the
    /// move is refused (`Conflict`: a webhook or the sweep moved the order first). The
    /// authorized order and the commit's outcome come back. After a `Store` error the
    /// authorization may or may not be recorded (recovery asks the provider either way).
    async fn authorize_and_commit(
        &self,
        commit: &Commit,
        reference: &str,
    ) -> Result<(Order, CommitOutcome), LedgerError> {
        let authorized = self
            .apply(
                commit.order,
                OrderEvent::Authorized,
                Some(reference),
                commit.now,
            )
            .await?;
        Ok((authorized, self.commit(commit).await?))
    }
    /// pending_capture → cancelling (`OrderEvent::CaptureAbandoned`): the order's sold
    /// seats are deleted and its buyer's ticket count lowered, with an `order_cancelled`
    /// outbox row and a history line, in one transaction. `Conflict` (holding the
    /// state) when the order is in another state; nothing is written then.
    async fn cancel_sale(&self, order: OrderId, now: Millis) -> Result<Order, LedgerError>;
    /// A sale undone on request (`OrderEvent::CancelRequested`): confirmed → refunding,
    /// committed or pending_capture → cancelling, with the seats given back exactly as
    /// `cancel_sale` gives them. `Conflict` (holding the state) when the order owns no
    /// seats; nothing is written then. The claim that makes a refund happen once.
    async fn revoke_sale(&self, order: OrderId, now: Millis) -> Result<Order, LedgerError>;

    /// `revoke_sale` asked by the order's buyer: refused, nothing written, when a ticket
    /// of the order that its buyer still holds was admitted at a gate (`Used`) or when a
    /// ticket of the order was given to someone else by transfer (`GivenAway`: the
    /// revoke would take the recipient's ticket), decided in the same step as the claim,
    /// so no scan or transfer lands between the two. A ticket sold on through the
    /// exchange stands apart from the order and does not count.
    async fn revoke_unused_sale(&self, order: OrderId, now: Millis) -> Result<Order, LedgerError>;

    /// Closes the event's sale and records its cancellation job, in one transaction. A
    /// second call changes nothing and returns the job as it is.
    async fn cancel_event(
        &self,
        event: EventId,
        now: Millis,
    ) -> Result<EventCancellation, StoreError>;
    async fn event_cancellation(
        &self,
        event: EventId,
    ) -> Result<Option<EventCancellation>, StoreError>;
    /// Cancellation jobs not finished yet.
    async fn running_cancellations(&self) -> Result<Vec<EventCancellation>, StoreError>;
    /// Stores the job's progress if it is still as `read` (same pass and cursor):
    /// `false` when another node moved it first, which then leaves it alone.
    async fn save_cancellation(
        &self,
        read: &EventCancellation,
        next: &EventCancellation,
    ) -> Result<bool, StoreError>;
    /// A page of an event's orders in id order (see `EventOrders`).
    async fn orders_of_event(&self, q: &EventOrders) -> Result<Vec<Order>, StoreError>;
    /// How many of an event's orders are in each state (states with none left out).
    async fn order_states(&self, event: EventId) -> Result<Vec<(OrderState, u64)>, StoreError>;

    /// (seat id, buyer) of every sold seat of an event: the input of a rebuild.
    async fn sold_seats(&self, event: EventId) -> Result<Vec<(String, BuyerId)>, StoreError>;
    async fn audit_facts(&self) -> Result<AuditFacts, StoreError>;
}
