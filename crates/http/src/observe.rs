//! What the edge records of every request: a latency histogram per (route, method,
//! status), the check (debug builds) that a route answers only with the codes its
//! document lists, and the health samples of the adaptive admission mode. The
//! histogram handles are cached so a request costs one read-locked lookup and one
//! atomic update, not a registry search with freshly allocated label strings.

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
use parking_lot::Mutex;

use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::error::Failure;
use crate::front::Routed;
use crate::openapi::Doc;
use crate::routes::RouteClass;

/// One route's latency histograms by (method, status), each made once: the route's
/// `Front` owns them, so a request finds its handle by scanning the few its route has
/// answered with (a method and a status compared), not by hashing the route's text in
/// a map shared by every route. The scan takes no lock and counts no reference: every
/// request of the route reads these slots from both cores, and a lock's or a
/// reference's count would be a line each core writes in turn.
pub(crate) struct Latencies {
    route: &'static str,
    /// The handles made so far, in the order made; a slot is set once and never changed.
    slots: [OnceLock<(Method, StatusCode, Histogram)>; SLOTS],
    /// Held while a handle is made.
    making: Mutex<()>,
}

/// Handles a route keeps: more (method, status) pairs than a route answers with, which
/// are a method or two and their statuses. Past them, a pair's handle is looked up in
/// the registry on each request.
const SLOTS: usize = 32;

impl Latencies {
    pub(crate) fn new(route: &'static str) -> Latencies {
        Latencies {
            route,
            slots: std::array::from_fn(|_| OnceLock::new()),
            making: Mutex::new(()),
        }
    }

    /// The route's path, as its series and spans are labelled.
    pub(crate) fn route(&self) -> &'static str {
        self.route
    }

    /// The handles kept.
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.slots.iter().map_while(OnceLock::get).count()
    }

    fn record(&self, method: &Method, status: StatusCode, seconds: f64) {
        let method = method_label(method);
        let found = || {
            let mut set = self.slots.iter().map_while(OnceLock::get);
            set.find(|(m, s, _)| *s == status && m == method)
        };
        if let Some((_, _, h)) = found() {
            h.record(seconds);
            return;
        }
        // Bounded: methods are HTTP's nine and `OTHER`, a route's statuses are few.
        let _making = self.making.lock();
        if let Some((_, _, h)) = found() {
            h.record(seconds);
            return;
        }
        let labels = [
            ("route", self.route.to_owned()),
            ("method", method.as_str().to_owned()),
            ("status", status.as_str().to_owned()),
        ];
        let h = metrics::histogram!("boxoffice_http_request_duration_seconds", &labels);
        h.record(seconds);
        if let Some(free) = self.slots.iter().find(|slot| slot.get().is_none()) {
            let _ = free.set((method.clone(), status, h));
        }
    }
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
pub(crate) fn observe(
    latencies: &Latencies,
    body_limit: usize,
    method: &Method,
    started: Instant,
    res: Response,
) -> Response {
    let status = res.status();
    latencies.record(method, status, started.elapsed().as_secs_f64());
    let is_json = || {
        res.headers()
            .get(axum::http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/json"))
    };
    if status == StatusCode::PAYLOAD_TOO_LARGE && !is_json() {
        return too_large(body_limit).into_response();
    }
    res
}

/// The refusal of a request body over its route's limit.
pub(crate) fn too_large(body_limit: usize) -> ApiError {
    ApiError::new(
        ErrorCode::PayloadTooLarge,
        format!("this route's request bodies are limited to {body_limit} bytes"),
    )
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
        Ok(Feeds::of(&parts.extensions))
    }
}

impl Feeds {
    pub(crate) fn of(extensions: &axum::http::Extensions) -> Feeds {
        let class = extensions.get::<Routed>().map(|r| r.class);
        Feeds(class.unwrap_or(RouteClass::Api))
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
        let latencies = Latencies::new("/test/made-up-methods");
        for i in 0..200 {
            let method = Method::from_bytes(format!("MADEUP{i}").as_bytes()).unwrap();
            latencies.record(&method, StatusCode::METHOD_NOT_ALLOWED, 0.001);
        }
        latencies.record(&Method::GET, StatusCode::METHOD_NOT_ALLOWED, 0.001);
        let kept = latencies.kept();
        assert_eq!(
            kept, 2,
            "one series for GET and one for every made-up method"
        );
    }

    #[test]
    fn each_route_method_and_status_counts_in_a_series_of_its_own() {
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        let (holds, orders) = (Latencies::new("/v1/holds"), Latencies::new("/v1/orders"));
        metrics::with_local_recorder(&recorder, || {
            for _ in 0..3 {
                holds.record(&Method::POST, StatusCode::CREATED, 0.002);
            }
            holds.record(&Method::POST, StatusCode::CONFLICT, 0.001);
            orders.record(&Method::POST, StatusCode::CREATED, 0.004);
        });
        let text = handle.render();
        let count = |labels: &str| {
            let series = format!("boxoffice_http_request_duration_seconds_count{{{labels}}} ");
            let line = text.lines().find(|l| l.starts_with(&series));
            line.map(|l| l[series.len()..].to_owned())
        };
        let both = |route: &str, status: &str| {
            count(&format!(
                "route=\"{route}\",method=\"POST\",status=\"{status}\""
            ))
        };
        assert_eq!(both("/v1/holds", "201").as_deref(), Some("3"), "{text}");
        assert_eq!(both("/v1/holds", "409").as_deref(), Some("1"), "{text}");
        assert_eq!(both("/v1/orders", "201").as_deref(), Some("1"), "{text}");
        assert_eq!(holds.kept(), 2);
    }

    #[test]
    fn a_route_answering_with_more_pairs_than_it_keeps_still_counts_each_in_its_series() {
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        let latencies = Latencies::new("/v1/many");
        let statuses: Vec<StatusCode> = (200..200 + SLOTS as u16 + 8)
            .map(|s| StatusCode::from_u16(s).unwrap())
            .collect();
        metrics::with_local_recorder(&recorder, || {
            for _ in 0..2 {
                for status in &statuses {
                    latencies.record(&Method::GET, *status, 0.001);
                }
            }
        });
        assert_eq!(latencies.kept(), SLOTS);
        let text = handle.render();
        for status in &statuses {
            let series = format!(
                "boxoffice_http_request_duration_seconds_count{{route=\"/v1/many\",method=\"GET\",status=\"{}\"}} 2",
                status.as_str()
            );
            assert!(text.lines().any(|l| l == series), "{series} in {text}");
        }
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
