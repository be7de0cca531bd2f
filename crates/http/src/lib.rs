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
mod front;
mod idempotency;
mod observe;
pub mod openapi;
mod path_id;
mod qr;
mod routes;
mod seatmap;
mod served;
mod sse;
mod trace;
mod web;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use axum::Router;
use axum::handler::Handler;
use axum::routing::MethodRouter;
use boxoffice_engine::Engine;
use boxoffice_engine::ports::{Claimant, ClaimedHolds, ClaimedJoins, IdempotencyStore};

use crate::front::Front;

pub use client_addr::ClientAddr;
pub use code::ErrorCode;
pub use config::{ForwardedHeader, HttpConfig};
pub use edge::Edge;
pub use error::ApiError;
pub use routes::{RouteClass, RouteDef, table as routes};
pub use served::Served;

/// Largest request body any route accepts (`routes::body_limit`): the operator's event
/// spec (a big stadium's fits many times over).
pub(crate) const MAX_BODY: usize = 4 * 1024 * 1024;
/// Largest body of every other route: a buyer's join, hold or checkout is a few hundred
/// bytes. A place among the requests in flight is held while a body is read, so a
/// client that sends large bodies slowly ties up less of the node's memory per place.
pub(crate) const SMALL_BODY: usize = 64 * 1024;
/// Largest payment webhook: read before its signature can be checked, from anyone.
pub(crate) const WEBHOOK_BODY: usize = 256 * 1024;

/// Renders the metrics registry in the Prometheus text format.
pub type MetricsRender = Arc<dyn Fn() -> String + Send + Sync>;

/// What every handler reads. Handlers take it by value (axum's `State` clones it for each
/// request, and so do the middlewares), so a clone is one reference count rather than a
/// copy of every field and of the operator key.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    pub fn new(shared: Shared) -> Self {
        AppState(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The parts of [`AppState`].
pub struct Shared {
    pub engine: Arc<Engine>,
    /// Durable replays (checkout, event and queue writes).
    pub idempotency: Arc<dyn IdempotencyStore>,
    /// Fast replays for holds, kept beside the hot store, with the hot store's holds
    /// under their claims (the claim and the hold in one call where the store can).
    pub hold_claims: Arc<dyn ClaimedHolds>,
    /// Fast replays for queue joins, in a store of their own beside the hot store, with
    /// the line's places under their claims (the claim and the place in one call where
    /// the store can).
    pub join_claims: Arc<dyn ClaimedJoins>,
    /// This process's claims on Idempotency-Keys: its incarnation and lease.
    pub claimant: Claimant,
    /// The operator's bearer key, compared in constant time.
    pub operator_key: boxoffice_domain::Secret,
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

    /// The fast replay store of queue joins.
    pub(crate) fn join_replays(&self) -> idempotency::Store<'_> {
        idempotency::Store {
            replays: self.join_claims.replays(),
            claimant: self.claimant,
            now: self.engine.now(),
        }
    }

    /// The fast replay store of holds.
    pub(crate) fn hold_replays(&self) -> idempotency::Store<'_> {
        idempotency::Store {
            replays: self.hold_claims.replays(),
            claimant: self.claimant,
            now: self.engine.now(),
        }
    }
}

/// The node's service: every route of the table, the hold route matched before the
/// router (`Served`).
pub fn app(
    state: AppState,
) -> Served<
    impl tower::Service<
        axum::extract::Request,
        Response = axum::response::Response,
        Error = std::convert::Infallible,
        Future: Send + 'static,
    > + Clone
    + Send
    + Sync
    + 'static,
> {
    Served::new(routes::hold_route(&state), router(state))
}

/// Every route of the table, served by axum's router.
fn router(state: AppState) -> Router {
    // The web app's files are hashed and compressed now, not on a buyer's first visit.
    std::sync::LazyLock::force(&web::APP);
    let mut by_path: Vec<(&'static str, MethodRouter<AppState>)> = Vec::new();
    for def in routes::table() {
        let path = def.path;
        let handler = def.serve(&state);
        match by_path.iter_mut().find(|(p, _)| *p == path) {
            Some((_, methods)) => *methods = std::mem::take(methods).merge(handler),
            None => by_path.push((path, handler)),
        }
    }
    // The router's own answers pass the same middleware as the routes (traced and
    // observed, never shed); each is one service around its handler.
    let router = (by_path.into_iter()).fold(Router::new(), |r, (path, methods)| {
        let refused = Front::observed(path, method_not_allowed.with_state(()));
        r.route(path, methods.fallback_service(refused))
    });
    router
        .fallback_service(Front::observed("unmatched", not_found.with_state(())))
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
