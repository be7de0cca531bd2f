//! A human-check verifier stand-in over HTTPS: answers the siteverify call Turnstile,
//! hCaptcha and reCAPTCHA document (a form POST of `secret`, `response`, `remoteip`,
//! and for hCaptcha `sitekey`) with their JSON. A token starting with `pass` passes,
//! any other is refused as `invalid-input-response`, a wrong secret is answered
//! `invalid-input-secret`. A test can make it answer 503 or answer late, and reads back
//! every call it got.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Form, Json, Router};
use parking_lot::Mutex;
use serde_json::json;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::stripe_stub::TlsListener;
use crate::tls::TestCa;

/// The only secret the stand-in accepts.
pub const SITEVERIFY_SECRET: &str = "0x-test-siteverify-secret";

/// One siteverify call as received.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyCall {
    pub secret: String,
    pub response: String,
    pub remoteip: Option<String>,
    pub sitekey: Option<String>,
}

#[derive(Default)]
pub struct SiteverifyState {
    calls: Mutex<Vec<VerifyCall>>,
    /// Answer 503 to everything.
    pub unavailable: AtomicBool,
    /// Wait this long before answering.
    pub delay_ms: AtomicU64,
}

impl SiteverifyState {
    pub fn calls(&self) -> Vec<VerifyCall> {
        self.calls.lock().clone()
    }
}

/// A running stand-in; stops when dropped.
pub struct SiteverifyStub {
    /// `https://127.0.0.1:PORT/siteverify`
    pub url: String,
    pub state: Arc<SiteverifyState>,
    server: tokio::task::JoinHandle<()>,
}

impl SiteverifyStub {
    /// Serves over HTTPS with a certificate signed by `ca`. Call inside a runtime.
    pub async fn start(ca: &TestCa) -> SiteverifyStub {
        let tcp = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr: SocketAddr = tcp.local_addr().expect("a bound address");
        let acceptor = TlsAcceptor::from(ca.server_cert().rustls_config());
        let state = Arc::new(SiteverifyState::default());
        let app = Router::new()
            .route("/siteverify", post(siteverify))
            .with_state(state.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(TlsListener { tcp, acceptor }, app).await;
        });
        SiteverifyStub {
            url: format!("https://{addr}/siteverify"),
            state,
            server,
        }
    }
}

impl Drop for SiteverifyStub {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn siteverify(
    State(st): State<Arc<SiteverifyState>>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Response {
    let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let call = VerifyCall {
        secret: get("secret").unwrap_or_default(),
        response: get("response").unwrap_or_default(),
        remoteip: get("remoteip"),
        sitekey: get("sitekey"),
    };
    st.calls.lock().push(call.clone());
    let delay = st.delay_ms.load(Ordering::Relaxed);
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    if st.unavailable.load(Ordering::Relaxed) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let answer = if call.secret != SITEVERIFY_SECRET {
        json!({"success": false, "error-codes": ["invalid-input-secret"]})
    } else if call.response.starts_with("pass") {
        json!({"success": true, "error-codes": [], "challenge_ts": "2027-01-15T08:00:00Z", "hostname": "localhost"})
    } else {
        json!({"success": false, "error-codes": ["invalid-input-response"]})
    };
    Json(answer).into_response()
}
