//! A span per request at the edge, at `debug` level: method, matched route, status and
//! request id. The request id is the client's `X-Request-Id` when it is well formed
//! (1-64 characters of letters, digits, `-`, `_`, `.`, `:`), else a fresh one; either way
//! it is echoed in the response. Error responses are logged here, once, in a line that
//! carries the request's method, route, request id and status itself: 5xx with the
//! inside detail the client never sees, 4xx at debug level. The span is at `debug` because
//! a span formats its fields when it opens, written in or not: at the default level
//! (`info`) the request's span and the engine's hold span cost a hold 45 % more
//! instructions, and nearly every request writes no line. The latency of the request is
//! recorded here too (`observe`).

use axum::http::{HeaderName, HeaderValue, Method};
use axum::response::Response;
use std::cell::Cell;
use std::time::Instant;
use tracing::Span;

use crate::error::Failure;
use crate::observe::Latencies;

pub(crate) const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Longest client request id taken as is.
const MAX_REQUEST_ID: usize = 64;

/// The span of a request by `method` to `route` (the route table's path, or
/// `unmatched`), with its request id; opened only where `debug` is logged.
pub(crate) fn span(method: &Method, route: &'static str, id: &HeaderValue) -> Span {
    tracing::debug_span!(
        "request",
        method = %method,
        route,
        request_id = id.to_str().unwrap_or_default(),
        status = tracing::field::Empty,
    )
}

/// The request's answer as sent: its latency recorded (`observe`), its status in the
/// span, its failure logged once with the request's own fields, and its request id
/// echoed.
pub(crate) fn finish(
    span: &Span,
    latencies: &Latencies,
    body_limit: usize,
    method: &Method,
    started: Instant,
    id: HeaderValue,
    answered: Response,
) -> Response {
    let mut res = crate::observe::observe(latencies, body_limit, method, started, answered);
    let status = res.status();
    span.record("status", status.as_u16());
    if let Some(f) = res.extensions_mut().remove::<Failure>() {
        let request = Request {
            method,
            route: latencies.route(),
            id: &id,
            status,
        };
        log(&request, &f);
    }
    res.headers_mut().insert(REQUEST_ID.clone(), id);
    res
}

/// What a failed request's line says of the request.
struct Request<'a> {
    method: &'a Method,
    route: &'static str,
    id: &'a HeaderValue,
    status: axum::http::StatusCode,
}

fn log(r: &Request<'_>, f: &Failure) {
    let detail = f.detail.as_deref().unwrap_or_default();
    let (method, route, status) = (r.method.as_str(), r.route, r.status.as_u16());
    let request_id = r.id.to_str().unwrap_or_default();
    let code = f.code.as_str();
    if r.status.is_server_error() && f.detail.is_some() {
        tracing::error!(
            method,
            route,
            request_id,
            status,
            code,
            detail,
            "request failed"
        );
    } else if r.status.is_server_error() {
        tracing::warn!(method, route, request_id, status, code, "request refused");
    } else {
        tracing::debug!(method, route, request_id, status, code, "request refused");
    }
}

/// The client's id when well formed, else a fresh one.
pub(crate) fn request_id(sent: Option<&HeaderValue>) -> HeaderValue {
    match sent {
        Some(v) if well_formed(v.as_bytes()) => v.clone(),
        _ => fresh_id(),
    }
}

thread_local! {
    /// The ids this thread gives: a random name drawn once for the thread, and a count.
    static FRESH: Cell<(u64, u64)> = Cell::new((uuid::Uuid::new_v4().as_u64_pair().0, 0));
}

