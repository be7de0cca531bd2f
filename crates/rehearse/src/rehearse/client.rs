//! The crowd's sockets: at most `--max-connections` requests in flight and connections
//! open at once, each connection kept alive and reused. A request beyond the bound
//! waits for a slot, and that wait is kept apart from the server's latency, so a
//! generator that is the bottleneck shows in the report instead of slowing the server's
//! figures.
//!
//! Two bounds, one number: a slot per request in flight, and a permit per open socket
//! held by the connection itself (given back when the connection closes).
//!
//! A request drives its connection in its own task: it takes an idle connection (or
//! opens one), and polls hyper's connection and its own exchange together until the
//! answer's body is in, then puts the connection back. hyper's pooled client instead
//! runs each connection in a task of its own and hands every request over to it and the
//! answer back, which on a stadium's crowd (tens of thousands of requests a second on
//! the machine under test) cost about a quarter of the generator's CPU.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::FutureExt;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper::header::{HOST, HeaderValue};
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper::{Request, Response, Uri};
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::{Service, ServiceExt};

/// The bound when none is given.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 2_000;

/// Open files kept out of the crowd's reach: standard streams, the runtime, the audit's
/// database and the report's files.
pub const FD_MARGIN: u64 = 256;

type Error = Box<dyn std::error::Error + Send + Sync>;

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
        Ok(Lane {
            base: base.clone(),
            client: client(base, tls.clone(), share)?,
            slots: Semaphore::new(crowd as usize),
        })
    });
    lanes.collect()
}

fn client(base: &str, tls: rustls::ClientConfig, sockets: u32) -> anyhow::Result<Http> {
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
    let uri: Uri = base.parse()?;
    let host = uri
        .authority()
        .ok_or_else(|| anyhow::anyhow!("the target {base} names no host"))?;
    Ok(Http {
        host: HeaderValue::from_str(host.as_str())?,
        uri,
        connector,
        idle: Mutex::new(Vec::with_capacity(sockets as usize)),
    })
}

type Io = MaybeHttpsStream<Counted<TokioIo<TcpStream>>>;

/// A target's keep-alive HTTP/1.1 connections, each driven by the request using it.
pub struct Http {
    /// The target (scheme and authority) connections are opened to.
    uri: Uri,
    /// Its `Host` header: requests are sent in origin form.
    host: HeaderValue,
    connector: HttpsConnector<Bounded>,
    /// Connections between requests, the last one back first.
    idle: Mutex<Vec<Conn>>,
}

/// One connection: hyper's sender and the connection it feeds, which only the request
/// using it polls.
struct Conn {
    sender: http1::SendRequest<Full<Bytes>>,
    conn: Pin<Box<http1::Connection<Io, Full<Bytes>>>>,
}

/// How one exchange on a connection ended.
enum Exchange {
    Answered(Response<Bytes>),
    /// The connection was closed before the request went out: it can go on another.
    NotSent(Request<Full<Bytes>>, Error),
    Failed(Error),
}

impl Http {
    /// `req` (origin form; its `Host` is set here) and its whole answer. A request the
    /// server's closing of an idle connection kept from going out goes on another.
    pub async fn request(&self, mut req: Request<Full<Bytes>>) -> Result<Response<Bytes>, Error> {
        req.headers_mut().insert(HOST, self.host.clone());
        for _ in 0..4 {
            let reused = self.take_idle();
            let fresh = reused.is_none();
            let mut c = match reused {
                Some(c) => c,
                None => self.connect().await?,
            };
            let (answer, open) = exchange(&mut c, req).await;
            if open && !c.sender.is_closed() {
                self.idle.lock().push(c);
            }
            match answer {
                Exchange::Answered(res) => return Ok(res),
                // An idle connection the server closed as it was taken.
                Exchange::NotSent(again, _) if !fresh => req = again,
                Exchange::NotSent(_, e) | Exchange::Failed(e) => return Err(e),
            }
        }
        Err("no connection would take the request".into())
    }

    /// An idle connection the server has not closed, if there is one.
    fn take_idle(&self) -> Option<Conn> {
        loop {
            let mut c = self.idle.lock().pop()?;
            // One poll reads a close the server sent while the connection sat idle.
            if c.conn.as_mut().now_or_never().is_none() && !c.sender.is_closed() {
                return Some(c);
            }
        }
    }

    async fn connect(&self) -> Result<Conn, Error> {
        let io = self.connector.clone().oneshot(self.uri.clone()).await?;
        let (sender, conn) = http1::handshake(io).await?;
        Ok(Conn {
            sender,
            conn: Box::pin(conn),
        })
    }
}

/// Sends `req` on `c` and reads the whole answer, polling the connection meanwhile;
/// also whether the connection is still open after it.
async fn exchange(c: &mut Conn, req: Request<Full<Bytes>>) -> (Exchange, bool) {
    let Conn { sender, conn } = c;
    let ask = async {
        if let Err(e) = sender.ready().await {
            return Exchange::NotSent(req, e.into());
        }
        let res = match sender.try_send_request(req).await {
            Ok(res) => res,
            Err(mut e) => {
                return match e.take_message() {
                    Some(req) => Exchange::NotSent(req, e.into_error().into()),
                    None => Exchange::Failed(e.into_error().into()),
                };
            }
        };
        let (parts, body) = res.into_parts();
        match body.collect().await {
            Ok(b) => Exchange::Answered(Response::from_parts(parts, b.to_bytes())),
            Err(e) => Exchange::Failed(e.into()),
        }
    };
    tokio::pin!(ask);
    let mut open = true;
    loop {
        tokio::select! {
            answer = &mut ask => return (answer, open),
            // The connection ended (closed, or broken): the exchange hears of it next.
            _ = conn.as_mut(), if open => open = false,
        }
    }
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

    /// A loopback server answering `ok` to every request on a connection, closing each
    /// connection after `per_conn` answers; counts the connections it accepted.
    async fn server(per_conn: usize) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 1024];
                    for _ in 0..per_conn {
                        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                            match sock.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        buf.clear();
                        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                        if sock.write_all(ok).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (base, accepted)
    }

    async fn get(http: &Http) -> Result<Response<Bytes>, Error> {
        let req = Request::get("/").body(Full::new(Bytes::new())).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(5), http.request(req))
            .await
            .expect("an answer within 5 s")
    }

    #[tokio::test]
    async fn one_connection_carries_request_after_request() {
        let (base, accepted) = server(usize::MAX).await;
        let http = client(&base, tls(std::slice::from_ref(&base)).unwrap(), 4).unwrap();
        for _ in 0..5 {
            let res = get(&http).await.expect("an answer");
            assert_eq!(res.body().as_ref(), b"ok");
        }
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    /// The server closes every connection after one answer, with no word of it in the
    /// answer: the next request must not be lost on the closed connection.
    #[tokio::test]
    async fn a_connection_the_server_closed_while_idle_is_not_used_again() {
        let (base, accepted) = server(1).await;
        let http = client(&base, tls(std::slice::from_ref(&base)).unwrap(), 4).unwrap();
        for _ in 0..5 {
            let res = get(&http).await.expect("an answer on a fresh connection");
            assert_eq!(res.body().as_ref(), b"ok");
            // The close reaches the client before the next request.
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 5);
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
