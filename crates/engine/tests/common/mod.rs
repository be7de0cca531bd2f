//! The engine over the in-process adapters: the SQLite ledger in a temp directory, the
//! in-memory arbiter and the fake provider's book, with a `ManualClock`. The durable
//! parts (`Durable`) outlive a `Node`, so a test can restart the engine over them as a
//! crash would (a fresh hot store rebuilt from the ledger).
#![allow(dead_code)]

pub mod racing;
pub mod watched;

use std::sync::Arc;

use boxoffice_domain::catalog::{PriceTier, RowSpec, SectionSpec};
use boxoffice_domain::token::KeyRing;
use boxoffice_domain::{
    BuyerId, EventId, EventSpec, HoldId, HoldState, Millis, Money, OrderId, SaleSettings,
};
use boxoffice_engine::ports::{
    HoldRequest, HoldView, Ledger, ManualClock, Order, PaymentGateway, QueueStore, SeatChoice,
};
use boxoffice_engine::{BuyerSession, CheckoutOutcome, Engine, EngineConfig, EngineError, Ports};
use boxoffice_payment_fake::{FakeGateway, FakeGatewayConfig, methods};
use boxoffice_store_memory::{InMemoryArbiter, InMemoryQueue};
use boxoffice_store_sqlite::{SqliteLedger, SqliteOptions};

pub use boxoffice_engine::ports::{Clock, SeatArbiter};
pub use watched::Watched;

/// Where every test's clock starts.
pub const T0: Millis = Millis(1_800_000_000_000);

/// What survives a restart: the ledger, the provider's book and the clock.
pub struct Durable {
    pub ledger: Arc<SqliteLedger>,
    pub fake: Arc<FakeGateway>,
    pub clock: Arc<ManualClock>,
    _dir: tempfile::TempDir,
}

impl Durable {
    pub fn new(fake: FakeGatewayConfig) -> Durable {
        let dir = tempfile::tempdir().expect("a temp directory");
        let ledger = SqliteLedger::open(dir.path().join("ledger.db"), SqliteOptions::default())
            .expect("the ledger opens");
        let fake = FakeGateway::open(dir.path().join("provider.db"), fake).expect("the fake");
        Durable {
            ledger: Arc::new(ledger),
            fake: Arc::new(fake),
            clock: Arc::new(ManualClock::new(T0)),
            _dir: dir,
        }
    }
}

/// One engine process: its own hot store, over the durable parts.
pub struct Node {
    pub engine: Arc<Engine>,
    pub arbiter: Arc<InMemoryArbiter>,
    /// The provider as this node calls it, counting calls in flight.
    pub payments: Arc<Watched>,
}

pub fn node(d: &Durable, config: EngineConfig) -> Node {
    node_with_ledger(d, config, d.ledger.clone())
}

/// A node whose ledger is `ledger` (a wrapper around the durable one, for races).
pub fn node_with_ledger(d: &Durable, config: EngineConfig, ledger: Arc<dyn Ledger>) -> Node {
    node_sharing(d, config, ledger, Arc::new(InMemoryQueue::new()))
}

/// A node whose ledger is `ledger` and whose queue store is `queue`, which other nodes
/// may share (as the nodes of a cluster share Redis).
pub fn node_sharing(
    d: &Durable,
    config: EngineConfig,
    ledger: Arc<dyn Ledger>,
    queue: Arc<dyn QueueStore>,
) -> Node {
    node_sharing_hot(d, config, ledger, queue, Arc::new(InMemoryArbiter::new()))
}

/// A node sharing the ledger, the queue store and the seat arbiter with other nodes:
/// a cluster's node, whose hot store is everyone's.
pub fn node_sharing_hot(
    d: &Durable,
    config: EngineConfig,
    ledger: Arc<dyn Ledger>,
    queue: Arc<dyn QueueStore>,
    arbiter: Arc<InMemoryArbiter>,
) -> Node {
    node_reaching_hot_through(d, config, ledger, queue, arbiter.clone(), arbiter)
}

