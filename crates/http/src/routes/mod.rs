//! Route handlers, one module per resource, and the one table of routes: the router is
//! built from it, the OpenAPI document is checked against it, and each entry says what
//! the edge does with its requests (`RouteClass`).

pub mod availability;
pub mod buyers;
pub mod console;
pub mod events;
pub mod exchange;
pub mod gates;
pub mod holder_write;
pub mod holds;
pub mod names;
pub mod ops;
pub mod order_events;
pub mod orders;
pub mod payments;
pub mod queue;
pub mod refunds;
pub mod signals;
pub mod tickets;
pub mod transfers;
pub mod waiting;
pub mod web;

use std::convert::Infallible;

use axum::extract::{DefaultBodyLimit, Request};
use axum::handler::Handler;
use axum::http::Method;
use axum::response::Response;
use axum::routing::{MethodFilter, MethodRouter, on_service};
use tower::{Layer, Service};

use crate::front::{Admit, Front};
use crate::openapi::{Doc, docs_asset, docs_page};
use crate::{AppState, MAX_BODY};

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
    /// A page a person opens in a browser (the buyer app, the console): shed and held
    /// to the deadline as `Api`, but shed with a page the browser shows, which loads
    /// itself again after a few seconds, rather than with JSON (`Edge::shed`).
    Page,
    /// A file of those pages (their scripts, styles and images, by content-hashed name),
    /// answered from memory: never shed, as a probe. A page already served must be able
    /// to load its files, or the person sees a page that never starts; a file takes no
    /// store or engine work, and a browser fetches each once (`immutable`).
    File,
}

impl RouteClass {
    /// Whether requests of this class pass the edge uncounted: never shed, nor held to
    /// the request deadline.
    pub fn never_shed(self) -> bool {
        matches!(self, RouteClass::Probe | RouteClass::File)
    }
}

/// Makes a route's method, for the router of `state`.
pub(crate) type Serve = Box<dyn FnOnce(&AppState) -> MethodRouter<AppState> + Send>;

/// One method of one path.
pub struct RouteDef {
    pub method: Method,
    pub path: &'static str,
    pub class: RouteClass,
    /// How the API document describes it.
    pub doc: &'static Doc,
    pub(crate) handler: Serve,
}

impl RouteDef {
    /// The route's method served by its handler behind the edge's middleware (`Front`).
    pub(crate) fn serve(self, state: &AppState) -> MethodRouter<AppState> {
        (self.handler)(state)
    }
}

fn route<H, T>(
    method: Method,
    path: &'static str,
    class: RouteClass,
    h: H,
    doc: &'static Doc,
) -> RouteDef
where
    H: Handler<T, AppState>,
    T: 'static,
{
    let filter = MethodFilter::try_from(method.clone()).unwrap_or(MethodFilter::GET);
    // The handler is typed down to the middleware: one boxed service per route in the
    // router, not one per layer.
    let handler = move |state: &AppState| {
        let admit = admit(state, path, class, doc);
        let handler = DefaultBodyLimit::max(admit.body_limit).layer(h.with_state(state.clone()));
        on_service(filter, Front::route(path, admit, handler))
    };
    RouteDef {
        method,
        path,
        class,
        handler: Box::new(handler),
        doc,
    }
}

/// What the edge is told of a route of the table.
fn admit(state: &AppState, path: &'static str, class: RouteClass, doc: &'static Doc) -> Admit {
    Admit {
        edge: state.edge.clone(),
        class,
        doc,
        body_limit: body_limit(path),
    }
}

/// The hold route's path.
pub(crate) const HOLD_PATH: &str = "/v1/events/{id}/holds";

/// The hold route (the sale's hottest write) behind the edge's middleware: what the
/// router serves at `HOLD_PATH`, and what the node's service (`Served`) calls for a
/// hold before the router, so that a hold passes neither the router nor an axum
/// handler. Its service reads its body itself, up to `body_limit(HOLD_PATH)`.
pub(crate) fn hold_route(
    state: &AppState,
) -> Front<
    impl Service<Request, Response = Response, Error = Infallible, Future: Send + 'static>
    + Clone
    + Send
    + Sync
    + 'static
    + use<>,
> {
    let admit = admit(state, HOLD_PATH, RouteClass::Holds, &holds::CREATE_DOC);
    Front::route(HOLD_PATH, admit, holds::create_service(state.clone()))
}

