//! The crowd's sockets: at most `--max-connections` requests in flight and connections
//! open at once, each connection kept alive and reused. A request beyond the bound
//! waits for a slot, and that wait is kept apart from the server's latency, so a
//! generator that is the bottleneck shows in the report instead of slowing the server's
//! figures.
//!
//! Two bounds, one number: a slot per request in flight, and a permit per open socket
//! held by the connection itself (given back when the connection closes). The second is
//! what makes the bound hold: a pooled client opens a fresh connection when a request
//! finds no idle one, even while another is about to come back to the pool.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::Service;

/// The bound when none is given.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 2_000;

/// Open files kept out of the crowd's reach: standard streams, the runtime, the audit's
/// database and the report's files.
pub const FD_MARGIN: u64 = 256;

/// How long an idle connection stays in the pool.
const IDLE: Duration = Duration::from_secs(30);

type Error = Box<dyn std::error::Error + Send + Sync>;

/// A target's pooled HTTP/1.1 client.
pub type Http = Client<HttpsConnector<Bounded>, Full<Bytes>>;

/// `wanted`, lowered to what the process may open (its RLIMIT_NOFILE less a margin).
pub fn bound(wanted: u32) -> u32 {
    let Some(limit) = open_files_limit() else {
        return wanted;
    };
    let room = limit.saturating_sub(FD_MARGIN).max(2);
    wanted.min(u32::try_from(room).unwrap_or(u32::MAX))
}

/// The soft limit on open files, if there is one.
fn open_files_limit() -> Option<u64> {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given; RLIMIT_NOFILE is always valid.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } != 0 {
        return None;
    }
    (l.rlim_cur != libc::RLIM_INFINITY).then_some(l.rlim_cur)
}

/// One target's share of the bound: its own pool, its own sockets and slots.
pub struct Lane {
    pub base: String,
    pub client: Http,
    /// Slots of the crowd's requests in flight.
    pub slots: Semaphore,
}

/// Splits `max` connections among `targets`, one of the first target's kept for the
/// operator's own reads (so the run's timeline is not queued behind the crowd).
pub fn lanes(targets: &[String], max: u32) -> anyhow::Result<Vec<Lane>> {
    let n = targets.len() as u32;
    anyhow::ensure!(
        max > n,
        "--max-connections {max} is too few for {n} targets: each needs one, and the \
         operator one more"
    );
    let tls = tls(targets)?;
    let lanes = targets.iter().enumerate().map(|(i, base)| {
        let share = max / n + u32::from((i as u32) < max % n);
        let crowd = if i == 0 { share - 1 } else { share };
        Lane {
            base: base.clone(),
            client: client(tls.clone(), share),
            slots: Semaphore::new(crowd as usize),
        }
    });
    Ok(lanes.collect())
}

fn client(tls: rustls::ClientConfig, sockets: u32) -> Http {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let bounded = Bounded {
        http,
        open: Arc::new(Semaphore::new(sockets as usize)),
    };
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(bounded);
    Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(IDLE)
        .pool_max_idle_per_host(sockets as usize)
        .build(connector)
}

/// The machine's trusted roots when a target speaks TLS; none needed otherwise.
fn tls(targets: &[String]) -> anyhow::Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?;
    let mut roots = rustls::RootCertStore::empty();
    if targets.iter().any(|t| t.starts_with("https:")) {
        let native = rustls_native_certs::load_native_certs();
        roots.add_parsable_certificates(native.certs);
        anyhow::ensure!(!roots.is_empty(), "no trusted root certificates found");
    }
    Ok(builder.with_root_certificates(roots).with_no_client_auth())
}

/// Opens a socket only with a permit, which the connection keeps until it closes.
#[derive(Clone)]
pub struct Bounded {
    http: HttpConnector,
    open: Arc<Semaphore>,
}

impl Service<Uri> for Bounded {
    type Response = Counted<TokioIo<TcpStream>>;
    type Error = Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.http.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let (mut http, open) = (self.http.clone(), self.open.clone());
        Box::pin(async move {
            let permit = open.acquire_owned().await?;
            let io = http.call(uri).await?;
            Ok(Counted { io, _open: permit })
        })
    }
}

/// A connection that holds its permit for as long as it is open.
pub struct Counted<T> {
    io: T,
    _open: OwnedSemaphorePermit,
}

impl<T: Connection> Connection for Counted<T> {
    fn connected(&self) -> Connected {
        self.io.connected()
    }
}

impl<T: Read + Unpin> Read for Counted<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: Write + Unpin> Write for Counted<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_keeps_below_the_open_files_limit() {
        assert_eq!(bound(8), 8);
        match open_files_limit() {
            Some(limit) => {
                assert!(u64::from(bound(u32::MAX)) <= limit.saturating_sub(FD_MARGIN).max(2))
            }
            None => assert_eq!(bound(u32::MAX), u32::MAX),
        }
    }

    #[tokio::test]
    async fn the_targets_share_the_bound_and_the_first_keeps_one_for_the_operator() {
        let targets = [
            "http://127.0.0.1:1".to_owned(),
            "http://127.0.0.1:2".to_owned(),
        ];
        let lanes = lanes(&targets, 9).unwrap();
        let slots: Vec<usize> = lanes.iter().map(|l| l.slots.available_permits()).collect();
        assert_eq!(slots, [4, 4]);
        assert!(super::lanes(&targets, 2).is_err());
    }
}
