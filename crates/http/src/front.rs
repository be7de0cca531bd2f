//! The one middleware every request passes, wrapped once around each route's handler
//! and around the router's fallbacks: the request's span and id (`trace`), its latency
//! (`observe`), and, for the routes of the table, load shedding, the request deadline and
//! the route's class for the handler (`edge`, `RouteClass`).
//!
//! It is a service of its own with a future of its own rather than axum middleware
//! layered on the router: each axum layer puts the route behind another boxed service
//! that is cloned, and another boxed future that is allocated and moved, on every
//! request. Here a request passes one service and one future between the router and its
//! handler.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::response::Response;
use pin_project_lite::pin_project;
use tower::Service;
use tracing::Instrument;
use tracing::instrument::Instrumented;

use crate::ClientAddr;
use crate::edge::{Edge, InFlight};
use crate::extract::BUYER_SESSION;
use crate::observe::Latencies;
use crate::openapi::Doc;
use crate::routes::RouteClass;
use crate::trace;

/// `inner` as served at `route`: traced and observed, and, when `admit` is given, shed
/// and held to the deadline as its class says.
#[derive(Clone)]
pub(crate) struct Front<S> {
    /// The route's latency series, and its path for the span.
    latencies: Arc<Latencies>,
    admit: Option<Admit>,
    inner: S,
}

/// What the front tells the handler of a route of the table, in one extension of the
/// request (each is a box in the request's map): the route's class (`observe::Feeds`)
/// and the client's address as the edge named it (`ClientAddr`), for routes the edge
/// counts.
#[derive(Clone, Copy)]
pub(crate) struct Routed {
    pub class: RouteClass,
    pub addr: Option<ClientAddr>,
}

/// What the edge does with a route of the table.
#[derive(Clone)]
pub(crate) struct Admit {
    pub edge: Arc<Edge>,
    pub class: RouteClass,
    /// The codes the route may answer with (checked in debug builds).
    pub doc: &'static Doc,
    /// The largest body the route reads (`routes::body_limit`), for the refusal's words.
    pub body_limit: usize,
}

impl<S> Front<S> {
    /// A route of the table.
    pub(crate) fn route(route: &'static str, admit: Admit, inner: S) -> Self {
        Front {
            latencies: Arc::new(Latencies::new(route)),
            admit: Some(admit),
            inner,
        }
    }

    /// Traced and observed under `route`, never shed: the router's own answers (no
    /// such route, no such method).
    pub(crate) fn observed(route: &'static str, inner: S) -> Self {
        Front {
            latencies: Arc::new(Latencies::new(route)),
            admit: None,
            inner,
        }
    }
}

impl<S> Service<Request> for Front<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Answer<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        let started = Instant::now();
        let id = trace::request_id(req.headers().get(&trace::REQUEST_ID));
        let method = req.method().clone();
        let personal = personal(&method, req.headers());
        let span = trace::span(&method, self.latencies.route(), &id);
        let work = span.in_scope(|| match &self.admit {
            None => Work::Free {
                inner: self.inner.call(req),
            },
            Some(admit) => {
                if admit.class.never_shed() {
                    req.extensions_mut().insert(Routed {
                        class: admit.class,
                        addr: None,
                    });
                    Work::Free {
                        inner: self.inner.call(req),
                    }
                } else {
                    // The client's address, named once here for the share in flight
                    // and kept for the handler's per-address decisions.
                    let addr = ClientAddr::of(&admit.edge, &req);
                    req.extensions_mut().insert(Routed {
                        class: admit.class,
                        addr: Some(addr),
                    });
                    match admit.edge.enter(addr.0) {
                        Ok(place) => Work::Held {
                            // The deadline from the instant already read.
                            inner: tokio::time::timeout_at(
                                (started + admit.edge.request_timeout()).into(),
                                self.inner.call(req),
                            ),
                            place,
                        },
                        Err(full) => Work::Shed {
                            answer: Some(admit.edge.shed(full, admit.class)),
                        },
                    }
                }
            }
        });
        Answer {
            work: work.instrument(span),
            latencies: self.latencies.clone(),
            checked: self.admit.as_ref().map(|a| (a.class, a.doc)),
            body_limit: self
                .admit
                .as_ref()
                .map_or(crate::MAX_BODY, |a| a.body_limit),
            method,
            started,
            id: Some(id),
            personal,
        }
    }
}

/// Whether a shared cache must never keep the answer: a read made with a buyer's or an
/// operator's credential (their tickets and barcodes, orders, holds, transfers). A
/// cache may not store such an answer unless it is told it may, but one set to keep
/// everything, or to ignore `Authorization`, would serve it to the next caller.
fn personal(method: &Method, headers: &HeaderMap) -> bool {
    (method == Method::GET || method == Method::HEAD)
        && (headers.contains_key(header::AUTHORIZATION) || headers.contains_key(BUYER_SESSION))
}

pin_project! {
    /// A request's answer: its work, then what `trace` does with the response.
    pub(crate) struct Answer<F> {
        #[pin]
        work: Instrumented<Work<F>>,
        latencies: Arc<Latencies>,
        checked: Option<(RouteClass, &'static Doc)>,
        body_limit: usize,
        method: Method,
        started: Instant,
        id: Option<HeaderValue>,
        // The answer is marked `private, no-store` unless its route said otherwise.
        personal: bool,
    }
}

impl<F> Future for Answer<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let Ok(mut res) = ready!(this.work.as_mut().poll(cx));
        if *this.personal && !res.headers().contains_key(header::CACHE_CONTROL) {
            let private = HeaderValue::from_static("private, no-store");
            res.headers_mut().insert(header::CACHE_CONTROL, private);
        }
        if cfg!(debug_assertions)
            && let Some((class, doc)) = this.checked
        {
            crate::observe::undocumented(doc, *class, &res);
        }
        let span = this.work.as_ref().get_ref().span();
        let id = this
            .id
            .take()
            .unwrap_or(HeaderValue::from_static("unknown"));
        Poll::Ready(Ok(trace::finish(
            span,
            this.latencies,
            *this.body_limit,
            this.method,
            *this.started,
            id,
            res,
        )))
    }
}

pin_project! {
    /// What a request does before its answer, by what the edge made of it.
    #[project = WorkProj]
    enum Work<F> {
        /// Not shed, no deadline: probes and the router's own answers.
        Free {
            #[pin]
            inner: F,
        },
        /// Holding a place among the requests in flight, within the deadline.
        Held {
            #[pin]
            inner: tokio::time::Timeout<F>,
            place: InFlight,
        },
        /// Refused: the node, or the client address's share of it, is full.
        Shed { answer: Option<Response> },
    }
}

impl<F> Future for Work<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            WorkProj::Free { inner } => inner.poll(cx),
            WorkProj::Held { inner, place } => Poll::Ready(match ready!(inner.poll(cx)) {
                Ok(answered) => answered,
                Err(_) => Ok(place.timed_out()),
            }),
            WorkProj::Shed { answer } => {
                Poll::Ready(Ok(answer.take().unwrap_or_else(polled_after_answer)))
            }
        }
    }
}

fn polled_after_answer() -> Response {
    use axum::response::IntoResponse;
    crate::error::ApiError::from(boxoffice_engine::EngineError::Internal(
        "polled after its answer".into(),
    ))
    .into_response()
}
