//! Seat availability: a cacheable bitmap (one bit per seat, in seat-index order — the
//! `index` of the seat map — most significant bit first, 1 = free) and an SSE stream of
//! deltas. Both read the node's one-second snapshot, never the hot store per viewer.
//! Advisory: the hold is the only check that counts.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use boxoffice_domain::EventId;
use boxoffice_engine::{AvailabilitySnapshot, availability_delta};
use serde_json::json;
use tokio_stream::StreamExt;

use crate::AppState;
use crate::error::ApiError;
use crate::extract::parse_id;

fn snapshot_body(id: EventId, seats: u32, s: &AvailabilitySnapshot) -> serde_json::Value {
    json!({
        "event_id": id, "seats": seats, "free": s.free, "encoding": "bitmap-msb-first-base64",
        "bitmap": B64.encode(&s.bits), "version": s.version,
    })
}

pub async fn get(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id: EventId = parse_id(&id, "event")?;
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
    let body = snapshot_body(id, entry.event.capacity(), &snapshot);
    Ok((cache, [(header::ETAG, etag)], Json(body)).into_response())
}

/// Server-sent events: first a `snapshot` (the same document as the GET), then a `delta`
/// whenever seats change — `{"free": [seat indices], "taken": [...]}` — checked every
/// second, plus keep-alives. Each event's id is the version it brings the map to.
pub async fn stream(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id: EventId = parse_id(&id, "event")?;
    let seats = st.engine.event(id).await?.event.capacity();
    let first = st.engine.availability(id).await?;
    let mut last = first.clone();
    let opening = tokio_stream::once(Ok::<_, Infallible>(
        Event::default()
            .event("snapshot")
            .id(first.version.clone())
            .data(snapshot_body(id, seats, &first).to_string()),
    ));
    let ticks =
        tokio_stream::wrappers::IntervalStream::new(tokio::time::interval(Duration::from_secs(1)));
    let deltas = ticks
        .then(move |_| {
            let st = st.clone();
            async move { st.engine.availability(id).await.ok() }
        })
        .filter_map(move |snapshot| {
            let snapshot = snapshot.filter(|s| s.version != last.version)?;
            let (free, taken) = availability_delta(&last.bits, &snapshot.bits);
            last = snapshot.clone();
            let data =
                json!({"free": free, "taken": taken, "free_count": snapshot.free}).to_string();
            Some(Ok(Event::default()
                .event("delta")
                .id(snapshot.version.clone())
                .data(data)))
        });
    Ok(Sse::new(opening.chain(deltas))
        .keep_alive(KeepAlive::default())
        .into_response())
}
