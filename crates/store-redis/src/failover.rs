//! A Redis primary with replicas, named by a list of URLs tried in order: the node
//! writes only to the one that answers `ROLE` as `master`. When the primary it uses
//! stops answering (killed, network cut) or refuses a write as a replica (`READONLY`,
//! demoted by Sentinel or an operator), the call fails (the client retries or answers
//! 503) and the next call looks for the primary again along the list. So a node follows
//! a failover by itself, whoever promotes the replica, and never writes to a replica.
//!
//! Redis replicates asynchronously: writes the old primary acknowledged may be missing
//! on the new one. The engine treats that as drift (the hot store may be wrong, the
//! ledger may not): see docs/ARCHITECTURE.md §12, "A Redis failover".

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use boxoffice_engine::ports::StoreError;
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, ServerErrorKind, Value};

use crate::conn::{ConnectConfig, manager};

/// A handle to whichever of the listed servers is the primary; cheap to clone.
#[derive(Clone)]
pub struct FailoverConn {
    inner: Arc<Inner>,
}

struct Inner {
    urls: Vec<String>,
    config: ConnectConfig,
    /// The primary in use (None once it failed), and a generation counted up at every
    /// switch, so a failure seen on an old primary does not drop a newer one.
    current: Mutex<(u64, Option<ConnectionManager>)>,
    /// One search for the primary at a time; the others wait for its answer.
    searching: futures::lock::Mutex<()>,
    /// When a search last found no primary: calls within `RETRY_SEARCH` of it fail at
    /// once instead of each searching again (a node under load meets a dead primary
    /// with thousands of calls).
    missed_at: Mutex<Option<Instant>>,
    db: i64,
}

impl FailoverConn {
    /// Connects to the first of `urls` that is a primary.
    pub async fn connect(urls: &[&str], config: ConnectConfig) -> Result<Self, StoreError> {
        let first = urls
            .first()
            .ok_or_else(|| StoreError::new("no Redis URL given"))?;
        let db = redis::Client::open(*first)
            .map_err(|e| StoreError(format!("bad Redis URL {first}: {e}")))?
            .get_connection_info()
            .redis_settings()
            .db();
        let conn = FailoverConn {
            inner: Arc::new(Inner {
                urls: urls.iter().map(|u| u.to_string()).collect(),
                config,
                current: Mutex::new((0, None)),
                searching: futures::lock::Mutex::new(()),
                missed_at: Mutex::new(None),
                db,
            }),
        };
        conn.primary()
            .await
            .map_err(|e| StoreError(format!("no primary among the listed Redis servers: {e}")))?;
        Ok(conn)
    }

    /// The primary in use, found along the list if there is none.
    async fn primary(&self) -> Result<(u64, ConnectionManager), RedisError> {
        if let Some(found) = self.in_use() {
            return Ok(found);
        }
        let _one = self.inner.searching.lock().await;
        if let Some(found) = self.in_use() {
            return Ok(found);
        }
        let missed = *self
            .inner
            .missed_at
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if missed.is_some_and(|at| at.elapsed() < RETRY_SEARCH) {
            return Err(no_primary());
        }
        for url in &self.inner.urls {
            match primary_at(url, &self.inner.config).await {
                Ok(Some(conn)) => {
                    let mut current = self.lock();
                    current.0 += 1;
                    current.1 = Some(conn.clone());
                    tracing::warn!(primary = %redacted(url), "using this Redis as the primary");
                    return Ok((current.0, conn));
                }
                Ok(None) => tracing::debug!(url = %redacted(url), "a replica: not written to"),
                Err(e) => tracing::debug!(url = %redacted(url), error = %e, "not answering"),
            }
        }
        *self
            .inner
            .missed_at
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        Err(no_primary())
    }

    fn in_use(&self) -> Option<(u64, ConnectionManager)> {
        let current = self.lock();
        current.1.clone().map(|c| (current.0, c))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, Option<ConnectionManager>)> {
        self.inner.current.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// After a call failed: if it says the primary is gone or demoted, forget it.
    fn after<T>(&self, generation: u64, result: &Result<T, RedisError>) {
        let Err(e) = result else { return };
        if !primary_lost(e) {
            return;
        }
        let mut current = self.lock();
        if current.0 == generation && current.1.is_some() {
            current.1 = None;
            tracing::warn!(error = %e, "the Redis primary failed: looking for it again");
        }
    }
}

/// How long after a search that found no primary the next one may start.
const RETRY_SEARCH: Duration = Duration::from_millis(100);

fn no_primary() -> RedisError {
    RedisError::from((ErrorKind::Io, "no listed Redis is a primary"))
}

/// A connection to `url` if it answers `ROLE` as a primary.
async fn primary_at(
    url: &str,
    config: &ConnectConfig,
) -> Result<Option<ConnectionManager>, RedisError> {
    let mut conn = manager(url, config).await?;
    let role: Vec<Value> = redis::cmd("ROLE").query_async(&mut conn).await?;
    let is_primary = matches!(role.first(), Some(Value::BulkString(r)) if r == b"master");
    if !is_primary {
        return Ok(None);
    }
    // A promoted replica has none of the old primary's scripts loaded.
    crate::scripts::load_all(&mut conn).await?;
    Ok(Some(conn))
}

/// The failures that mean the server is no (reachable) primary any more.
fn primary_lost(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_timeout()
        || e.kind() == ErrorKind::Server(ServerErrorKind::ReadOnly)
        || e.to_string().contains("READONLY")
}

/// The URL without its password, for logs.
fn redacted(url: &str) -> String {
    match url.rsplit_once('@') {
        Some((_, host)) => format!("redis://…@{host}"),
        None => url.to_string(),
    }
}

impl ConnectionLike for FailoverConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let (generation, mut conn) = self.primary().await?;
            let result = conn.req_packed_command(cmd).await;
            self.after(generation, &result);
            result
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let (generation, mut conn) = self.primary().await?;
            let result = conn.req_packed_commands(cmd, offset, count).await;
            self.after(generation, &result);
            result
        })
    }

    fn get_db(&self) -> i64 {
        self.inner.db
    }
}
