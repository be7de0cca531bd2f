//! Schema migrations, embedded in the binary so `boxoffice serve` and `boxoffice
//! migrate` need no files beside them. Applied versions are recorded in
//! `schema_migrations`. Each migration runs in its own transaction under an advisory
//! lock, so several nodes starting at once apply it exactly once and the others wait
//! for it instead of failing on half-made tables.

use boxoffice_engine::ports::StoreError;
use sqlx::{Connection, PgConnection, PgPool};

use crate::conn::{self, db};
use crate::options::PostgresOptions;

/// (version, name, SQL), in the order they must run.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "ledger",
        include_str!("../../../migrations/postgres/0001_ledger.sql"),
    ),
    (
        2,
        "commit_batch",
        include_str!("../../../migrations/postgres/0002_commit_batch.sql"),
    ),
    (
        3,
        "idempotency_holders",
        include_str!("../../../migrations/postgres/0003_idempotency_holders.sql"),
    ),
    (
        4,
        "order_retry_schedule",
        include_str!("../../../migrations/postgres/0004_order_retry_schedule.sql"),
    ),
    (
        5,
        "tickets",
        include_str!("../../../migrations/postgres/0005_tickets.sql"),
    ),
    (
        6,
        "event_cancellations",
        include_str!("../../../migrations/postgres/0006_event_cancellations.sql"),
    ),
    (
        7,
        "order_events_out",
        include_str!("../../../migrations/postgres/0007_order_events_out.sql"),
    ),
    (
        8,
        "ticket_transfers",
        include_str!("../../../migrations/postgres/0008_ticket_transfers.sql"),
    ),
    (
        9,
        "processed_webhooks",
        include_str!("../../../migrations/postgres/0009_processed_webhooks.sql"),
    ),
    (
        10,
        "fairness_journal",
        include_str!("../../../migrations/postgres/0010_fairness_journal.sql"),
    ),
    (
        11,
        "attendee_names",
        include_str!("../../../migrations/postgres/0011_attendee_names.sql"),
    ),
    (
        12,
        "exchange",
        include_str!("../../../migrations/postgres/0012_exchange.sql"),
    ),
    (
        13,
        "line_journal",
        include_str!("../../../migrations/postgres/0013_line_journal.sql"),
    ),
    (
        14,
        "ticket_standing",
        include_str!("../../../migrations/postgres/0014_ticket_standing.sql"),
    ),
    (
        15,
        "line_positions_unique",
        include_str!("../../../migrations/postgres/0015_line_positions_unique.sql"),
    ),
    (
        16,
        "processed_webhooks_pruned",
        include_str!("../../../migrations/postgres/0016_processed_webhooks_pruned.sql"),
    ),
    (
        17,
        "line_settings",
        include_str!("../../../migrations/postgres/0017_line_settings.sql"),
    ),
    (
        18,
        "history_in_order",
        include_str!("../../../migrations/postgres/0018_history_in_order.sql"),
    ),
    (
        19,
        "swaps_refunding_let_go",
        include_str!("../../../migrations/postgres/0019_swaps_refunding_let_go.sql"),
    ),
    (
        20,
        "history_lock_only_when_needed",
        include_str!("../../../migrations/postgres/0020_history_lock_only_when_needed.sql"),
    ),
];

/// Any fixed number works; it only has to be the same in every node of a cluster.
const MIGRATION_LOCK: i64 = 0x626f_786f_6666_6963; // "boxoffic"

const TRACKING_TABLE: &str = "CREATE TABLE schema_migrations (
    version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())";

/// Brings the database at `url` up to the newest schema and returns the versions it
/// applied; empty when it was already current.
pub async fn migrate(url: &str, options: &PostgresOptions) -> Result<Vec<i64>, StoreError> {
    let connect = conn::connect_options(url, options)?;
    let pool = conn::pool(connect, 1, options);
    let applied = run(&pool).await;
    pool.close().await;
    applied
}

pub(crate) async fn run(pool: &PgPool) -> Result<Vec<i64>, StoreError> {
    let mut conn = pool.acquire().await.map_err(db)?;
    ensure_tracking_table(&mut conn).await.map_err(|e| {
        StoreError::new(format_args!(
            "postgres: creating schema_migrations failed: {e}"
        ))
    })?;
    let mut applied = Vec::new();
    for &(version, name, sql) in MIGRATIONS {
        let done = apply_one(&mut conn, version, name, sql).await;
        if done.map_err(|e| {
            StoreError::new(format_args!(
                "postgres: migration {version} ({name}) failed: {e}"
            ))
        })? {
            applied.push(version);
        }
    }
    Ok(applied)
}

/// Creates `schema_migrations` if it is missing. Asked first, not left to `CREATE TABLE
/// IF NOT EXISTS`: on an existing table that sends a notice ("already exists,
/// skipping") which every client prints, so a first `boxoffice migrate` looked as if
/// it had gone wrong.
async fn ensure_tracking_table(conn: &mut PgConnection) -> sqlx::Result<()> {
    let mut tx = conn.begin().await?;
    lock(&mut tx).await?;
    let exists: bool = sqlx::query_scalar("SELECT to_regclass('schema_migrations') IS NOT NULL")
        .fetch_one(&mut *tx)
        .await?;
    if !exists {
        sqlx::raw_sql(TRACKING_TABLE).execute(&mut *tx).await?;
    }
    tx.commit().await
}

/// Waits for any other node migrating now; held until the transaction ends. Neither the
/// wait nor the migration's statements are bound by the connection's
/// `statement_timeout` (10 s by default, for the sale's statements): an index built on
/// a ledger of some size takes longer, and was cancelled, its migration never applied
/// and every node waiting behind it failing to start. Waits for a table's lock are
/// bounded by `lock_timeout` instead.
async fn lock(tx: &mut sqlx::PgTransaction<'_>) -> sqlx::Result<()> {
    sqlx::query("SET LOCAL statement_timeout = 0")
        .execute(&mut **tx)
        .await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(MIGRATION_LOCK)
        .execute(&mut **tx)
        .await?;
    // The migration's own locks are bounded, though: a DDL waiting for a table's lock
    // behind a long transaction queues every reader and writer of that table behind it.
    // Past this the migration fails (nothing applied) and the node's start with it.
    sqlx::query("SET LOCAL lock_timeout = '10s'")
        .execute(&mut **tx)
        .await
        .map(drop)
}

/// Applies one migration unless it is recorded; a failure leaves the database as it
/// was before it (PostgreSQL DDL is transactional).
async fn apply_one(
    conn: &mut PgConnection,
    version: i64,
    name: &str,
    sql: &'static str,
) -> sqlx::Result<bool> {
    let mut tx = conn.begin().await?;
    lock(&mut tx).await?;
    let done: Option<i64> =
        sqlx::query_scalar("SELECT version FROM schema_migrations WHERE version = $1")
            .bind(version)
            .fetch_optional(&mut *tx)
            .await?;
    if done.is_some() {
        return Ok(false);
    }
    sqlx::raw_sql(sql).execute(&mut *tx).await?;
    sqlx::query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)")
        .bind(version)
        .bind(name)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(true)
}
