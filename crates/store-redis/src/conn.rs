//! The connection every adapter shares: one multiplexed connection to a single Redis
//! (`ConnectionManager`, which reconnects by itself) or to a Redis Cluster
//! (`ClusterConnection`, which follows slot moves). Both pipeline concurrent requests
//! over few sockets, so no pool is needed. Scripts run through `Script::invoke_async`,
//! which sends EVALSHA and loads the script on NOSCRIPT (after a restart or failover).
//! `rediss://` URLs connect over TLS (see [`crate::tls`]). With `failover`, several
//! URLs name one primary and its replicas instead of a cluster ([`crate::failover`]).

use std::path::PathBuf;
use std::time::Duration;

use boxoffice_engine::ports::StoreError;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::io::tcp::TcpSettings;
use redis::{Cmd, IntoConnectionInfo, Pipeline, RedisFuture, Value};

use crate::failover::FailoverConn;

/// Timeouts and trust of a connection. Defaults (from [`crate::RedisOptions`]) suit a
/// Redis on the same network.
#[derive(Clone, Debug)]
pub struct ConnectConfig {
    /// How long to wait for a TCP connection.
    pub connect_timeout: Duration,
    /// How long to wait for an answer before the call fails (and the caller retries).
    pub response_timeout: Duration,
    /// For `rediss://`: a PEM file of CA certificates trusted besides the system's.
    pub ca_file: Option<PathBuf>,
    /// Several URLs name a primary and its replicas (the node follows whichever is the
    /// primary), not the nodes of a Redis Cluster.
    pub failover: bool,
}

impl Default for ConnectConfig {
    fn default() -> Self {
        crate::RedisOptions::default().connect(None)
    }
}

/// A handle to a single Redis or a Redis Cluster; cheap to clone.
#[derive(Clone)]
pub enum RedisConn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
    Failover(FailoverConn),
}

impl RedisConn {
    /// `urls` is one `redis://` URL for a single node, or several separated by commas
    /// for a cluster (any reachable node is enough to find the others), or with
    /// `config.failover` for a primary and its replicas, tried in order.
    pub async fn connect(urls: &str) -> Result<Self, StoreError> {
        Self::connect_with(urls, ConnectConfig::default()).await
    }

    pub async fn connect_with(urls: &str, config: ConnectConfig) -> Result<Self, StoreError> {
        crate::tls::install_ring_provider();
        let urls: Vec<&str> = urls
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .collect();
        match urls.as_slice() {
            [] => Err(StoreError("no Redis URL given".into())),
            [one] => Self::single(one, config).await,
            many if config.failover => Ok(RedisConn::Failover(
                FailoverConn::connect(many, config).await?,
            )),
            many => Self::cluster(many, config).await,
        }
    }

    pub async fn single(url: &str, config: ConnectConfig) -> Result<Self, StoreError> {
        let mut manager = manager(url, &config).await.map_err(|e| fail(url, e))?;
        crate::scripts::load_all(&mut manager)
            .await
            .map_err(|e| fail(url, e))?;
        Ok(RedisConn::Single(manager))
    }

    pub async fn cluster(urls: &[&str], config: ConnectConfig) -> Result<Self, StoreError> {
        let mut builder = ClusterClient::builder(urls.iter().copied())
            .tcp_settings(no_delay())
            .connection_timeout(config.connect_timeout)
            .response_timeout(config.response_timeout);
        if let Some(ca) = &config.ca_file {
            builder = builder.certs(crate::tls::certificates(ca)?);
        }
        let client = builder.build().map_err(|e| fail(&urls.join(","), e))?;
        let conn = client
            .get_async_connection()
            .await
            .map_err(|e| fail(&urls.join(","), e))?;
        Ok(RedisConn::Cluster(conn))
    }
}

/// A reconnecting connection to the one Redis at `url`.
pub(crate) async fn manager(
    url: &str,
    config: &ConnectConfig,
) -> Result<ConnectionManager, redis::RedisError> {
    let info = url.into_connection_info()?.set_tcp_settings(no_delay());
    let client = match &config.ca_file {
        Some(ca) => {
            let certs = crate::tls::certificates(ca)
                .map_err(|e| redis::RedisError::from((redis::ErrorKind::Io, "CA file", e.0)))?;
            redis::Client::build_with_tls(info, certs)
        }
        None => redis::Client::open(info),
    }?;
    let manager_config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(config.connect_timeout))
        .set_response_timeout(Some(config.response_timeout))
        .set_number_of_retries(2);
    ConnectionManager::new_with_config(client, manager_config).await
}

/// Every command is a small write followed by a wait for its answer: with Nagle's
/// algorithm on (the client's default) a write behind one not yet acknowledged waits
/// for the peer's delayed ACK, up to tens of milliseconds on loopback.
fn no_delay() -> TcpSettings {
    TcpSettings::default().set_nodelay(true)
}

fn fail(url: &str, e: redis::RedisError) -> StoreError {
    StoreError(format!("cannot connect to Redis at {url}: {e}"))
}

/// A Redis failure as the ports see it: the store is unavailable, not an answer.
pub(crate) fn store_err(e: redis::RedisError) -> StoreError {
    StoreError::new(e)
}

impl ConnectionLike for RedisConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            RedisConn::Single(c) => c.req_packed_command(cmd),
            RedisConn::Cluster(c) => c.req_packed_command(cmd),
            RedisConn::Failover(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            RedisConn::Single(c) => c.req_packed_commands(cmd, offset, count),
            RedisConn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
            RedisConn::Failover(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            RedisConn::Single(c) => c.get_db(),
            RedisConn::Cluster(c) => c.get_db(),
            RedisConn::Failover(c) => c.get_db(),
        }
    }
}