/// The hold route's entry in the table.
fn hold_def() -> RouteDef {
    RouteDef {
        method: Method::POST,
        path: HOLD_PATH,
        class: RouteClass::Holds,
        doc: &holds::CREATE_DOC,
        handler: Box::new(|state: &AppState| on_service(MethodFilter::POST, hold_route(state))),
    }
}

/// The largest body `path` reads: `MAX_BODY` for the operator's event spec (refused on
/// the operator key before its body is read); a gate's offline scans `MAX_BATCH_BODY`
/// (read only once the gate's credential is known); the payment webhook
/// (unauthenticated until its body's signature is checked) `WEBHOOK_BODY`; every other
/// route `SMALL_BODY`.
fn body_limit(path: &str) -> usize {
    match path {
        "/v1/events" => MAX_BODY,
        "/v1/events/{id}/scans/batch" => gates::MAX_BATCH_BODY,
        "/v1/payments/webhook" => crate::WEBHOOK_BODY,
        _ => crate::SMALL_BODY,
    }
}

/// Every route the API serves.
pub fn table() -> Vec<RouteDef> {
    let mut table = sale();
    table.extend(tickets::routes());
    table.extend(transfers::routes());
    table.extend(names::routes());
    table.extend(exchange::routes());
    table.extend(gates::routes());
    table
}

