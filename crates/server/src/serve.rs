//! The HTTP server loop: accepts connections and serves each with hyper's HTTP/1
//! connection, closing a connection whose client does not send a request's headers in
//! time (a slow-loris client otherwise holds a connection and a task forever). On a stop
//! it stops accepting, ends event streams, lets requests in progress finish, and closes
//! whatever is still open when the deadline passes.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
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
    let first = {
        let guard = std::pin::pin!(async {
            tokio::select! {
                () = &mut late => Guard::Late,
                _ = stopping.cancelled() => Guard::Stop,
            }
        });
        Beside::new(conn.as_mut(), guard).await
    };
    let outcome = match first {
        Either::Main(r) => r,
        Either::Side(Guard::Late) => return header_timed_out(peer),
        Either::Side(Guard::Stop) => {
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

/// What ends a connection's wait beside its requests.
enum Guard {
    /// A noted head deadline passed (`HeadWatch`).
    Late,
    /// The node is stopping.
    Stop,
}

/// Which of `Beside`'s futures finished.
enum Either<M, S> {
    Main(M),
    Side(S),
}

/// Polls `main` on every wake of its task and `side` only once `side` itself woke it.
///
/// A connection's task wakes a few times for every request it serves, and a `select!`
/// polls each of its branches on every wake: the connection's watchdog (a timer entry,
/// its waker registered again) and the node's stop signal, whose every poll takes two
/// locks all the node's connections share (the cancellation token's and its `Notify`'s):
/// lines both cores write, for every request. Here `side` is polled with a waker of its
/// own, which marks it woken before it wakes the task; a wake of the task that did not
/// come through it passes `side` by with one load.
struct Beside<M, S> {
    main: M,
    side: S,
    wake: Arc<SideWake>,
    /// `wake`, as the waker `side` is polled with.
    side_waker: Waker,
    /// The task's waker last given to `wake`, to see whether the task's waker changed.
    task: Option<Waker>,
}

struct SideWake {
    /// `side` woke the task and has not been polled since (true at first: `side` is
    /// polled on the first poll, to register its waker).
    woken: AtomicBool,
    /// The waker of the task polling `Beside`.
    task: Mutex<Option<Waker>>,
}

impl Wake for SideWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        if let Some(task) = &*self.task.lock().unwrap_or_else(PoisonError::into_inner) {
            task.wake_by_ref();
        }
    }
}

impl<M, S> Beside<M, S> {
    fn new(main: M, side: S) -> Self {
        let wake = Arc::new(SideWake {
            woken: AtomicBool::new(true),
            task: Mutex::new(None),
        });
        Beside {
            main,
            side,
            side_waker: Waker::from(wake.clone()),
            wake,
            task: None,
        }
    }
}

impl<M, S> Future for Beside<M, S>
where
    M: Future + Unpin,
    S: Future + Unpin,
{
    type Output = Either<M::Output, S::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        // A task's waker does not change from poll to poll (a tokio task's never does):
        // compared, not stored again.
        if !this.task.as_ref().is_some_and(|t| t.will_wake(cx.waker())) {
            let task = cx.waker().clone();
            *this
                .wake
                .task
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(task.clone());
            this.task = Some(task);
        }
        // Cleared before `side` is polled: a wake from now on is seen by the next poll.
        if this.wake.woken.load(Ordering::Relaxed) && this.wake.woken.swap(false, Ordering::Acquire)
        {
            let mut side_cx = Context::from_waker(&this.side_waker);
            if let Poll::Ready(out) = Pin::new(&mut this.side).poll(&mut side_cx) {
                return Poll::Ready(Either::Side(out));
            }
        }
        Pin::new(&mut this.main).poll(cx).map(Either::Main)
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

    /// Counts its task's wakes.
    struct Wakes(std::sync::atomic::AtomicUsize);

    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Pending until `done`; counts its polls and keeps the last waker it was given.
    #[derive(Default)]
    struct Probe {
        polls: usize,
        waker: Option<Waker>,
        done: bool,
    }

    impl Future for Probe {
        type Output = ();

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.polls += 1;
            self.waker = Some(cx.waker().clone());
            if self.done {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }
    }

    #[test]
    fn the_side_future_is_polled_only_after_it_woke_the_task_and_its_wake_reaches_the_task() {
        let wakes = Arc::new(Wakes(0.into()));
        let task = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&task);
        let (mut main, mut side) = (Probe::default(), Probe::default());
        let mut beside = Beside::new(&mut main, &mut side);
        for _ in 0..5 {
            assert!(Pin::new(&mut beside).poll(&mut cx).is_pending());
        }
        assert_eq!(beside.main.polls, 5, "main is polled on every wake");
        assert_eq!(
            beside.side.polls, 1,
            "side is polled once, to take its waker"
        );
        // The side's own wake marks it and wakes the task.
        beside.side.waker.take().unwrap().wake();
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
        assert!(Pin::new(&mut beside).poll(&mut cx).is_pending());
        assert_eq!(beside.side.polls, 2);
        assert!(Pin::new(&mut beside).poll(&mut cx).is_pending());
        assert_eq!(beside.side.polls, 2, "not again before its next wake");
        // A side that woke and is done ends the wait, ahead of main.
        beside.side.done = true;
        beside.main.done = true;
        beside.side.waker.take().unwrap().wake_by_ref();
        assert!(matches!(
            Pin::new(&mut beside).poll(&mut cx),
            Poll::Ready(Either::Side(()))
        ));
        // A task whose waker changed has its wake reach the new waker.
        let other = Arc::new(Wakes(0.into()));
        let (mut main, mut side) = (Probe::default(), Probe::default());
        let mut beside = Beside::new(&mut main, &mut side);
        assert!(Pin::new(&mut beside).poll(&mut cx).is_pending());
        let moved = Waker::from(other.clone());
        assert!(
            Pin::new(&mut beside)
                .poll(&mut Context::from_waker(&moved))
                .is_pending()
        );
        beside.side.waker.take().unwrap().wake();
        assert_eq!(other.0.load(Ordering::SeqCst), 1);
        assert_eq!(
            wakes.0.load(Ordering::SeqCst),
            2,
            "the old waker is not woken"
        );
        main.done = true;
        let mut beside = Beside::new(&mut main, &mut side);
        assert!(matches!(
            Pin::new(&mut beside).poll(&mut cx),
            Poll::Ready(Either::Main(()))
        ));
    }

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
