//! The waiting room: join, the public queue document, and the personal status call.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use boxoffice_domain::EventId;
use serde::Deserialize;
use serde_json::json;

use crate::AppState;
use crate::error::ApiError;
use crate::extract::{Buyer, IdempotencyKey, bearer, parse_id};
use crate::idempotency::{Call, reply};

pub async fn join(
    State(st): State<AppState>,
    Buyer(who): Buyer,
    key: IdempotencyKey,
    Path(id): Path<String>,
) -> Response {
    let id: EventId = match parse_id(&id, "event") {
        Ok(id) => id,
        Err(e) => return e.into_response(),
    };
    let path = format!("/v1/events/{id}/queue");
    let scope = format!("buyer:{}", who.buyer);
    let call = Call {
        store: &*st.idempotency,
        scope,
        key: &key,
        method: "POST",
        path: &path,
        body: b"",
        now: st.now(),
    };
    call.run(async {
        let out = st.engine.join_queue(id, &who).await?;
        reply(StatusCode::OK, &out)
    })
    .await
}

/// The public, cacheable line state of an event.
pub async fn public(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id: EventId = parse_id(&id, "event")?;
    let entry = st.engine.event(id).await?;
    let q = st.engine.queue_state(id).await?;
    let body = json!({
        "event_id": id, "serving_up_to": q.serving_up_to, "queue_length": q.queue_length, "sold_out": q.sold_out,
        "admission_rate_per_s": entry.event.sale.admission_rate_per_s, "updated_at": q.advanced_at,
    });
    Ok((
        [(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, max-age=1"),
        )],
        Json(body),
    )
        .into_response())
}

#[derive(Deserialize)]
pub struct TicketQuery {
    ticket: Option<String>,
}

/// Exchanges a queue ticket (bearer or `?ticket=`) for the buyer's standing, and for an
/// admission token once their turn has come.
pub async fn status(
    State(st): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<TicketQuery>,
) -> Result<Response, ApiError> {
    let ticket = match q.ticket.as_deref() {
        Some(t) if !t.is_empty() => t,
        _ => bearer(&headers)?,
    };
    let out = st.engine.queue_status(ticket).await?;
    Ok((
        [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
        Json(out),
    )
        .into_response())
}
