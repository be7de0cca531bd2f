//! The node's HTTP service: the router, with the hold route matched before it.
//!
//! At an on-sale nearly every request a node serves is a hold. A request the router
//! serves passes its path router and the route's method router, has its path
//! parameters put in a map of its own, and reaches the route through a boxed service
//! (cloned for each request, with the state and the middleware's references it holds)
//! and a boxed future. A hold is matched here by its method and path instead, and
//! served by the same middleware and service as the router's entry for it
//! (`routes::hold_route`): its future is the connection's, in place, not boxed.

use std::convert::Infallible;
use std::task::{Context, Poll, ready};

use axum::Router;
use axum::extract::Request;
use axum::http::Method;
use axum::response::Response;
use axum::routing::future::RouteFuture;
use futures::future::Either;
use tower::Service;

/// The node's service: `holds` for the hold route, `router` for every other.
#[derive(Clone)]
pub struct Served<H> {
    holds: H,
    router: Router,
}

impl<H> Served<H> {
    pub(crate) fn new(holds: H, router: Router) -> Self {
        Served { holds, router }
    }

    /// `router`'s routes beside the node's (a payment provider's stand-in, say).
    pub fn merge(self, router: Router) -> Self {
        Served {
            router: self.router.merge(router),
            ..self
        }
    }
}

impl<H> Service<Request> for Served<H>
where
    H: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<H::Future, RouteFuture<Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Both are always ready; asked anyway, as the next request may go to either.
        ready!(self.holds.poll_ready(cx))?;
        <Router as Service<Request>>::poll_ready(&mut self.router, cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        if is_hold(&req) {
            Either::Left(self.holds.call(req))
        } else {
            Either::Right(self.router.call(req))
        }
    }
}

/// Whether `req` is `POST /v1/events/{id}/holds` (`routes::HOLD_PATH`) with `{id}` one
/// segment, not empty. The router matches an empty `{id}` as well; such a path is left
/// to it, and its entry for the route (the same front and service) refuses it alike.
fn is_hold(req: &Request) -> bool {
    req.method() == Method::POST
        && (req.uri().path().strip_prefix("/v1/events/"))
            .and_then(|rest| rest.strip_suffix("/holds"))
            .is_some_and(|id| !id.is_empty() && !id.contains('/'))
}

#[cfg(test)]
mod tests {
    use axum::routing::{get, post};
    use tower::ServiceExt;

    use super::*;

    async fn answer(served: &Served<impl LaneService>, method: Method, uri: &str) -> String {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .body(axum::body::Body::empty())
            .unwrap();
        let res = served.clone().oneshot(req).await.unwrap();
        let body = axum::body::to_bytes(res.into_body(), 1024).await.unwrap();
        String::from_utf8(body.to_vec()).unwrap()
    }

    trait LaneService:
        Service<Request, Response = Response, Error = Infallible, Future: Send> + Clone + Send
    {
    }
    impl<T> LaneService for T where
        T: Service<Request, Response = Response, Error = Infallible, Future: Send> + Clone + Send
    {
    }

    #[tokio::test]
    async fn a_hold_is_served_by_its_lane_and_every_other_request_by_the_router() {
        use axum::response::IntoResponse;
        let lane = tower::service_fn(|_: Request| async { Ok("lane".into_response()) });
        let router = Router::new()
            .route(
                "/v1/events/{id}/holds",
                post(|| async { "router's hold" }).get(|| async { "router's read" }),
            )
            .route("/v1/events/{id}", get(|| async { "router's event" }));
        let served = Served::new(lane, router)
            .merge(Router::new().route("/merged", get(|| async { "merged" })));
        assert_eq!(
            answer(&served, Method::POST, "/v1/events/7/holds").await,
            "lane"
        );
        assert_eq!(
            answer(&served, Method::GET, "/v1/events/7/holds").await,
            "router's read"
        );
        assert_eq!(
            answer(&served, Method::GET, "/v1/events/7").await,
            "router's event"
        );
        assert_eq!(answer(&served, Method::GET, "/merged").await, "merged");
    }

    fn hold(method: Method, uri: &str) -> bool {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .body(axum::body::Body::empty())
            .unwrap();
        is_hold(&req)
    }

    #[test]
    fn a_hold_is_matched_as_the_router_matches_its_path_and_nothing_else_is() {
        assert!(crate::routes::HOLD_PATH == "/v1/events/{id}/holds");
        for uri in [
            "/v1/events/42/holds",
            "/v1/events/x/holds",
            "/v1/events/4%32/holds",
            "/v1/events/42/holds?x=1",
        ] {
            assert!(hold(Method::POST, uri), "{uri}");
        }
        assert!(!hold(Method::GET, "/v1/events/42/holds"));
        for uri in [
            "/v1/events//holds",
            "/v1/events/42/holds/",
            "/v1/events/4/2/holds",
            "/v1/events/42/holdsx",
            "/v1/events/42",
            "/v2/events/42/holds",
            "/v1/events/holds",
        ] {
            assert!(!hold(Method::POST, uri), "{uri}");
        }
    }
}
