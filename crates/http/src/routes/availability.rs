//! Seat availability: a cacheable bitmap (one bit per seat, in seat-index order — the
//! `index` of the seat map — most significant bit first, 1 = free) and an SSE stream of
//! deltas. Both read the node's one-second snapshot, never the hot store per viewer,
//! and the stream's deltas are computed once per node, not once per viewer.
//! Advisory: the hold is the only check that counts.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use boxoffice_domain::EventId;

use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::feed::AvailabilityOut;
use crate::openapi::{Doc, Schema};
use crate::path_id::Id;
use crate::{AppState, ClientAddr, sse};

/// How the API document describes `get`, and what it refuses with.
pub(crate) const GET_DOC: Doc = Doc {
    op: "getAvailability",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<AvailabilityOut<'static>>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::EventNotFound,
            C::Internal,
            C::SaleClosed,
            C::SaleNotOpen,
            C::Unavailable,
        ]
    },
    shared: &[],
};

pub async fn get(
    State(st): State<AppState>,
    headers: HeaderMap,
    Id(id): Id<EventId>,
) -> Result<Response, ApiError> {
    let entry = st.engine.event(id).await?;
    let snapshot = st.engine.availability(id).await?;
    let etag = format!("\"{}\"", snapshot.version);
    let cache = [(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=1"),
    )];
    if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        == Some(etag.as_str())
    {
        return Ok((StatusCode::NOT_MODIFIED, cache, [(header::ETAG, etag)]).into_response());
    }
    let body = (st.edge.availability).get(id, entry.event.capacity(), &snapshot);
    let json = [(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    )];
    Ok((cache, json, [(header::ETAG, etag)], body).into_response())
}

/// How the API document describes `stream`, and what it refuses with.
pub(crate) const STREAM_DOC: Doc = Doc {
    op: "streamAvailability",
    body: None,
    ok: &[],
    refuses: {
        use ErrorCode as C;
        &[
            C::EventNotFound,
            C::SaleClosed,
            C::SaleNotOpen,
            C::ShuttingDown,
            C::TooManyStreams,
            C::Unavailable,
        ]
    },
    shared: &[],
};

/// Server-sent events: first a `snapshot` (the same document as the GET), then a `delta`
/// whenever seats change — `{"free": [seat indices], "taken": [...]}` — checked every
/// second, plus keep-alives. Each event's id is the version it brings the map to. The
/// frames are computed once per node and shared by every viewer.
pub async fn stream(
    State(st): State<AppState>,
    ClientAddr(addr): ClientAddr,
    Id(id): Id<EventId>,
) -> Result<Response, ApiError> {
    let slot = st.edge.open_stream(addr)?;
    let frames = st.watch(id).await?;
    Ok(sse::respond(slot, frames))
}