/// A new id: the thread's name and its count, in 32 hex digits. Unique without a
/// random draw for each request. Ids name requests in logs and nothing trusts them (a
/// client may send its own): that they count up within a thread is harmless.
fn fresh_id() -> HeaderValue {
    let (name, n) = FRESH.with(|fresh| {
        let (name, n) = fresh.get();
        fresh.set((name, n.wrapping_add(1)));
        (name, n)
    });
    let mut buf = [0u8; 32];
    let digits = (u128::from(name) << 64) | u128::from(n);
    for (i, b) in buf.iter_mut().enumerate() {
        *b = b"0123456789abcdef"[((digits >> (124 - 4 * i)) & 0xf) as usize];
    }
    HeaderValue::from_bytes(&buf).unwrap_or(HeaderValue::from_static("unknown"))
}

fn well_formed(id: &[u8]) -> bool {
    (1..=MAX_REQUEST_ID).contains(&id.len())
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// This thread's log lines, kept in memory while the guard lives (for tests).
#[cfg(test)]
pub(crate) fn captured_logs() -> (
    boxoffice_testkit::logs::LogLines,
    tracing::subscriber::DefaultGuard,
) {
    let lines = boxoffice_testkit::logs::LogLines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    (lines, tracing::subscriber::set_default(subscriber))
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::handler::Handler;
    use axum::http::StatusCode;
    use axum::routing::get_service;
    use boxoffice_engine::EngineError;
    use tower::ServiceExt;

    use super::*;
    use crate::error::ApiError;
    use crate::front::Front;

    async fn failing() -> ApiError {
        ApiError::from(EngineError::Internal("the disk is on fire".into()))
    }

    #[tokio::test]
    async fn a_failure_is_logged_once_with_the_requests_fields_and_never_sent() {
        let (lines, _guard) = captured_logs();
        let failing = Front::observed("/boom/{id}", failing.with_state(()));
        let app = Router::new().route("/boom/{id}", get_service(failing));
        let req = axum::http::Request::get("/boom/7")
            .header("x-request-id", "client-1")
            .body(Body::empty())
            .unwrap();
        let res = app.oneshot(req).await.unwrap();
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(res.headers()["x-request-id"], "client-1");
        let body = axum::body::to_bytes(res.into_body(), 1 << 16)
            .await
            .unwrap();
        assert!(!String::from_utf8_lossy(&body).contains("fire"));
        let log = lines.text();
        let failed: Vec<_> = log
            .lines()
            .filter(|l| l.contains("request failed"))
            .collect();
        assert_eq!(failed.len(), 1, "{log}");
        for part in [
            "the disk is on fire",
            "code=\"internal\"",
            "route=\"/boom/{id}\"",
            "request_id=\"client-1\"",
            "status=500",
        ] {
            assert!(
                failed[0].contains(part),
                "{part} missing from {}",
                failed[0]
            );
        }
        // At `info` (the capture's level) the request opens no span: the line carries
        // the request's fields itself.
        assert!(!failed[0].contains("request{"), "{}", failed[0]);
    }

    #[test]
    fn a_well_formed_client_id_is_kept() {
        let v = HeaderValue::from_static("req-42_a.b:c");
        assert_eq!(request_id(Some(&v)), v);
    }

    #[test]
    fn a_missing_overlong_or_odd_client_id_is_replaced_by_a_fresh_one() {
        let long = HeaderValue::from_str(&"a".repeat(MAX_REQUEST_ID + 1)).unwrap();
        for sent in [
            None,
            Some(HeaderValue::from_static("")),
            Some(long),
            Some(HeaderValue::from_static("has space")),
            Some(HeaderValue::from_static("quote\"d")),
        ] {
            let id = request_id(sent.as_ref());
            assert_eq!(id.len(), 32, "{sent:?}");
            assert!(well_formed(id.as_bytes()));
            assert_ne!(Some(&id), sent.as_ref());
        }
        assert_ne!(request_id(None), request_id(None));
    }

    #[test]
    fn fresh_ids_differ_between_threads_and_within_one() {
        let here: Vec<_> = (0..3).map(|_| request_id(None)).collect();
        let there = std::thread::spawn(|| request_id(None)).join().unwrap();
        let all: std::collections::HashSet<_> = here.iter().chain([&there]).collect();
        assert_eq!(all.len(), 4, "{here:?} {there:?}");
    }
}
