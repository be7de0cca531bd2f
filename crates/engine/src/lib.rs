//! Use cases of an on-sale and the ports they call. Nothing here names a concrete
//! backend: the binary and the tests choose adapters and hand them in as `Arc<dyn _>`.

mod admission;
mod audit;
mod availability;
mod buyers;
mod cancel;
mod catalog;
mod checkout;
mod commit;
pub mod dashboard;
mod drift;
mod error;
mod event_cancel;
pub mod events_out;
pub mod exchange;
mod expiry;
mod holds;
mod late;
mod order_view;
mod overview;
mod pacing;
mod per_thread;
pub mod ports;
mod possession;
mod queue;
mod recovery;
mod refunds;
pub mod relay;
mod replay_batches;
pub mod replays;
mod settle;
mod tail_hash;
pub mod tickets;
mod timing;
mod velocity;
mod verified;
pub mod waiting;
mod webhooks;
pub mod worker;

use std::sync::Arc;

use boxoffice_domain::token::KeyRing;
use serde::Deserialize;

pub use audit::AuditReport;
pub use availability::{AvailabilitySnapshot, availability_delta};
pub use buyers::{BuyerSession, BuyerToken, BuyersConfig, Identity, NewBuyer};
pub use catalog::EventEntry;
pub use checkout::{BUYER_ORDERS_SHOWN, CheckoutOutcome, KeepConfirmed};
pub use error::{EngineError, Resource};
pub use holds::{Admitted, HoldInput, SeatSelection};
pub use order_view::{OrderView, Ticket};
pub use overview::{EventOverview, MAX_LISTED_EVENTS, SaleChange};
pub use possession::{ProofConfig, ProofInput, ProofRefusal};
pub use queue::{JoinOutcome, JoinPass, Joiner, PowSolution, QueueStatus, WaitStatus};
pub use refunds::Canceller;
pub use replay_batches::BatchedReplays;
pub use velocity::{MAX_SIGNALS_PAGE, Origin, SignalCluster};
pub use webhooks::{WebhookReceipt, WebhookRejected};

use ports::{Clock, IdentityProvider, Ledger, PaymentGateway, QueueStore, SeatArbiter};

/// The adapters an engine runs on.
#[derive(Clone)]
pub struct Ports {
    pub arbiter: Arc<dyn SeatArbiter>,
    pub queue: Arc<dyn QueueStore>,
    pub ledger: Arc<dyn Ledger>,
    pub payments: Arc<dyn PaymentGateway>,
    pub clock: Arc<dyn Clock>,
}

/// Engine settings; every field has a documented default.
#[derive(Clone, Debug, Deserialize)]
#[serde(default)]
pub struct EngineConfig {
    /// How long an admission token lets a buyer hold seats.
    pub admission_token_ttl_s: u64,
    /// How long a queue ticket stays valid.
    pub queue_ticket_ttl_s: u64,
    /// How long a buyer session token stays valid.
    pub buyer_token_ttl_s: u64,
    /// Unfinished orders untouched for this long are driven on by the recovery sweep.
    /// Longer than any provider call, so the sweep never races a live checkout.
    pub recovery_after_s: u64,
    /// The longest a ledger statement may run (PostgreSQL's `statement_timeout`; 0
    /// where a write cannot be under way unseen, as on the SQLite ledger's one writer).
    /// Set by the server from the ledger's options, not read from `[engine]`: an event's
    /// cancellation passes again no sooner than this after its last pass, so an order
    /// written by a statement that began before the cancellation is found.
    #[serde(skip)]
    pub ledger_statement_timeout_ms: u64,
    /// How often admission advances "serving up to" (one batch per tick).
    pub admission_interval_ms: u64,
    /// Suggested pause between a buyer's queue status polls near the front of the
    /// line (jittered); farther back, a quarter of the buyer's expected wait.
    pub poll_after_ms: u64,
    /// The longest pause suggested between two status polls, however far back.
    pub max_poll_after_ms: u64,
    /// The waiting room: default rules, rate limits, the public document's lifetime.
    pub waiting: waiting::WaitingConfig,
    /// Longest wait between two recovery attempts at one order (a capture retried, a
    /// provider asked again); the wait doubles from `recovery_after_s` up to this.
    #[serde(alias = "capture_retry_max_s")]
    pub recovery_retry_max_s: u64,
    /// Orders the recovery sweep reads per page.
    pub recovery_page: usize,
    /// Most provider calls the recovery sweep has in flight at once (it settles that
    /// many orders concurrently).
    pub recovery_in_flight: usize,
    /// Most provider calls the recovery sweep starts per second (0: no limit). Unset:
    /// four fifths of the provider's own rate limit (Stripe: 20), which live checkouts
    /// share, or 200 for a provider without one (the stand-in).
    pub recovery_calls_per_s: Option<u32>,
    /// Capture retries of an order in `pending_capture` before its sale is cancelled
    /// and its seats go back on sale.
    pub capture_max_attempts: u32,
    /// Proofs of possession: how old a proof may be, and how many are remembered.
    pub proofs: ProofConfig,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            admission_token_ttl_s: 900,
            queue_ticket_ttl_s: 86_400,
            buyer_token_ttl_s: 30 * 86_400,
            recovery_after_s: 30,
            ledger_statement_timeout_ms: 0,
            admission_interval_ms: 2_000,
            poll_after_ms: 3_000,
            max_poll_after_ms: 30_000,
            waiting: waiting::WaitingConfig::default(),
            recovery_retry_max_s: 3_600,
            recovery_page: 200,
            recovery_in_flight: 50,
            recovery_calls_per_s: None,
            capture_max_attempts: 48,
            proofs: ProofConfig::default(),
        }
    }
}

