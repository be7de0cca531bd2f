//! Route handlers, one module per resource, and the one table of routes: the router is
//! built from it, the OpenAPI document is checked against it, and each entry says what
//! the edge does with its requests (`RouteClass`).

pub mod availability;
pub mod buyers;
pub mod events;
pub mod holds;
pub mod ops;
pub mod orders;
pub mod payments;
pub mod queue;
pub mod waiting;

use axum::handler::Handler;
use axum::http::Method;
use axum::routing::{MethodFilter, MethodRouter, on};

use crate::AppState;

/// What the edge does with a route's requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteClass {
    /// Shed under load and held to the request deadline.
    Api,
    /// What an orchestrator must reach however busy the node is: never shed.
    Probe,
    /// Like `Api`; the engine's time on each hold feeds the adaptive admission mode.
    Holds,
    /// Like `Api`; each checkout's time and provider outcome feed the adaptive mode.
    Checkouts,
}

/// One method of one path.
pub struct RouteDef {
    pub method: Method,
    pub path: &'static str,
    pub class: RouteClass,
    pub(crate) handler: MethodRouter<AppState>,
}

fn route<H, T>(method: Method, path: &'static str, class: RouteClass, h: H) -> RouteDef
where
    H: Handler<T, AppState>,
    T: 'static,
{
    let filter = MethodFilter::try_from(method.clone()).unwrap_or(MethodFilter::GET);
    RouteDef {
        method,
        path,
        class,
        handler: on(filter, h),
    }
}

/// Every route the API serves.
pub fn table() -> Vec<RouteDef> {
    use Method as M;
    use RouteClass::*;
    vec![
        route(M::POST, "/v1/buyers", Api, buyers::create_buyer),
        route(M::POST, "/v1/events", Api, events::create),
        route(M::GET, "/v1/events/{id}", Api, events::get),
        route(M::POST, "/v1/events/{id}/open", Api, events::open),
        route(M::POST, "/v1/events/{id}/close", Api, events::close),
        route(M::GET, "/v1/events/{id}/stats", Api, events::stats),
        route(M::GET, "/v1/events/{id}/seatmap", Api, events::seatmap),
        route(
            M::GET,
            "/v1/events/{id}/availability",
            Api,
            availability::get,
        ),
        route(
            M::GET,
            "/v1/events/{id}/availability/stream",
            Api,
            availability::stream,
        ),
        route(M::POST, "/v1/events/{id}/queue", Api, queue::join),
        route(M::GET, "/v1/events/{id}/queue", Api, queue::public),
        route(M::GET, "/v1/queue/status", Api, queue::status),
        route(M::GET, "/v1/events/{id}/queue/stream", Api, queue::stream),
        route(
            M::GET,
            "/v1/events/{id}/queue/challenge",
            Api,
            queue::challenge,
        ),
        route(
            M::GET,
            "/v1/events/{id}/queue/fairness",
            Api,
            waiting::fairness,
        ),
        route(
            M::PUT,
            "/v1/events/{id}/admission",
            Api,
            waiting::set_admission,
        ),
        route(
            M::PUT,
            "/v1/events/{id}/waiting-room",
            Api,
            waiting::set_rules,
        ),
        route(M::POST, "/v1/buyer-tokens", Api, waiting::grant_buyer_token),
        route(M::POST, "/v1/events/{id}/holds", Holds, holds::create),
        route(M::GET, "/v1/holds/{id}", Api, holds::get),
        route(M::DELETE, "/v1/holds/{id}", Api, holds::release),
        route(
            M::POST,
            "/v1/holds/{id}/checkout",
            Checkouts,
            orders::checkout,
        ),
        route(M::POST, "/v1/payments/webhook", Api, payments::webhook),
        route(M::GET, "/v1/orders/{id}", Api, orders::get),
        route(M::GET, "/v1/me/orders", Api, orders::mine),
        route(M::GET, "/healthz", Probe, ops::healthz),
        route(M::GET, "/readyz", Probe, ops::readyz),
        route(M::GET, "/metrics", Probe, ops::metrics),
        route(M::GET, "/openapi.json", Api, ops::openapi),
        route(M::GET, "/.well-known/jwks.json", Api, ops::jwks),
    ]
}
