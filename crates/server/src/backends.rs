//! Chooses and opens the adapters: the ledger (SQLite file or PostgreSQL), the hot store
//! and queue (in-process or Redis / Redis Cluster) and the payment provider. The only
//! place besides tests that names a concrete backend.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use boxoffice_engine::ports::{
    ClaimThenHold, ClaimThenJoin, ClaimedHolds, ClaimedJoins, Clock, Exchange, IdempotencyStore,
    Ledger, Outbox, ProofMemory, SeatArbiter, Tickets, VelocityStore,
};
use boxoffice_engine::{BatchedReplays, Ports};
use boxoffice_payment_fake::FakeGateway;
use boxoffice_store_memory::{
    InMemoryArbiter, InMemoryQueue, MemoryClaimedHolds, MemoryIdempotency, MemoryProofs,
    MemoryVelocity,
};
use boxoffice_store_postgres::PostgresLedger;
use boxoffice_store_redis::{
    Prefix, RedisArbiter, RedisClaimedHolds, RedisClaimedJoins, RedisConn, RedisIdempotency,
    RedisProofs, RedisQueue, RedisVelocity,
};
use boxoffice_store_sqlite::SqliteLedger;

use crate::config::{Config, HotChoice, LedgerChoice};
use crate::kept_settings::KeptSettings;
use crate::payments;

/// Files inside the data directory.
pub const LEDGER_FILE: &str = "ledger.db";
pub use crate::payments::PROVIDER_FILE;
/// The operator's waiting-room settings when the queue is in-process.
pub const WAITING_SETTINGS_FILE: &str = "waiting-settings.json";

/// Everything the engine and the HTTP layer run on.
pub struct Backends {
    pub ports: Ports,
    /// Durable replays (checkout, event and queue writes), beside the ledger.
    pub idempotency: Arc<dyn IdempotencyStore>,
    /// The ledger's outbox: order histories, webhook endpoints, the relay's claims.
    pub outbox: Arc<dyn Outbox>,
    /// Fast replays for holds, beside the hot store.
    pub hold_idempotency: Arc<dyn IdempotencyStore>,
    /// Holds and releases under their claims in `hold_idempotency`: both in one call
    /// to Redis.
    pub hold_claims: Arc<dyn ClaimedHolds>,
    /// Queue joins under their claims, in a replay store of their own beside the hot
    /// store (the crowd's joins never push the holds' records out): the claim and the
    /// place in one call to Redis.
    pub join_claims: Arc<dyn ClaimedJoins>,
    /// Proof-of-possession memory (proof ids, hold keys), beside the hot store.
    pub proofs: Arc<dyn ProofMemory>,
    /// Tickets, gates and check-in, in the ledger's database.
    pub tickets: Arc<dyn Tickets>,
    /// The face-value exchange's listings and swaps, in the ledger's database.
    pub exchange: Arc<dyn Exchange>,
    /// Payment velocity counters and buyer clusters, beside the hot store.
    pub velocity: Arc<dyn VelocityStore>,
    /// Whether the hot store outlives this process (Redis): only then can the audit
    /// compare it with the ledger.
    pub hot_is_shared: bool,
    /// The fake provider when it is the one in use, so the wiring can start its own
    /// webhook delivery.
    pub fake: Option<Arc<FakeGateway>>,
}

pub async fn open(config: &Config, clock: Arc<dyn Clock>) -> anyhow::Result<Backends> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating the data directory {}", config.data_dir.display()))?;
    let (ledger, idempotency, outbox, tickets, exchange) = open_ledger(config).await?;
    let (payments, fake) = payments::open(config, clock.clone()).await?;
    let (hot, hot_is_shared) = open_hot(config).await?;
    let hold_claims = hot.claims.unwrap_or_else(|| {
        Arc::new(ClaimThenHold::new(
            hot.idempotency.clone(),
            hot.arbiter.clone(),
        ))
    });
    let join_claims = hot.joins.unwrap_or_else(|| {
        Arc::new(ClaimThenJoin::new(
            hot.join_idempotency.clone(),
            hot.queue.clone(),
        ))
    });
    let ports = Ports {
        arbiter: hot.arbiter,
        queue: hot.queue,
        ledger,
        payments,
        clock,
    };
    Ok(Backends {
        ports,
        idempotency,
        outbox,
        hold_idempotency: hot.idempotency,
        hold_claims,
        join_claims,
        proofs: hot.proofs,
        tickets,
        exchange,
        velocity: hot.velocity,
        hot_is_shared,
        fake,
    })
}

/// The ledger, the replay store beside it, its outbox, its tickets and its exchange
/// (all the ledger's own database).
type LedgerParts = (
    Arc<dyn Ledger>,
    Arc<dyn IdempotencyStore>,
    Arc<dyn Outbox>,
    Arc<dyn Tickets>,
    Arc<dyn Exchange>,
);

async fn open_ledger(config: &Config) -> anyhow::Result<LedgerParts> {
    match &config.ledger {
        LedgerChoice::Postgres(url) => {
            let ledger = PostgresLedger::connect(url, config.postgres.clone())
                .await
                .context("connecting to the PostgreSQL ledger")?;
            let idempotency = batched(Arc::new(ledger.idempotency()));
            let ledger = Arc::new(ledger);
            Ok((
                ledger.clone(),
                idempotency,
                ledger.clone(),
                ledger.clone(),
                ledger,
            ))
        }
        LedgerChoice::Sqlite => {
            let ledger =
                SqliteLedger::open(config.data_dir.join(LEDGER_FILE), config.sqlite.clone())
                    .context("opening the SQLite ledger")?;
            let idempotency = batched(Arc::new(ledger.idempotency()));
            let ledger = Arc::new(ledger);
            Ok((
                ledger.clone(),
                idempotency,
                ledger.clone(),
                ledger.clone(),
                ledger,
            ))
        }
    }
}

