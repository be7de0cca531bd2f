//! Opening connections with the settings every ledger connection needs, and the one
//! place sqlx errors become the port's `StoreError`.

use boxoffice_engine::ports::StoreError;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, PgPool};

use crate::options::PostgresOptions;

/// An sqlx failure as the port sees it: the store itself failed.
pub(crate) fn db(e: sqlx::Error) -> StoreError {
    let text = e.to_string();
    // sqlx reports a refused server certificate as an I/O error ("error communicating
    // with database"); say what to check instead.
    if matches!(e, sqlx::Error::Tls(_)) || text.contains("certificate") {
        return StoreError::new(format_args!(
            "postgres: the TLS connection failed (check sslmode and sslrootcert in the \
             database URL): {text}"
        ));
    }
    match e.as_database_error().and_then(|d| d.code()) {
        Some(code) => StoreError::new(format_args!("postgres: {text} (SQLSTATE {code})")),
        None => StoreError::new(format_args!("postgres: {text}")),
    }
}

/// SQLSTATEs of a statement that lost a race with another transaction over the same
/// rows: serialization_failure, deadlock_detected, lock_not_available (lock_timeout).
/// Nothing was wrong with the write; run again once the other transaction ended, it
/// goes through.
const TRANSIENT: [&str; 3] = ["40001", "40P01", "55P03"];

/// Whether `e` (made by `db`) is such a lost race.
pub(crate) fn transient(e: &StoreError) -> bool {
    TRANSIENT
        .iter()
        .any(|code| e.0.ends_with(&format!("(SQLSTATE {code})")))
}

/// A row the ledger wrote but cannot read back: corruption or a schema mismatch.
pub(crate) fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::new(format_args!("postgres: unreadable {what}: {e}"))
}

/// The connection settings for `url` under `options`.
pub(crate) fn connect_options(
    url: &str,
    options: &PostgresOptions,
) -> Result<PgConnectOptions, StoreError> {
    let mut connect: PgConnectOptions = url
        .parse()
        .map_err(|e| StoreError::new(format_args!("postgres: bad database url: {e}")))?;
    connect = connect
        .application_name("boxoffice")
        .statement_cache_capacity(options.statement_cache_capacity)
        // Statements are logged by the caller when they fail; sqlx's own per-query
        // INFO lines would flood the log during an on-sale.
        .disable_statement_logging();
    if options.statement_timeout_ms > 0 {
        // A startup parameter rather than a `SET`: no extra round trip per connection,
        // and nothing that could leak to another client through a pooler.
        connect = connect.options([(
            "statement_timeout",
            options.statement_timeout_ms.to_string(),
        )]);
    }
    Ok(connect)
}

/// A pool of `size` connections that opens lazily, so a node starts (and reports
/// unready) while the database is still coming up.
pub(crate) fn pool(connect: PgConnectOptions, size: u32, options: &PostgresOptions) -> PgPool {
    PgPoolOptions::new()
        .max_connections(size.max(1))
        .acquire_timeout(options.acquire_timeout())
        .connect_lazy_with(connect)
}

/// Runs `fut` under the connect timeout, naming what timed out.
pub(crate) async fn timed<T>(
    options: &PostgresOptions,
    what: &str,
    fut: impl Future<Output = Result<T, sqlx::Error>>,
) -> Result<T, StoreError> {
    match tokio::time::timeout(options.connect_timeout(), fut).await {
        Ok(result) => result.map_err(db),
        Err(_) => Err(StoreError::new(format_args!(
            "postgres: {what} timed out after {} ms",
            options.connect_timeout_ms
        ))),
    }
}