/// The routes of the sale, from buyers to orders, and the node's own.
fn sale() -> Vec<RouteDef> {
    use Method as M;
    use RouteClass::*;
    vec![
        route(
            M::POST,
            "/v1/buyers",
            Api,
            buyers::create_buyer,
            &buyers::CREATE_BUYER_DOC,
        ),
        route(
            M::POST,
            "/v1/events",
            Api,
            events::create,
            &events::CREATE_DOC,
        ),
        route(M::GET, "/v1/events", Api, console::list, &console::LIST_DOC),
        route(
            M::GET,
            "/v1/events/{id}/dashboard",
            Api,
            console::dashboard,
            &console::DASHBOARD_DOC,
        ),
        route(
            M::GET,
            "/v1/audit",
            Api,
            console::audit,
            &console::AUDIT_DOC,
        ),
        route(
            M::GET,
            "/v1/events/{id}/signals",
            Api,
            signals::signals,
            &signals::SIGNALS_DOC,
        ),
        route(
            M::GET,
            "/v1/events/{id}",
            Api,
            events::get,
            &events::GET_DOC,
        ),
        route(
            M::POST,
            "/v1/events/{id}/open",
            Api,
            events::open,
            &events::OPEN_DOC,
        ),
        route(
            M::POST,
            "/v1/events/{id}/close",
            Api,
            events::close,
            &events::CLOSE_DOC,
        ),
        route(
            M::GET,
            "/v1/events/{id}/stats",
            Api,
            events::stats,
            &events::STATS_DOC,
        ),
        route(
            M::GET,
            "/v1/events/{id}/seatmap",
            Api,
            events::seatmap,
            &events::SEATMAP_DOC,
        ),
        route(
            M::GET,
            "/v1/events/{id}/availability",
            Api,
            availability::get,
            &availability::GET_DOC,
        ),
        route(
            M::GET,
            "/v1/events/{id}/availability/stream",
            Api,
            availability::stream,
            &availability::STREAM_DOC,
        ),
        route(
            M::POST,
            "/v1/events/{id}/queue",
            Api,
            queue::join,
            &queue::JOIN_DOC,
        ),
        route(
            M::GET,
            "/v1/events/{id}/queue",
            Api,
            queue::public,
            &queue::PUBLIC_DOC,
        ),
        route(
            M::GET,
            "/v1/queue/status",
            Api,
            queue::status,
            &queue::STATUS_DOC,
        ),
        route(
            M::GET,
            "/v1/events/{id}/queue/stream",
            Api,
            queue::stream,
            &queue::STREAM_DOC,
        ),
        route(
            M::GET,
            "/v1/events/{id}/queue/challenge",
            Api,
            queue::challenge,
            &queue::CHALLENGE_DOC,
        ),
        route(
            M::GET,
            "/v1/events/{id}/queue/fairness",
            Api,
            waiting::fairness,
            &waiting::FAIRNESS_DOC,
        ),
        route(
            M::PUT,
            "/v1/events/{id}/admission",
            Api,
            waiting::set_admission,
            &waiting::SET_ADMISSION_DOC,
        ),
        route(
            M::PUT,
            "/v1/events/{id}/waiting-room",
            Api,
            waiting::set_rules,
            &waiting::SET_RULES_DOC,
        ),
        route(
            M::POST,
            "/v1/me/token",
            Api,
            buyers::renew_token,
            &buyers::RENEW_DOC,
        ),
        route(
            M::POST,
            "/v1/buyer-tokens",
            Api,
            waiting::grant_buyer_token,
            &waiting::GRANT_BUYER_TOKEN_DOC,
        ),
        hold_def(),
        route(M::GET, "/v1/holds/{id}", Api, holds::get, &holds::GET_DOC),
        route(
            M::DELETE,
            "/v1/holds/{id}",
            Api,
            holds::release,
            &holds::RELEASE_DOC,
        ),
        route(
            M::POST,
            "/v1/holds/{id}/checkout",
            Checkouts,
            orders::checkout,
            &orders::CHECKOUT_DOC,
        ),
        route(
            M::POST,
            "/v1/payments/webhook",
            Api,
            payments::webhook,
            &payments::WEBHOOK_DOC,
        ),
        route(
            M::GET,
            "/v1/orders/{id}",
            Api,
            orders::get,
            &orders::GET_DOC,
        ),
        route(
            M::POST,
            "/v1/orders/{id}/cancel",
            Api,
            refunds::cancel_order,
            &refunds::CANCEL_ORDER_DOC,
        ),
        route(
            M::POST,
            "/v1/tickets/{id}/cancel",
            Api,
            refunds::cancel_ticket,
            &refunds::CANCEL_TICKET_DOC,
        ),
        route(
            M::POST,
            "/v1/orders/{id}/refund",
            Api,
            refunds::refund_order,
            &refunds::REFUND_ORDER_DOC,
        ),
        route(
            M::POST,
            "/v1/events/{id}/cancel",
            Api,
            refunds::cancel_event,
            &refunds::CANCEL_EVENT_DOC,
        ),
        route(
            M::GET,
            "/v1/events/{id}/cancellation",
            Api,
            refunds::cancellation,
            &refunds::CANCELLATION_DOC,
        ),
        route(
            M::GET,
            "/v1/me/orders",
            Api,
            orders::mine,
            &orders::MINE_DOC,
        ),
        route(
            M::GET,
            "/v1/orders/{id}/history",
            Api,
            order_events::history,
            &order_events::HISTORY_DOC,
        ),
        route(
            M::POST,
            "/v1/webhook-endpoints",
            Api,
            order_events::create_endpoint,
            &order_events::CREATE_ENDPOINT_DOC,
        ),
        route(
            M::GET,
            "/v1/webhook-endpoints",
            Api,
            order_events::list_endpoints,
            &order_events::LIST_ENDPOINTS_DOC,
        ),
        route(
            M::DELETE,
            "/v1/webhook-endpoints/{id}",
            Api,
            order_events::delete_endpoint,
            &order_events::DELETE_ENDPOINT_DOC,
        ),
        route(
            M::GET,
            "/v1/webhook-endpoints/{id}/dead-letters",
            Api,
            order_events::dead_letters,
            &order_events::DEAD_LETTERS_DOC,
        ),
        route(
            M::POST,
            "/v1/webhook-endpoints/{id}/dead-letters/replay",
            Api,
            order_events::replay_dead_letters,
            &order_events::REPLAY_DOC,
        ),
        route(M::GET, "/healthz", Probe, ops::healthz, &ops::HEALTHZ_DOC),
        route(M::GET, "/readyz", Probe, ops::readyz, &ops::READYZ_DOC),
        route(M::GET, "/metrics", Probe, ops::metrics, &ops::METRICS_DOC),
        route(
            M::GET,
            "/openapi.json",
            Api,
            ops::openapi,
            &ops::OPENAPI_DOC,
        ),
        route(M::GET, "/docs", Api, docs_page, &ops::DOCS_DOC),
        route(
            M::GET,
            "/docs/{file}",
            Api,
            docs_asset,
            &ops::DOCS_ASSET_DOC,
        ),
        route(M::GET, "/", Page, web::page, &web::PAGE_DOC),
        route(M::GET, "/console", Page, web::console, &web::CONSOLE_DOC),
        route(M::GET, "/assets/{file}", File, web::asset, &web::ASSET_DOC),
        route(
            M::GET,
            "/.well-known/jwks.json",
            Api,
            ops::jwks,
            &ops::JWKS_DOC,
        ),
    ]
}
