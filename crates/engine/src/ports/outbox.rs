//! The ledger's outbox as the relay sees it, and the order history it is made from.
//! Every line of an order's history becomes one outbox event in the same transaction
//! (the ledgers do it by trigger, so every order move has one), and every event one
//! delivery per sink. Relays claim deliveries with a lease, so several nodes relaying
//! one ledger share the work instead of repeating it.

use async_trait::async_trait;
use boxoffice_domain::{EventId, Millis, OrderId, OrderState};
use serde::Serialize;

use super::StoreError;

/// One line of an order's history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct HistoryLine {
    /// The line's place in the order's history, from 1; with the order id it is the
    /// event id of the outbox (`<order_id>.<sequence>`).
    #[schema(minimum = 1)]
    pub sequence: u32,
    /// What happened: `created`, or the move: `authorized`, `declined`, `committed`,
    /// `captured`, `capture_failed`, `voided`, `refunded`, ...
    pub event: String,
    /// null for the creation.
    #[schema(required)]
    pub from_state: Option<OrderState>,
    pub to_state: OrderState,
    pub at: Millis,
}

/// An event of the outbox: a history line with the order it belongs to, as the JSON
/// document every sink receives (`payload`, see the README's "Order events out").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutboxEvent {
    /// The outbox row.
    pub row: i64,
    pub order: OrderId,
    /// The sale the order belongs to.
    pub sale_event: EventId,
    pub sequence: u32,
    /// `order.<history event>`, e.g. `order.committed`.
    pub kind: String,
    pub payload: String,
    pub created_at: Millis,
}

impl OutboxEvent {
    /// The id consumers dedupe on: `<order id>.<sequence>`, the same however often and
    /// by whichever node the event is delivered.
    pub fn id(&self) -> String {
        format!("{}.{}", self.order, self.sequence)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SinkKind {
    /// An operator's HTTPS (or HTTP) endpoint; deliveries are signed with `secret`.
    Webhook { url: String, secret: String },
    /// NATS JetStream, as configured on the relaying node.
    Nats,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sink {
    pub id: String,
    pub kind: SinkKind,
    pub created_at: Millis,
}

/// The id of the JetStream sink.
pub const NATS_SINK: &str = "nats";

/// One event waiting for one sink, claimed by a relay until `lease_until`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub sink: String,
    pub event: OutboxEvent,
    /// Attempts so far, this one included.
    pub attempts: u32,
}

/// A claim of the next deliveries due.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimDeliveries<'a> {
    /// Who claims (a node's relay): only its own claims can it give back.
    pub owner: &'a str,
    pub now: Millis,
    /// The claim lapses then, and another relay may take the delivery again.
    pub lease_until: Millis,
    pub limit: usize,
    /// Whether this relay can deliver to the NATS sink.
    pub nats: bool,
}

/// A delivery that ran out of attempts or age, kept until it is replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetter {
    pub event: OutboxEvent,
    pub attempts: u32,
    pub last_error: String,
    pub dead_at: Millis,
}

/// How a failed attempt ends: tried again at `retry_at`, or, when `dead`, kept as a
/// dead letter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure<'a> {
    pub owner: &'a str,
    pub retry_at: Millis,
    pub dead: bool,
    pub error: &'a str,
    pub now: Millis,
}

#[async_trait]
pub trait Outbox: Send + Sync {
    /// The order's history, oldest first; empty for an unknown order.
    async fn history(&self, order: OrderId) -> Result<Vec<HistoryLine>, StoreError>;

    /// Adds a sink; events written from now on are delivered to it. Adding a sink whose
    /// id exists changes nothing.
    async fn add_sink(&self, sink: &Sink) -> Result<(), StoreError>;
    async fn sinks(&self) -> Result<Vec<Sink>, StoreError>;
    /// Removes a sink and whatever it had still to receive; `false` when there was none.
    async fn remove_sink(&self, id: &str) -> Result<bool, StoreError>;

    /// Claims up to `limit` deliveries due at `now`, oldest first, each until
    /// `lease_until`. A delivery is never claimed while another relay's lease on it
    /// runs, nor while an earlier event of its order is still waiting for the same sink
    /// (dead letters excepted): per sink, an order's events go out in order.
    async fn claim(&self, q: &ClaimDeliveries<'_>) -> Result<Vec<Delivery>, StoreError>;
    /// Gives back every claim not held by `owner`, at once rather than when its lease
    /// lapses; returns how many. Only for a ledger that one process relays from (embedded
    /// mode, whose data directory is locked): any other claimant is a dead incarnation.
    async fn release_claims(&self, owner: &str) -> Result<u64, StoreError>;
    /// The sink has the event: its delivery is done.
    async fn delivered(&self, sink: &str, row: i64) -> Result<(), StoreError>;
    /// An attempt failed; ignored unless `f.owner` still holds the claim.
    async fn failed(&self, sink: &str, row: i64, f: &Failure<'_>) -> Result<(), StoreError>;

    /// A sink's dead letters, oldest first.
    async fn dead_letters(&self, sink: &str, limit: usize) -> Result<Vec<DeadLetter>, StoreError>;
    /// Makes a sink's dead letters due again at `now`, with their attempts counted
    /// afresh; returns how many.
    async fn replay_dead(&self, sink: &str, now: Millis) -> Result<u64, StoreError>;
}

/// Why a sink did not take an event; the text is kept with the delivery for the
/// operator (status line, connection error), never shown to buyers.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("{0}")]
pub struct PublishError(pub String);

/// Hands one event to one sink: a signed webhook POST, a JetStream publish. `Ok` only
/// once the sink has it (a 2xx answer, a JetStream acknowledgement).
#[async_trait]
pub trait EventPublisher: Send + Sync {
    /// Whether this node can reach the NATS sink (it is configured with one).
    fn nats(&self) -> bool;
    async fn publish(&self, sink: &Sink, event: &OutboxEvent) -> Result<(), PublishError>;
}