/// A node whose hot store is `arbiter`, which the engine reaches through `hot` (a
/// wrapper around it, for races).
pub fn node_reaching_hot_through(
    d: &Durable,
    config: EngineConfig,
    ledger: Arc<dyn Ledger>,
    queue: Arc<dyn QueueStore>,
    hot: Arc<dyn SeatArbiter>,
    arbiter: Arc<InMemoryArbiter>,
) -> Node {
    let payments = Arc::new(Watched::new(d.fake.clone() as Arc<dyn PaymentGateway>));
    let ports = Ports {
        arbiter: hot,
        queue,
        ledger,
        payments: payments.clone(),
        clock: d.clock.clone(),
    };
    let keys = KeyRing::new(vec![("test".into(), vec![7; 32])]).expect("a key ring");
    Node {
        engine: Arc::new(Engine::new(ports, keys, config)),
        arbiter,
        payments,
    }
}

/// A node whose engine also keeps tickets and the exchange, in the durable ledger.
pub fn node_with_after_sale(d: &Durable, config: EngineConfig) -> Node {
    let n = node(d, config);
    let engine = Arc::try_unwrap(n.engine).unwrap_or_else(|_| unreachable!("not shared yet"));
    let engine = engine
        .with_tickets(d.ledger.clone())
        .with_exchange(d.ledger.clone());
    Node {
        engine: Arc::new(engine),
        ..n
    }
}

/// An event of `rows` rows of ten seats in section `A` (labels `A-<row>-<n>`), open.
pub async fn open_event(engine: &Engine, rows: u32, max_per_buyer: u32) -> EventId {
    let id = scheduled_event(engine, rows, max_per_buyer).await;
    engine.open_sale(id).await.expect("opened");
    id
}

/// As [`open_event`], not open yet.
pub async fn scheduled_event(engine: &Engine, rows: u32, max_per_buyer: u32) -> EventId {
    scheduled_event_with(engine, rows, max_per_buyer, |_| {}).await
}

/// As [`scheduled_event`], its sale settings changed by `sale`.
pub async fn scheduled_event_with(
    engine: &Engine,
    rows: u32,
    max_per_buyer: u32,
    sale: impl FnOnce(&mut SaleSettings),
) -> EventId {
    let mut spec = EventSpec {
        venue: None,
        opens_at: None,
        name: format!("Engine test {}", uuid::Uuid::new_v4()),
        currency: "EUR".into(),
        tiers: vec![PriceTier {
            key: "STD".into(),
            name: "Standard".into(),
            price: Money(5_000),
        }],
        sections: vec![SectionSpec {
            key: "A".into(),
            name: "Stand A".into(),
            tier: "STD".into(),
            quality: 1,
            rows: (1..=rows)
                .map(|r| RowSpec {
                    label: r.to_string(),
                    seats: 10,
                    tier: None,
                })
                .collect(),
            ga_capacity: None,
        }],
        sale: SaleSettings {
            max_tickets_per_buyer: max_per_buyer,
            hold_ttl_s: 600,
            payment_grace_s: 120,
            ..SaleSettings::default()
        },
    };
    sale(&mut spec.sale);
    engine.create_event(&spec).await.expect("created").event.id
}

/// A new buyer holding the named seats: (who, hold).
pub async fn hold(engine: &Engine, event: EventId, labels: &[&str]) -> (BuyerSession, HoldView) {
    let who = BuyerSession {
        buyer: BuyerId::random(),
        session: "test-session".into(),
    };
    let view = hold_for(engine, event, &who, labels)
        .await
        .expect("the seats are free");
    (who, view)
}

/// `who` holds the named seats, through the hot store as the hold use case does.
pub async fn hold_for(
    engine: &Engine,
    event: EventId,
    who: &BuyerSession,
    labels: &[&str],
) -> Result<HoldView, boxoffice_engine::ports::ArbiterError> {
    let entry = engine.event(event).await.expect("the event");
    let seats = labels.iter().map(|l| entry.seat_index[*l]).collect();
    let now = engine.ports().clock.now();
    let req = HoldRequest {
        hold: HoldId::random(event),
        buyer: who.buyer,
        choice: SeatChoice::Named(seats),
        expires_at: now.plus_secs(600),
        key: None,
    };
    engine.ports().arbiter.hold(&req, now).await
}