/// The on-sale engine: every use case, over the ports it was built with.
pub struct Engine {
    ports: Ports,
    /// The provider as the recovery sweep calls it: paced (see `pacing`).
    recovery_payments: Arc<dyn PaymentGateway>,
    keys: KeyRing,
    config: EngineConfig,
    catalog: catalog::CatalogCache,
    /// The per-event sweeps other nodes hold (`expiry`).
    leases: expiry::Leases,
    waiting: waiting::WaitingRoom,
    verified: verified::VerifiedTokens,
    /// This process's life, drawn at start: webhook claims name it (`webhooks`).
    incarnation: ports::Incarnation,
    snapshots: availability::Snapshots,
    dashboards: dashboard::Dashboards,
    buyers: BuyersConfig,
    identity: Option<Arc<dyn IdentityProvider>>,
    /// The hosted human-check verifiers, when this server has accounts with any.
    human: Option<Arc<dyn ports::HumanVerifier>>,
    /// Order events out: histories, webhook endpoints, dead letters (`events_out`).
    outbox: Option<Arc<dyn ports::Outbox>>,
    /// This node publishes order events to NATS (`[nats]` is set), so the NATS sink is
    /// not to be retired through it (`events_out`).
    publishes_to_nats: bool,
    /// The public keys of the ring as a JSON Web Key Set, serialized once.
    jwks: bytes::Bytes,
    /// The after-sale record (tickets, gates, check-in), when the ledger keeps one.
    tickets: Option<Arc<dyn ports::Tickets>>,
    /// The face-value exchange's record, when the ledger keeps one.
    exchange: Option<Arc<dyn ports::Exchange>>,
    /// Payment velocity counters and buyer clusters (`velocity`); without them the
    /// events' velocity rules are not enforced.
    velocity: Option<Arc<dyn ports::VelocityStore>>,
    /// Proof ids of proof of possession (`possession`).
    proofs: Option<Arc<dyn ports::ProofMemory>>,
    /// Proofs' public keys decoded, by thumbprint (`possession`).
    proof_keys: boxoffice_domain::possession::KeyCache,
    /// The last answer of `ledger_answers`, and when it was asked.
    readiness: catalog::Readiness,
}

impl Engine {
    pub fn new(ports: Ports, keys: KeyRing, config: EngineConfig) -> Engine {
        let proof_keys = boxoffice_domain::possession::KeyCache::new(config.proofs.key_cache);
        let jwks = bytes::Bytes::from(keys.jwks());
        let per_s = config
            .recovery_calls_per_s
            .unwrap_or_else(|| pacing::default_rate(&*ports.payments));
        let recovery_payments = Arc::new(pacing::Paced::new(
            ports.payments.clone(),
            config.recovery_in_flight,
            per_s,
        ));
        Engine {
            ports,
            recovery_payments,
            keys,
            config,
            catalog: catalog::CatalogCache::default(),
            leases: expiry::Leases::default(),
            waiting: waiting::WaitingRoom::default(),
            verified: verified::VerifiedTokens::default(),
            incarnation: ports::Incarnation::random(),
            snapshots: availability::Snapshots::default(),
            dashboards: dashboard::Dashboards::default(),
            buyers: BuyersConfig::default(),
            identity: None,
            human: None,
            outbox: None,
            publishes_to_nats: false,
            jwks,
            tickets: None,
            exchange: None,
            velocity: None,
            proofs: None,
            proof_keys,
            readiness: catalog::Readiness::default(),
        }
    }

    pub fn ports(&self) -> &Ports {
        &self.ports
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// GET /.well-known/jwks.json: the keys an edge verifies tickets and admission
    /// tokens with (empty when they are HS256).
    pub fn jwks(&self) -> bytes::Bytes {
        self.jwks.clone()
    }
}
