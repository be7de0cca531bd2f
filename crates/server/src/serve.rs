//! The HTTP server loop: accepts connections and serves each with hyper's HTTP/1
//! connection, closing a connection whose client does not send a request's headers in
//! time (a slow-loris client otherwise holds a connection and a task forever). On a stop
//! it stops accepting, ends event streams, lets requests in progress finish, and closes
//! whatever is still open when the deadline passes.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use axum::response::Response;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower::Service;

/// Serves `router` on `listener` until `stop` resolves; then cancels `stopping`, which
/// ends event streams and asks every connection to close once its request is answered,
/// and returns the connections still open (see `drain`).
pub async fn serve<S>(
    listener: TcpListener,
    router: S,
    header_read_timeout: Duration,
    stopping: CancellationToken,
    stop: impl Future<Output = ()>,
) -> JoinSet<()>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    let http = http1::Builder::new();
    let mut conns = JoinSet::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    let conn = connection(
                        http.clone(),
                        header_read_timeout,
                        tcp,
                        peer,
                        router.clone(),
                        stopping.clone(),
                    );
                    conns.spawn(conn);
                }
                Err(e) => accept_failed(e).await,
            },
        }
    }
    stopping.cancel();
    conns
}

/// Waits for the connections to close until `deadline`, then closes the rest.
pub async fn drain(mut conns: JoinSet<()>, deadline: Instant) {
    let all = async { while conns.join_next().await.is_some() {} };
    if tokio::time::timeout_at(deadline, all).await.is_err() {
        tracing::warn!(
            open = conns.len(),
            "connections still open at the shutdown deadline; closing them"
        );
        conns.shutdown().await;
    }
}

/// One connection, with the peer's address in every request (`ConnectInfo`), closed
/// when a wait for a request's headers outlasts `header_read_timeout` (see `HeadWatch`).
async fn connection<S>(
    mut http: http1::Builder,
    header_read_timeout: Duration,
    tcp: TcpStream,
    peer: SocketAddr,
    router: S,
    stopping: CancellationToken,
) where
    S: Service<Request, Response = Response, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
{
    // Small JSON answers and event frames go out at once, not after Nagle's delay.
    let _ = tcp.set_nodelay(true);
    let watch = Arc::new(HeadWatch::new());
    http.timer(HeadTimer(watch.clone()))
        .header_read_timeout(header_read_timeout);
    // The connection's own router, called in place: a clone for each request would
    // count the router's one shared reference up and down, a cache line every core's
    // requests write. hyper calls the service from the connection's task alone, one
    // request at a time, and the router's call borrows it only to pick the route.
    let router = std::cell::RefCell::new(router);
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let mut req = req.map(Body::new);
        req.extensions_mut().insert(ConnectInfo(peer));
        router.borrow_mut().call(req)
    });
    let conn = http.serve_connection(TokioIo::new(tcp), service);
    tokio::pin!(conn);
    let late = watch.overdue(header_read_timeout);
    tokio::pin!(late);
    let outcome = tokio::select! {
        r = conn.as_mut() => r,
        () = &mut late => return header_timed_out(peer),
        _ = stopping.cancelled() => {
            conn.as_mut().graceful_shutdown();
            tokio::select! {
                r = conn => r,
                () = late => return header_timed_out(peer),
            }
        }
    };
    if let Err(e) = outcome {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}

fn header_timed_out(peer: SocketAddr) {
    tracing::debug!(%peer, "no request headers within the header timeout; connection closed");
}

/// A connection's wait for a request's headers. hyper asks its timer for one sleep per
/// request head (the header-read timeout, counted from the end of the previous request)
/// and drops it once the head is read; with tokio's timer that is a timer entry made,
/// registered in the wheel and taken out again for every request. Here the sleep only
/// notes its deadline in the connection's watch while hyper waits on it, and one
/// watchdog per connection (`overdue`), asleep until the earliest deadline that can be
/// noted, closes the connection once a noted deadline has passed: the same cut-off, for
/// one timer entry per connection per timeout instead of one per request.
struct HeadWatch {
    /// Where deadlines are counted from.
    origin: std::time::Instant,
    /// The noted deadline in nanoseconds after `origin`, plus one; 0 while no head is
    /// awaited.
    deadline: AtomicU64,
}

