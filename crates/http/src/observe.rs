//! Request metrics: a latency histogram per (route, method, status). The handles are
//! cached so a request costs one read-locked lookup and one atomic update, not a
//! registry search with freshly allocated label strings.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics::Histogram;
use parking_lot::RwLock;

use crate::AppState;
use crate::error::ApiError;

/// route → (method, status) → histogram; two levels so a lookup borrows the route.
type Handles = HashMap<String, HashMap<(Method, StatusCode), Histogram>>;

fn handles() -> &'static RwLock<Handles> {
    static HANDLES: OnceLock<RwLock<Handles>> = OnceLock::new();
    HANDLES.get_or_init(Default::default)
}

fn record(route: &str, method: &Method, status: StatusCode, seconds: f64) {
    if let Some(h) = handles()
        .read()
        .get(route)
        .and_then(|m| m.get(&(method.clone(), status)))
    {
        h.record(seconds);
        return;
    }
    let labels = [
        ("route", route.to_owned()),
        ("method", method.as_str().to_owned()),
        ("status", status.as_str().to_owned()),
    ];
    let h = metrics::histogram!("boxoffice_http_request_duration_seconds", &labels);
    h.record(seconds);
    // Bounded: routes are the router's, methods and statuses are few.
    handles()
        .write()
        .entry(route.to_owned())
        .or_default()
        .insert((method.clone(), status), h);
}

/// Latency per route and status, and a JSON body for rejections axum makes itself
/// (e.g. a body over the limit), so every error a client sees has a code.
pub async fn observe(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = req.extensions().get::<MatchedPath>().cloned();
    let method = req.method().clone();
    let res = next.run(req).await;
    let status = res.status();
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    waiting_health(&st, route, &method, status, started);
    record(route, &method, status, started.elapsed().as_secs_f64());
    let is_json = res
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if status == StatusCode::PAYLOAD_TOO_LARGE && !is_json {
        return ApiError::new(
            status,
            "payload_too_large",
            format!("request bodies are limited to {} bytes", crate::MAX_BODY),
        )
        .into_response();
    }
    res
}

/// Feeds the adaptive admission mode: hold latency, and checkout latency with whether
/// the payment provider failed or did not answer (5xx, or 202 payment pending).
fn waiting_health(st: &AppState, route: &str, method: &Method, status: StatusCode, at: Instant) {
    use boxoffice_engine::waiting::Signal;
    let ms = at.elapsed().as_secs_f64() * 1000.0;
    match (method.as_str(), route) {
        ("POST", "/v1/events/{id}/holds") => st.engine.record_health(Signal::Hold { ms }),
        ("POST", "/v1/holds/{id}/checkout") => st.engine.record_health(Signal::Checkout {
            ms,
            provider_failed: status.is_server_error() || status == StatusCode::ACCEPTED,
        }),
        _ => {}
    }
}
