//! What the edge records of every request: a latency histogram per (route, method,
//! status), the check (debug builds) that a route answers only with the codes its
//! document lists, and the health samples of the adaptive admission mode. The
//! histogram handles are cached so a request costs one read-locked lookup and one
//! atomic update, not a registry search with freshly allocated label strings.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Instant;

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use boxoffice_engine::waiting::Signal;
use boxoffice_engine::{CheckoutOutcome, EngineError};
use metrics::Histogram;
use parking_lot::RwLock;

use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::error::Failure;
use crate::openapi::Doc;
use crate::routes::RouteClass;

/// route → (method, status) → histogram; two levels so a lookup borrows the route.
type Handles = HashMap<String, HashMap<(Method, StatusCode), Histogram>>;

fn handles() -> &'static RwLock<Handles> {
    static HANDLES: OnceLock<RwLock<Handles>> = OnceLock::new();
    HANDLES.get_or_init(Default::default)
}

/// The method as labelled: one of HTTP's own, or `OTHER` for any a client made up, so
/// that made-up methods (answered 405) cannot grow the handles or the metric's series.
fn method_label(method: &Method) -> &Method {
    static OTHER: OnceLock<Method> = OnceLock::new();
    match *method {
        Method::GET
        | Method::POST
        | Method::PUT
        | Method::DELETE
        | Method::PATCH
        | Method::HEAD
        | Method::OPTIONS
        | Method::CONNECT
        | Method::TRACE => method,
        _ => OTHER.get_or_init(|| Method::from_bytes(b"OTHER").expect("a valid method")),
    }
}

fn record(route: &str, method: &Method, status: StatusCode, seconds: f64) {
    let method = method_label(method);
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
    // Bounded: routes are the router's, methods are HTTP's nine and `OTHER`, statuses
    // are few.
    handles()
        .write()
        .entry(route.to_owned())
        .or_default()
        .insert((method.clone(), status), h);
}

/// Debug builds (every test run) refuse to answer with an error code the route's
/// document does not list: the contract must name every code a route can send.
pub(crate) fn undocumented(doc: &Doc, class: RouteClass, res: &Response) {
    if let Some(f) = res.extensions().get::<Failure>()
        && !doc.codes(class).contains(&f.code)
    {
        panic!(
            "{} answered {} {}, which its document does not list",
            doc.op,
            res.status(),
            f.code
        );
    }
}

/// Records a request's latency per route and status, and gives a JSON body to
/// rejections axum makes itself (e.g. a body over the limit), so every error a client
/// sees has a code. Called as the request is answered (`front`), the one middleware that
/// wraps every route.
pub(crate) fn observe(route: &str, method: &Method, started: Instant, res: Response) -> Response {
    let status = res.status();
    record(route, method, status, started.elapsed().as_secs_f64());
    let is_json = res
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if status == StatusCode::PAYLOAD_TOO_LARGE && !is_json {
        return ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("request bodies are limited to {} bytes", crate::MAX_BODY),
        )
        .into_response();
    }
    res
}

/// Feeds the adaptive admission mode with what the system behind the waiting room did:
/// the time the engine spent on a hold or checkout it handled, never the time a client
/// took to send its body, and never a request refused before reaching the engine or
/// answered from the replay store. Quick refusals by the engine that say nothing about
/// its health (sold out, seat taken, hold expired) are left out too, so a client can
/// neither raise nor dilute the samples.
///
/// Which routes feed which signal is the route table's word (`RouteClass`); a handler
/// takes `Feeds` and samples its engine call, and the sample counts on those routes only.
pub(crate) struct Sample {
    class: RouteClass,
    started: Instant,
}

/// The class of the route a request came by.
pub(crate) struct Feeds(RouteClass);

impl<S: Send + Sync> FromRequestParts<S> for Feeds {
    type Rejection = Infallible;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Infallible> {
        let class = parts.extensions.get::<RouteClass>().copied();
        Ok(Feeds(class.unwrap_or(RouteClass::Api)))
    }
}

impl Feeds {
    pub(crate) fn start(&self) -> Sample {
        Sample {
            class: self.0,
            started: Instant::now(),
        }
    }
}

impl Sample {
    fn ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1000.0
    }

    pub(crate) fn hold(self, st: &AppState, error: Option<&EngineError>) {
        if self.class != RouteClass::Holds {
            return;
        }
        if error.is_none_or(is_ours) {
            st.engine.record_health(Signal::Hold { ms: self.ms() });
        }
    }

    /// A checkout's provider failed when the engine failed or the provider did not
    /// answer (payment pending); a decline and a payment awaiting the buyer
    /// (3-D Secure, bank redirect) are the provider working.
    pub(crate) fn checkout(self, st: &AppState, result: &Result<CheckoutOutcome, EngineError>) {
        if self.class != RouteClass::Checkouts {
            return;
        }
        let provider_failed = match result {
            Ok(CheckoutOutcome::Pending(_)) => true,
            Ok(_) | Err(EngineError::PaymentDeclined(_)) => false,
            Err(e) if is_ours(e) => true,
            Err(_) => return,
        };
        let ms = self.ms();
        st.engine.record_health(Signal::Checkout {
            ms,
            provider_failed,
        });
    }
}

/// Errors of the system (5xx), as opposed to answers about the request.
fn is_ours(e: &EngineError) -> bool {
    matches!(e, EngineError::Unavailable(_) | EngineError::Internal(_))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::ErrorCode;

    #[test]
    fn made_up_methods_share_one_latency_series_per_route_and_status() {
        let route = "/test/made-up-methods";
        for i in 0..200 {
            let method = Method::from_bytes(format!("MADEUP{i}").as_bytes()).unwrap();
            record(route, &method, StatusCode::METHOD_NOT_ALLOWED, 0.001);
        }
        record(route, &Method::GET, StatusCode::METHOD_NOT_ALLOWED, 0.001);
        let kept = handles().read()[route].len();
        assert_eq!(
            kept, 2,
            "one series for GET and one for every made-up method"
        );
    }

    const DOC: Doc = Doc {
        op: "testOp",
        body: None,
        ok: &[],
        refuses: &[ErrorCode::SoldOut],
        shared: &[],
    };

    #[test]
    fn a_listed_code_and_the_edge_codes_pass() {
        for code in [ErrorCode::SoldOut, ErrorCode::Overloaded] {
            undocumented(
                &DOC,
                RouteClass::Api,
                &ApiError::new(code, "x").into_response(),
            );
        }
    }

    #[test]
    #[should_panic(expected = "testOp answered 409 Conflict seat_sold")]
    fn a_code_the_document_does_not_list_is_refused() {
        let res = ApiError::new(ErrorCode::SeatSold, "x").into_response();
        undocumented(&DOC, RouteClass::Api, &res);
    }
}