const NOT_WAITING: u64 = 0;

impl HeadWatch {
    fn new() -> HeadWatch {
        HeadWatch {
            origin: std::time::Instant::now(),
            deadline: AtomicU64::new(NOT_WAITING),
        }
    }

    fn encode(&self, deadline: std::time::Instant) -> u64 {
        let after = deadline.saturating_duration_since(self.origin).as_nanos();
        u64::try_from(after).unwrap_or(u64::MAX - 1) + 1
    }

    fn noted(&self) -> Option<std::time::Instant> {
        match self.deadline.load(Ordering::Relaxed) {
            NOT_WAITING => None,
            n => Some(self.origin + Duration::from_nanos(n - 1)),
        }
    }

    /// Resolves once a noted deadline has passed. Sleeps until the noted deadline, or
    /// `timeout` from now while none is noted (a head awaited from now on has a deadline
    /// at least that far off).
    async fn overdue(&self, timeout: Duration) {
        let mut wake = std::time::Instant::now() + timeout;
        loop {
            tokio::time::sleep_until(tokio::time::Instant::from_std(wake)).await;
            let now = std::time::Instant::now();
            wake = match self.noted() {
                Some(deadline) if deadline <= now => return,
                Some(deadline) => deadline,
                None => now + timeout,
            };
        }
    }
}

/// The timer hyper is given for one connection: its sleeps are that connection's waits
/// for a request head (the only thing hyper's HTTP/1 server times).
struct HeadTimer(Arc<HeadWatch>);

impl hyper::rt::Timer for HeadTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        self.sleep_until(std::time::Instant::now() + duration)
    }

    fn sleep_until(&self, deadline: std::time::Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(HeadSleep {
            deadline: self.0.encode(deadline),
            watch: self.0.clone(),
            noted: false,
        })
    }
}

/// Notes its deadline in the watch when first polled (hyper polls it only when the head
/// is not all there) and takes it back when dropped; never resolves itself: the
/// watchdog closes the connection instead.
struct HeadSleep {
    watch: Arc<HeadWatch>,
    deadline: u64,
    noted: bool,
}

impl Future for HeadSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if !self.noted {
            self.noted = true;
            self.watch.deadline.store(self.deadline, Ordering::Relaxed);
        }
        Poll::Pending
    }
}

impl hyper::rt::Sleep for HeadSleep {}

impl Drop for HeadSleep {
    fn drop(&mut self) {
        if self.noted {
            // Only its own deadline: a later sleep may already have noted another.
            let _ = self.watch.deadline.compare_exchange(
                self.deadline,
                NOT_WAITING,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }
}

/// Out of file descriptors, most likely: wait for some to close rather than spin.
async fn accept_failed(e: std::io::Error) {
    use std::io::ErrorKind as K;
    if matches!(
        e.kind(),
        K::ConnectionRefused | K::ConnectionAborted | K::ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accepting a connection failed");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::rt::Timer;

    #[test]
    fn a_wait_notes_its_deadline_when_polled_and_a_dropped_one_takes_back_only_its_own() {
        let watch = Arc::new(HeadWatch::new());
        let timer = HeadTimer(watch.clone());
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let at = std::time::Instant::now() + Duration::from_secs(1);
        let mut first = timer.sleep_until(at);
        assert_eq!(watch.noted(), None, "noted before hyper waited on it");
        assert!(first.as_mut().poll(&mut cx).is_pending());
        assert_eq!(watch.noted(), Some(at));
        let mut second = timer.sleep_until(at + Duration::from_secs(1));
        assert!(second.as_mut().poll(&mut cx).is_pending());
        drop(first);
        assert_eq!(watch.noted(), Some(at + Duration::from_secs(1)));
        drop(second);
        assert_eq!(watch.noted(), None);
    }
}
