//! A Stripe stand-in over HTTPS, started by a test on a free loopback port with a
//! certificate from a [`TestCa`]. It answers the few calls the Stripe adapter makes
//! (PaymentIntents with manual capture, refunds, search, list, balance) the way the
//! real API does where localstripe does not: `latest_charge` is an id unless expanded,
//! and the search can be told to lag behind writes, as Stripe's does.

mod routes;
mod state;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::Listener;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::tls::TestCa;
pub use state::StubState;

/// The only secret key the stand-in accepts.
pub const STUB_KEY: &str = "sk_test_stub";

/// A running stand-in; stops when dropped.
pub struct StripeStub {
    /// `https://127.0.0.1:PORT`
    pub base: String,
    pub state: Arc<StubState>,
    server: tokio::task::JoinHandle<()>,
}

impl StripeStub {
    /// Serves over HTTPS with a certificate signed by `ca`. Call inside a runtime.
    pub async fn start(ca: &TestCa) -> StripeStub {
        let tcp = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = tcp.local_addr().expect("a bound address");
        let acceptor = TlsAcceptor::from(ca.server_cert().rustls_config());
        let state = Arc::new(StubState::default());
        let app = routes::router(state.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(TlsListener { tcp, acceptor }, app).await;
        });
        StripeStub {
            base: format!("https://{addr}"),
            state,
            server,
        }
    }
}

impl Drop for StripeStub {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Accepts TCP connections and completes a TLS handshake on each; a client that
/// refuses the certificate (or stalls) costs that one connection only.
pub(crate) struct TlsListener {
    pub(crate) tcp: TcpListener,
    pub(crate) acceptor: TlsAcceptor,
}

impl Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((stream, addr)) = self.tcp.accept().await else {
                continue;
            };
            let handshake = self.acceptor.accept(stream);
            if let Ok(Ok(tls)) = tokio::time::timeout(Duration::from_secs(5), handshake).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}