pub async fn checkout(
    engine: &Engine,
    who: &BuyerSession,
    hold: &HoldView,
    method: &str,
) -> Result<CheckoutOutcome, EngineError> {
    engine.checkout(who, hold.hold, method).await
}

/// A node over `d`, an open event, and a buyer's checkout of seats A-1-1 and A-1-2
/// authorized at the provider whose answer never came back (202, the order open):
/// (node, event, buyer, hold, order).
pub async fn authorized_answer_lost(d: &Durable) -> (Node, EventId, BuyerSession, HoldView, Order) {
    authorized_answer_lost_on(node(d, EngineConfig::default())).await
}

/// As [`authorized_answer_lost`], on the node `n`.
pub async fn authorized_answer_lost_on(n: Node) -> (Node, EventId, BuyerSession, HoldView, Order) {
    let event = open_event(&n.engine, 1, 4).await;
    let (who, h) = hold(&n.engine, event, &["A-1-1", "A-1-2"]).await;
    let out = checkout(&n.engine, &who, &h, methods::TIMEOUT_AFTER_CHARGE).await;
    assert!(matches!(out, Ok(CheckoutOutcome::Pending(_))), "{out:?}");
    let order = order_of(&n.engine, &h).await;
    (n, event, who, h, order)
}

/// The order a hold's checkout wrote.
pub async fn order_of(engine: &Engine, hold: &HoldView) -> Order {
    engine
        .ports()
        .ledger
        .order_of_hold(hold.hold)
        .await
        .expect("the ledger answers")
        .expect("the hold has an order")
}

pub async fn order(engine: &Engine, id: OrderId) -> Order {
    engine
        .ports()
        .ledger
        .order(id)
        .await
        .expect("the ledger answers")
        .expect("the order exists")
}

/// The hold as the hot store has it now, if it has it.
pub async fn hot_hold(engine: &Engine, hold: &HoldView) -> Option<HoldView> {
    engine
        .ports()
        .arbiter
        .get(hold.hold)
        .await
        .expect("the hot store answers")
}

pub async fn hold_state(engine: &Engine, hold: &HoldView) -> Option<HoldState> {
    hot_hold(engine, hold).await.map(|h| h.state)
}

/// Whether each named seat is free in the hot store (its availability bit).
pub async fn free(engine: &Engine, event: EventId, labels: &[&str]) -> Vec<bool> {
    let entry = engine.event(event).await.expect("the event");
    let bits = engine
        .ports()
        .arbiter
        .availability(event)
        .await
        .expect("availability");
    labels
        .iter()
        .map(|l| {
            let s = entry.seat_index[*l];
            bits[s as usize / 8] & (0x80 >> (s % 8)) != 0
        })
        .collect()
}

/// Whether each named seat is sold in the hot store.
pub async fn sold_in_hot_store(engine: &Engine, event: EventId, labels: &[&str]) -> Vec<bool> {
    let entry = engine.event(event).await.expect("the event");
    let sold = engine
        .ports()
        .arbiter
        .sold_seats(event)
        .await
        .expect("sold seats");
    labels
        .iter()
        .map(|l| sold.contains(&entry.seat_index[*l]))
        .collect()
}

/// Runs the recovery sweep until a step does nothing (at most `max` steps).
pub async fn recover_until_idle(engine: &Engine, max: usize) -> usize {
    let mut done = 0;
    for _ in 0..max {
        let step = engine.recovery_step().await.expect("the sweep runs");
        if step.idle() {
            return done;
        }
        done += step.done;
    }
    panic!("the recovery sweep was still busy after {max} steps");
}

/// Labels `A-<row>-<n>` of the first `n` seats, row by row.
pub fn labels(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("A-{}-{}", i / 10 + 1, i % 10 + 1))
        .collect()
}
