//! Events: create, read, open/close the sale, the seat map and the availability bitmap.

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use boxoffice_domain::catalog::PriceTier;
use boxoffice_domain::{EventId, EventSpec, Millis, SaleSettings, SaleStatus, SectionKind};
use boxoffice_engine::ports::{QueueState, SeatCounts};
use boxoffice_engine::waiting::StatsView;
use boxoffice_engine::{EventEntry, EventOverview, SaleChange};
use serde::Serialize;
use utoipa::ToSchema;

use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::{Operator, json};
use crate::idempotency::{Replay, Scope, reply};
use crate::openapi::{Doc, Schema};
use crate::path_id::Id;
use crate::seatmap::SeatMapOut;

/// An event as the API shows it.
#[derive(Serialize, ToSchema)]
#[schema(as = Event)]
pub struct EventOut<'a> {
    event_id: EventId,
    name: &'a str,
    venue: Option<&'a str>,
    opens_at: Option<Millis>,
    currency: &'a str,
    status: SaleStatus,
    sale: &'a SaleSettings,
    tiers: &'a [PriceTier],
    sections: Vec<SectionSummary<'a>>,
    /// Total seats.
    capacity: u32,
    /// Live counts; null when unknown (always null in the create response).
    #[schema(required)]
    counts: Option<SeatCounts>,
    created_at: Millis,
}

/// A section of an event, its layout summed up.
#[derive(Serialize, ToSchema)]
pub struct SectionSummary<'a> {
    key: &'a str,
    name: &'a str,
    kind: SectionKind,
    /// Seats (or GA units) in the section.
    capacity: u32,
    /// Number of rows (1 for general admission).
    rows: usize,
}

impl<'a> EventOut<'a> {
    fn new(entry: &'a EventEntry, counts: Option<SeatCounts>) -> EventOut<'a> {
        let e = &entry.event;
        let sections = (e.sections.iter())
            .map(|s| SectionSummary {
                key: &s.key,
                name: &s.name,
                kind: s.kind,
                capacity: s.len,
                rows: s.rows.len(),
            })
            .collect();
        EventOut {
            event_id: e.id,
            name: &e.name,
            venue: e.venue.as_deref(),
            opens_at: e.opens_at,
            currency: &e.currency,
            status: e.status,
            sale: &e.sale,
            tiers: &e.tiers,
            sections,
            capacity: e.capacity(),
            counts,
            created_at: e.created_at,
        }
    }

    fn of(overview: &'a EventOverview) -> EventOut<'a> {
        EventOut::new(&overview.entry, overview.counts)
    }
}

/// An event's sale and waiting room, for the operator.
#[derive(Serialize, ToSchema)]
#[schema(as = EventStats)]
pub struct EventStatsOut {
    event_id: EventId,
    status: SaleStatus,
    #[schema(required)]
    counts: Option<SeatCounts>,
    queue: QueueState,
    admission_rate_per_s: u32,
    /// Queue, admitted, active shoppers, the current rate and why, the operator's
    /// control, the rules and the health signals.
    #[schema(value_type = Object)]
    waiting_room: StatsView,
}

/// How the API document describes `create`, and what it refuses with.
pub(crate) const CREATE_DOC: Doc = Doc {
    op: "createEvent",
    body: Some(Schema::of::<EventSpec>()),
    ok: &[(StatusCode::CREATED, Schema::of::<EventOut<'static>>())],
    refuses: {
        use ErrorCode as C;
        &[C::InvalidBody, C::InvalidRequest, C::MalformedJson]
    },
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::OPERATOR_REFUSES,
        crate::extract::BODY_REFUSES,
    ],
};

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
            reply(StatusCode::CREATED, &EventOut::new(&entry, None))
        })
        .await
}

/// How the API document describes `get`, and what it refuses with.
pub(crate) const GET_DOC: Doc = Doc {
    op: "getEvent",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<EventOut<'static>>())],
    refuses: {
        use ErrorCode as C;
        &[C::EventNotFound, C::Internal, C::Unavailable]
    },
    shared: &[],
};

pub async fn get(State(st): State<AppState>, Id(id): Id<EventId>) -> Result<Response, ApiError> {
    let overview = st.engine.event_overview(id).await?;
    Ok(Json(EventOut::of(&overview)).into_response())
}

/// How the API document describes `open`, and what it refuses with.
pub(crate) const OPEN_DOC: Doc = Doc {
    op: "openSale",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<EventOut<'static>>())],
    refuses: {
        use ErrorCode as C;
        &[C::EventNotFound, C::SaleClosed]
    },
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::OPERATOR_REFUSES,
    ],
};

pub async fn open(st: State<AppState>, op: Operator, replay: Replay, id: Id<EventId>) -> Response {
    set_sale(st, op, replay, id, SaleChange::Open).await
}

/// How the API document describes `close`, and what it refuses with.
pub(crate) const CLOSE_DOC: Doc = Doc {
    op: "closeSale",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<EventOut<'static>>())],
    refuses: {
        use ErrorCode as C;
        &[C::EventNotFound]
    },
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::OPERATOR_REFUSES,
    ],
};

pub async fn close(st: State<AppState>, op: Operator, replay: Replay, id: Id<EventId>) -> Response {
    set_sale(st, op, replay, id, SaleChange::Close).await
}

async fn set_sale(
    State(st): State<AppState>,
    _: Operator,
    replay: Replay,
    Id(id): Id<EventId>,
    change: SaleChange,
) -> Response {
    let engine = st.engine.clone();
    replay
        .run(st.replays(), Scope::Operator, b"", async move {
            let overview = engine.change_sale(id, change).await?;
            reply(StatusCode::OK, &EventOut::of(&overview))
        })
        .await
}

/// How the API document describes `stats`, and what it refuses with.
pub(crate) const STATS_DOC: Doc = Doc {
    op: "getEventStats",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<EventStatsOut>())],
    refuses: {
        use ErrorCode as C;
        &[C::EventNotFound, C::Internal, C::Unavailable]
    },
    shared: &[crate::extract::OPERATOR_REFUSES],
};

pub async fn stats(
    State(st): State<AppState>,
    _: Operator,
    Id(id): Id<EventId>,
) -> Result<Json<EventStatsOut>, ApiError> {
    let entry = st.engine.event(id).await?;
    let waiting = st.engine.waiting_stats(id).await?;
    Ok(Json(EventStatsOut {
        event_id: id,
        status: entry.event.status,
        counts: waiting.seats,
        queue: waiting.queue,
        admission_rate_per_s: entry.event.sale.admission_rate_per_s,
        waiting_room: waiting,
    }))
}

/// How the API document describes `seatmap`, and what it refuses with.
pub(crate) const SEATMAP_DOC: Doc = Doc {
    op: "getSeatMap",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<SeatMapOut<'static>>())],
    refuses: {
        use ErrorCode as C;
        &[C::EventNotFound, C::Internal, C::Unavailable]
    },
    shared: &[],
};

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
