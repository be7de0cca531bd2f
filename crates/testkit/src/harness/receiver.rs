//! A webhook endpoint for tests of the outbox relay: an axum server on 127.0.0.1 that
//! checks every delivery's signature, can be switched down (it answers 503 until
//! switched up), and records what it accepted, in order of arrival.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use parking_lot::Mutex;
use serde_json::Value;

/// One accepted delivery.
#[derive(Clone, Debug)]
pub struct Received {
    pub id: String,
    pub order: String,
    pub sequence: u64,
    pub kind: String,
    /// When the order moved (the event's `occurred_at`, ms since the epoch).
    pub occurred_at: u64,
    /// When this delivery arrived here (ms since the epoch).
    pub received_at: u64,
    /// The whole document, as signed.
    pub doc: Value,
}

#[derive(Default)]
struct Inner {
    secret: Mutex<Option<String>>,
    down: AtomicBool,
    refused_while_down: AtomicUsize,
    bad_signatures: AtomicUsize,
    accepted: Mutex<Vec<Received>>,
}

/// The running receiver; it stops when dropped.
pub struct Receiver {
    pub url: String,
    inner: Arc<Inner>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn deliver(State(inner): State<Arc<Inner>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    if inner.down.load(Ordering::SeqCst) {
        inner.refused_while_down.fetch_add(1, Ordering::SeqCst);
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let Some(secret) = inner.secret.lock().clone() else {
        return StatusCode::SERVICE_UNAVAILABLE;
    };
    let signature = headers
        .get(boxoffice_sinks::signature::HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    // The time is checked by the signature's own tests; servers under test may run on a
    // manual clock.
    if boxoffice_sinks::signature::verify(&secret, &body, signature, 0, u64::MAX).is_err() {
        inner.bad_signatures.fetch_add(1, Ordering::SeqCst);
        return StatusCode::BAD_REQUEST;
    }
    let Ok(doc) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST;
    };
    let field = |k: &str| doc[k].as_str().unwrap_or_default().to_string();
    inner.accepted.lock().push(Received {
        id: field("id"),
        order: field("order_id"),
        sequence: doc["sequence"].as_u64().unwrap_or(0),
        kind: field("type"),
        occurred_at: doc["occurred_at"].as_u64().unwrap_or(0),
        received_at: now_ms(),
        doc: doc.clone(),
    });
    StatusCode::NO_CONTENT
}

fn now_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| d.as_millis() as u64)
}

impl Receiver {
    /// Listens on a free loopback port; up, but refusing everything until `secret` is set.
    pub async fn start() -> Receiver {
        let inner = Arc::new(Inner::default());
        let app = axum::Router::new()
            .route("/hook", post(deliver))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port for the receiver");
        let url = format!("http://{}/hook", listener.local_addr().expect("an address"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver { url, inner, task }
    }

    /// Adds this receiver as a webhook endpoint of the server at `base` (a process of
    /// the test's own, operated with `operator`) and takes the endpoint's signing secret.
    pub async fn add_to(&self, c: &reqwest::Client, base: &str, operator: &str) {
        let url = format!("{base}/v1/webhook-endpoints");
        let body = serde_json::json!({"url": self.url});
        let (status, v) = super::http::call(c, reqwest::Method::POST, url, operator, body).await;
        assert_eq!(status, 201, "{v}");
        self.set_secret(v["secret"].as_str().expect("a signing secret"));
    }

    /// The endpoint's signing secret, as the server gave it at creation.
    pub fn set_secret(&self, secret: &str) {
        *self.inner.secret.lock() = Some(secret.to_string());
    }

    pub fn set_down(&self, down: bool) {
        self.inner.down.store(down, Ordering::SeqCst);
    }

    /// Deliveries answered 503 while down.
    pub fn refused(&self) -> usize {
        self.inner.refused_while_down.load(Ordering::SeqCst)
    }

    pub fn bad_signatures(&self) -> usize {
        self.inner.bad_signatures.load(Ordering::SeqCst)
    }

    pub fn accepted(&self) -> Vec<Received> {
        self.inner.accepted.lock().clone()
    }

    /// The distinct event ids accepted.
    pub fn ids(&self) -> HashSet<String> {
        self.inner
            .accepted
            .lock()
            .iter()
            .map(|r| r.id.clone())
            .collect()
    }

    /// Panics unless, for every order, each event first arrived after the first arrival
    /// of the one before it (redeliveries of an event already seen may come later).
    pub fn assert_in_order_per_order(&self) {
        let mut highest: HashMap<String, u64> = HashMap::new();
        let mut seen = HashSet::new();
        for r in self.inner.accepted.lock().iter() {
            if !seen.insert(r.id.clone()) {
                continue;
            }
            let last = highest.entry(r.order.clone()).or_insert(0);
            assert_eq!(
                r.sequence,
                *last + 1,
                "order {}: event {} arrived after event {}",
                r.order,
                r.sequence,
                last
            );
            *last = r.sequence;
        }
    }
}
