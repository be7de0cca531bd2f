//! Events: create, read, open/close the sale, the seat map and the availability bitmap.

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use boxoffice_domain::{EventId, EventSpec};
use boxoffice_engine::EventEntry;
use boxoffice_engine::ports::SeatCounts;
use serde::Serialize;
use serde_json::json;

use crate::AppState;
use crate::error::ApiError;
use crate::extract::{Operator, json};
use crate::idempotency::{Replay, Scope, reply};
use crate::path_id::Id;

#[derive(Serialize)]
struct SectionSummary<'a> {
    key: &'a str,
    name: &'a str,
    kind: boxoffice_domain::SectionKind,
    capacity: u32,
    rows: usize,
}

fn summary(entry: &EventEntry, counts: Option<SeatCounts>) -> serde_json::Value {
    let e = &entry.event;
    let sections: Vec<_> = e
        .sections
        .iter()
        .map(|s| SectionSummary {
            key: &s.key,
            name: &s.name,
            kind: s.kind,
            capacity: s.len,
            rows: s.rows.len(),
        })
        .collect();
    json!({
        "event_id": e.id, "name": e.name, "currency": e.currency, "status": e.status,
        "sale": e.sale, "tiers": e.tiers, "sections": sections, "capacity": e.capacity(),
        "counts": counts, "created_at": e.created_at,
    })
}

pub async fn create(
    State(st): State<AppState>,
    _: Operator,
    replay: Replay,
    body: Bytes,
) -> Response {
    let spec: EventSpec = match json(&body) {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let engine = st.engine.clone();
    replay
        .run(st.replays(), Scope::Operator, &body, async move {
            let entry = engine.create_event(&spec).await?;
            reply(StatusCode::CREATED, &summary(&entry, None))
        })
        .await
}

pub async fn get(
    State(st): State<AppState>,
    Id(id): Id<EventId>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let entry = st.engine.event(id).await?;
    let counts = st.engine.ports().arbiter.counts(entry.event.id).await.ok();
    Ok(Json(summary(&entry, counts)))
}

pub async fn open(st: State<AppState>, op: Operator, replay: Replay, id: Id<EventId>) -> Response {
    set_sale(st, op, replay, id, true).await
}

pub async fn close(st: State<AppState>, op: Operator, replay: Replay, id: Id<EventId>) -> Response {
    set_sale(st, op, replay, id, false).await
}

async fn set_sale(
    State(st): State<AppState>,
    _: Operator,
    replay: Replay,
    Id(id): Id<EventId>,
    open: bool,
) -> Response {
    let engine = st.engine.clone();
    replay
        .run(st.replays(), Scope::Operator, b"", async move {
            let entry = if open {
                engine.open_sale(id).await?
            } else {
                engine.close_sale(id).await?
            };
            let counts = engine.ports().arbiter.counts(id).await.ok();
            reply(StatusCode::OK, &summary(&entry, counts))
        })
        .await
}

pub async fn stats(
    State(st): State<AppState>,
    _: Operator,
    Id(id): Id<EventId>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let entry = st.engine.event(id).await?;
    let counts = st.engine.ports().arbiter.counts(id).await.ok();
    let queue = st.engine.queue_state(id).await?;
    Ok(Json(json!({
        "event_id": id, "status": entry.event.status, "counts": counts, "queue": queue,
        "admission_rate_per_s": entry.event.sale.admission_rate_per_s,
        "waiting_room": st.engine.waiting_stats(id).await?,
    })))
}

/// The layout, for drawing the map: static per event, rendered once per node and
/// revalidated by ETag, so clients may cache it long.
pub async fn seatmap(
    State(st): State<AppState>,
    headers: HeaderMap,
    Id(id): Id<EventId>,
) -> Result<Response, ApiError> {
    let entry = st.engine.event(id).await?;
    let map = st.edge.seat_maps.get(&entry).await?;
    let cache = HeaderValue::from_static("public, max-age=60");
    if headers.get(header::IF_NONE_MATCH) == Some(&map.etag) {
        let mut res = StatusCode::NOT_MODIFIED.into_response();
        res.headers_mut().insert(header::CACHE_CONTROL, cache);
        res.headers_mut().insert(header::ETAG, map.etag);
        return Ok(res);
    }
    let mut res = Response::new(Body::from(map.body));
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CACHE_CONTROL, cache);
    h.insert(header::ETAG, map.etag);
    Ok(res)
}
