//! The HTTP server loop: accepts connections and serves each with hyper's HTTP/1
//! connection, which cuts off a client that does not send its headers in time (a
//! slow-loris client otherwise holds a connection and a task forever). On a stop it
//! stops accepting, ends event streams, lets requests in progress finish, and closes
//! whatever is still open when the deadline passes.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower::Service;

/// Serves `router` on `listener` until `stop` resolves; then cancels `stopping`, which
/// ends event streams and asks every connection to close once its request is answered,
/// and returns the connections still open (see `drain`).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    header_read_timeout: Duration,
    stopping: CancellationToken,
    stop: impl Future<Output = ()>,
) -> JoinSet<()> {
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let mut conns = JoinSet::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    let conn = connection(http.clone(), tcp, peer, router.clone(), stopping.clone());
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

/// One connection, with the peer's address in every request (`ConnectInfo`).
async fn connection(
    http: http1::Builder,
    tcp: TcpStream,
    peer: SocketAddr,
    router: Router,
    stopping: CancellationToken,
) {
    // Small JSON answers and event frames go out at once, not after Nagle's delay.
    let _ = tcp.set_nodelay(true);
    let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(ConnectInfo(peer));
        router.clone().call(req)
    });
    let conn = http.serve_connection(TokioIo::new(tcp), service);
    tokio::pin!(conn);
    let outcome = tokio::select! {
        r = conn.as_mut() => r,
        _ = stopping.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = outcome {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
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
