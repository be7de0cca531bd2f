//! The HTTP API v1: routes, extractors, the error → response mapping, the OpenAPI
//! document, and the edge's defences against hostile traffic (client addresses behind
//! proxies, load shedding, deadlines, stream caps). It knows the engine and its ports,
//! never a concrete backend.

mod client_addr;
mod code;
mod config;
mod edge;
mod error;
mod extract;
mod feed;
mod idempotency;
mod observe;
mod path_id;
mod routes;
mod seatmap;
mod sse;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{get, post, put};
use boxoffice_engine::Engine;
use boxoffice_engine::ports::{Claimant, IdempotencyStore};

pub use client_addr::ClientAddr;
pub use code::ErrorCode;
pub use config::{ForwardedHeader, HttpConfig};
pub use edge::Edge;
pub use error::ApiError;

/// The OpenAPI 3.1 description of this API, served at /openapi.json.
pub const OPENAPI: &str = include_str!("openapi.json");

/// Largest request body accepted; an event spec of a big stadium fits many times over.
pub(crate) const MAX_BODY: usize = 4 * 1024 * 1024;

/// Renders the metrics registry in the Prometheus text format.
pub type MetricsRender = Arc<dyn Fn() -> String + Send + Sync>;

#[derive(Clone)]
pub struct AppState {
    pub engine: Arc<Engine>,
    /// Durable replays (checkout, event and queue writes).
    pub idempotency: Arc<dyn IdempotencyStore>,
    /// Fast replays for holds, kept beside the hot store.
    pub hold_idempotency: Arc<dyn IdempotencyStore>,
    /// This process's claims on Idempotency-Keys: its incarnation and lease.
    pub claimant: Claimant,
    pub operator_key: Arc<str>,
    pub metrics: Option<MetricsRender>,
    pub ready: Arc<AtomicBool>,
    /// Proxies, overload limits, stream caps, public-read caches and the stop signal.
    pub edge: Arc<Edge>,
}

impl AppState {
    /// The durable replay store (checkout, event and queue writes).
    pub(crate) fn replays(&self) -> idempotency::Store<'_> {
        idempotency::Store {
            replays: &self.idempotency,
            claimant: self.claimant,
            now: self.engine.now(),
        }
    }

    /// The fast replay store of holds.
    pub(crate) fn hold_replays(&self) -> idempotency::Store<'_> {
        idempotency::Store {
            replays: &self.hold_idempotency,
            claimant: self.claimant,
            now: self.engine.now(),
        }
    }
}

pub fn app(state: AppState) -> Router {
    use routes::*;
    Router::new()
        .route("/v1/buyers", post(buyers::create_buyer))
        .route("/v1/events", post(events::create))
        .route("/v1/events/{id}", get(events::get))
        .route("/v1/events/{id}/open", post(events::open))
        .route("/v1/events/{id}/close", post(events::close))
        .route("/v1/events/{id}/stats", get(events::stats))
        .route("/v1/events/{id}/seatmap", get(events::seatmap))
        .route("/v1/events/{id}/availability", get(availability::get))
        .route(
            "/v1/events/{id}/availability/stream",
            get(availability::stream),
        )
        .route(
            "/v1/events/{id}/queue",
            post(queue::join).get(queue::public),
        )
        .route("/v1/queue/status", get(queue::status))
        .route("/v1/events/{id}/queue/stream", get(queue::stream))
        .route("/v1/events/{id}/queue/challenge", get(queue::challenge))
        .route("/v1/events/{id}/queue/fairness", get(waiting::fairness))
        .route("/v1/events/{id}/admission", put(waiting::set_admission))
        .route("/v1/events/{id}/waiting-room", put(waiting::set_rules))
        .route("/v1/buyer-tokens", post(waiting::grant_buyer_token))
        .route("/v1/events/{id}/holds", post(holds::create))
        .route("/v1/holds/{id}", get(holds::get).delete(holds::release))
        .route("/v1/holds/{id}/checkout", post(orders::checkout))
        .route("/v1/payments/webhook", post(payments::webhook))
        .route("/v1/orders/{id}", get(orders::get))
        .route("/v1/me/orders", get(orders::mine))
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .route("/openapi.json", get(ops::openapi))
        .route("/.well-known/jwks.json", get(ops::jwks))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            observe::observe,
        ))
        .with_state(state)
}

async fn not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "no such route")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        "this route does not take that method",
    )
}
