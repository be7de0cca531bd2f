//! Ids in paths, parsed once by the extractor: a handler takes `Id<EventId>` and never
//! sees the raw segment. An id that cannot exist names no resource, so it is refused as
//! that resource not found (`event_not_found`, `hold_not_found`, `order_not_found`).

use std::str::FromStr;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use boxoffice_domain::ticket::TicketId;
use boxoffice_domain::{EventId, GateId, HoldId, ListingId, OrderId, TransferId};
use boxoffice_engine::Resource;

use crate::error::ApiError;

/// An id type that may stand in a path, and the resource it names.
pub trait PathId: FromStr + Send {
    const RESOURCE: Resource;
}

impl PathId for EventId {
    const RESOURCE: Resource = Resource::Event;
}

impl PathId for HoldId {
    const RESOURCE: Resource = Resource::Hold;
}

impl PathId for OrderId {
    const RESOURCE: Resource = Resource::Order;
}

impl PathId for TicketId {
    const RESOURCE: Resource = Resource::Ticket;
}

impl PathId for GateId {
    const RESOURCE: Resource = Resource::Gate;
}

impl PathId for TransferId {
    const RESOURCE: Resource = Resource::Transfer;
}

impl PathId for ListingId {
    const RESOURCE: Resource = Resource::Listing;
}

/// The `{id}` of the matched route, parsed.
pub struct Id<T>(pub T);

impl<T: PathId> Id<T> {
    /// The id in segment `index` of `path` (counted from the empty one before the first
    /// `/`), percent-decoded as the router decodes a path's parameters, and refused as
    /// the extractor refuses it: for a route served without the router (`Served`).
    pub(crate) fn in_path(path: &str, index: usize) -> Result<Id<T>, ApiError> {
        let not_found = || ApiError::not_found(T::RESOURCE);
        let raw = path.split('/').nth(index).ok_or_else(not_found)?;
        if !raw.contains('%') {
            // Nothing to decode (an id as the API writes it).
            return raw.parse().map(Id).map_err(|_| not_found());
        }
        let decoded = percent_encoding::percent_decode_str(raw)
            .decode_utf8()
            .map_err(|_| not_found())?;
        decoded.parse().map(Id).map_err(|_| not_found())
    }
}

impl<T: PathId, S: Send + Sync> FromRequestParts<S> for Id<T> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let not_found = || ApiError::not_found(T::RESOURCE);
        let Path(raw) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| not_found())?;
        raw.parse().map(Id).map_err(|_| not_found())
    }
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use axum::routing::get;
    use tower::ServiceExt;

    use super::*;

    async fn call(uri: &str) -> (StatusCode, String) {
        let app = Router::new()
            .route(
                "/events/{id}",
                get(|Id(id): Id<EventId>| async move { id.to_string() }),
            )
            .route(
                "/holds/{id}",
                get(|Id(id): Id<HoldId>| async move { id.to_string() }),
            );
        let res = app
            .oneshot(Request::get(uri).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = res.status();
        let body = axum::body::to_bytes(res.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn a_well_formed_id_reaches_the_handler_parsed() {
        assert_eq!(call("/events/42").await, (StatusCode::OK, "42".into()));
    }

    #[tokio::test]
    async fn an_id_read_from_the_path_is_the_id_the_router_gives_or_the_same_refusal() {
        for segment in [
            "42", "x42", "0", "-3", "+5", "%FF", "%34%32", "4%32", "42%20", "",
        ] {
            let routed = call(&format!("/events/{segment}")).await;
            let read = match Id::<EventId>::in_path(&format!("/v1/events/{segment}/holds"), 3) {
                Ok(Id(id)) => (StatusCode::OK, id.to_string()),
                Err(e) => (e.status, String::from_utf8_lossy(&e.body()).into_owned()),
            };
            if segment.is_empty() {
                // "/events/" is no path of this test's router (it has no route for it);
                // the id read directly is refused as an unknown event.
                assert_eq!(read.0, StatusCode::NOT_FOUND);
                continue;
            }
            assert_eq!(read, routed, "{segment:?}");
        }
    }

    #[tokio::test]
    async fn a_malformed_id_is_refused_as_its_resource_not_found() {
        for (uri, code) in [
            ("/events/x42", "event_not_found"),
            ("/events/0", "event_not_found"),
            ("/events/%FF", "event_not_found"),
            ("/holds/zzz", "hold_not_found"),
        ] {
            let (status, body) = call(uri).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{uri}");
            assert!(
                body.contains(&format!("\"error\":\"{code}\"")),
                "{uri}: {body}"
            );
        }
    }
}