/// The ledger's replay store, its claims and kept answers written in batches: a crowd's
/// joins and checkouts each claim a key and keep an answer, one writer job a batch
/// instead of one each.
fn batched(store: Arc<dyn IdempotencyStore>) -> Arc<dyn IdempotencyStore> {
    Arc::new(BatchedReplays::new(store))
}

struct Hot {
    arbiter: Arc<dyn boxoffice_engine::ports::SeatArbiter>,
    queue: Arc<dyn boxoffice_engine::ports::QueueStore>,
    idempotency: Arc<dyn IdempotencyStore>,
    velocity: Arc<dyn VelocityStore>,
    proofs: Arc<dyn ProofMemory>,
    /// Holds under claims in one step, where the store can; else `ClaimThenHold`.
    claims: Option<Arc<dyn ClaimedHolds>>,
    /// Replays of queue joins, apart from the holds'.
    join_idempotency: Arc<dyn IdempotencyStore>,
    /// Joins under claims in one step, where the store can; else `ClaimThenJoin`.
    joins: Option<Arc<dyn ClaimedJoins>>,
}

async fn open_hot(config: &Config) -> anyhow::Result<(Hot, bool)> {
    match &config.hot {
        HotChoice::Memory => Ok((open_memory(config).await?, false)),
        HotChoice::Redis(urls) => Ok((open_redis(config, urls).await?, true)),
    }
}

async fn open_memory(config: &Config) -> anyhow::Result<Hot> {
    let replays = &config.idempotency;
    let settings = config.data_dir.join(WAITING_SETTINGS_FILE);
    let queue = KeptSettings::open(InMemoryQueue::new(), settings)
        .await
        .context("reading the kept waiting-room settings")?;
    let arbiter: Arc<dyn SeatArbiter> = Arc::new(InMemoryArbiter::new());
    let idempotency = Arc::new(MemoryIdempotency::with_limits(
        usize::try_from(replays.max_records).unwrap_or(usize::MAX),
        replays.retention_ms(),
    ));
    let claims = MemoryClaimedHolds::new(idempotency.clone(), arbiter.clone());
    Ok(Hot {
        arbiter,
        queue: Arc::new(queue),
        idempotency,
        join_idempotency: Arc::new(MemoryIdempotency::with_limits(
            usize::try_from(replays.max_join_records).unwrap_or(usize::MAX),
            replays.retention_ms(),
        )),
        velocity: Arc::new(MemoryVelocity::new()),
        proofs: Arc::new(MemoryProofs::new(
            usize::try_from(config.engine.proofs.max_remembered).unwrap_or(usize::MAX),
        )),
        claims: Some(Arc::new(claims)),
        joins: None,
    })
}

async fn open_redis(config: &Config, urls: &str) -> anyhow::Result<Hot> {
    let replays = &config.idempotency;
    let connect = config.redis.connect(config.redis_ca_file.clone());
    let conn = RedisConn::connect_with(urls, connect)
        .await
        .context("connecting to Redis")?;
    let prefix = Prefix::new(config.redis_prefix.clone()).context("redis_prefix")?;
    let arbiter = Arc::new(RedisArbiter::new(
        conn.clone(),
        prefix.clone(),
        config.redis.arbiter(),
    ));
    let idempotency = Arc::new(
        RedisIdempotency::new(conn.clone(), prefix.clone()).with_limits(
            replays.max_records,
            Duration::from_secs(replays.retention_s),
        ),
    );
    let queue = RedisQueue::new(conn.clone(), prefix.clone());
    let claims =
        RedisClaimedHolds::new(arbiter.clone(), idempotency.clone()).counting_finished_in(&queue);
    let join_prefix = Prefix::new(format!("{}:joins", prefix.as_str())).context("redis_prefix")?;
    let join_idempotency = Arc::new(
        RedisIdempotency::new(conn.clone(), join_prefix).with_limits(
            replays.max_join_records,
            Duration::from_secs(replays.retention_s),
        ),
    );
    let queue = Arc::new(queue);
    let joins = RedisClaimedJoins::new(queue.clone(), join_idempotency.clone());
    Ok(Hot {
        arbiter,
        queue,
        velocity: Arc::new(RedisVelocity::new(conn.clone(), prefix.clone())),
        proofs: Arc::new(
            RedisProofs::new(conn.clone(), prefix.clone())
                .with_limit(config.engine.proofs.max_remembered),
        ),
        idempotency,
        claims: Some(Arc::new(claims)),
        join_idempotency,
        joins: Some(Arc::new(joins)),
    })
}

/// Creates or upgrades the ledger's schema.
pub async fn migrate(config: &Config) -> anyhow::Result<String> {
    if let LedgerChoice::Postgres(url) = &config.ledger {
        let applied = boxoffice_store_postgres::migrate(url, &config.postgres)
            .await
            .context("migrating the PostgreSQL ledger")?;
        return Ok(format!(
            "PostgreSQL ledger is up to date ({} migrations applied now)",
            applied.len()
        ));
    }
    std::fs::create_dir_all(&config.data_dir)?;
    let path = config.data_dir.join(LEDGER_FILE);
    SqliteLedger::open(&path, config.sqlite.clone()).context("migrating the SQLite ledger")?;
    Ok(format!("ledger at {} is up to date", path.display()))
}
