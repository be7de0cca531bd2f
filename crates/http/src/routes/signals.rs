//! The operator's view of an event's buyer clusters: distinct buyers per device key,
//! client network and payment method, largest first (the engine's `velocity`).

use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use boxoffice_domain::EventId;
use boxoffice_engine::{MAX_SIGNALS_PAGE, SignalCluster};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::{Operator, QueryParams};
use crate::openapi::{Doc, Schema};
use crate::path_id::Id;

/// Clusters one page lists when the operator names no limit.
const DEFAULT_LIMIT: usize = 50;
/// Reads of signals one node answers per second: each reads up to three rankings of
/// the velocity store.
pub(crate) const READS_PER_S: u32 = 10;

/// The event's largest clusters.
#[derive(Serialize, utoipa::ToSchema)]
pub struct SignalList {
    clusters: Vec<SignalCluster>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignalsQuery {
    limit: Option<usize>,
}

/// At most `READS_PER_S` reads per second on one node.
#[derive(Default)]
pub(crate) struct SignalsGate {
    second: Mutex<Option<(Instant, u32)>>,
}

impl SignalsGate {
    /// A place for a read now, or how long to wait.
    fn enter(&self) -> Result<(), Duration> {
        let mut second = self.second.lock();
        let now = Instant::now();
        match *second {
            Some((start, n)) if now.saturating_duration_since(start) < Duration::from_secs(1) => {
                if n >= READS_PER_S {
                    return Err(Duration::from_secs(1) - now.saturating_duration_since(start));
                }
                *second = Some((start, n + 1));
            }
            _ => *second = Some((now, 1)),
        }
        Ok(())
    }
}

/// How the API document describes `signals`, and what it refuses with.
pub(crate) const SIGNALS_DOC: Doc = Doc {
    op: "getEventSignals",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<SignalList>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::EventNotFound,
            C::InvalidQuery,
            C::RateLimited,
            C::Internal,
            C::Unavailable,
        ]
    },
    shared: &[crate::extract::OPERATOR_REFUSES],
};

/// GET /v1/events/{id}/signals: the operator's, at most `MAX_SIGNALS_PAGE` clusters.
pub async fn signals(
    State(st): State<AppState>,
    _: Operator,
    Id(id): Id<EventId>,
    QueryParams(q): QueryParams<SignalsQuery>,
) -> Result<Response, ApiError> {
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_SIGNALS_PAGE).contains(&limit) {
        return Err(ApiError::new(
            ErrorCode::InvalidQuery,
            format!("limit must be 1-{MAX_SIGNALS_PAGE}"),
        ));
    }
    if let Err(wait) = st.edge.signal_reads.enter() {
        let mut res = ApiError::new(
            ErrorCode::RateLimited,
            "signals were read too often on this node; retry in a moment",
        )
        .into_response();
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        (res.headers_mut()).insert(header::RETRY_AFTER, HeaderValue::from(secs));
        return Ok(res);
    }
    let clusters = st.engine.signals(id, limit).await?;
    let mut res = Json(SignalList { clusters }).into_response();
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_the_rate_wait_for_the_next_second() {
        let gate = SignalsGate::default();
        for _ in 0..READS_PER_S {
            assert!(gate.enter().is_ok());
        }
        let wait = gate.enter().unwrap_err();
        assert!(wait <= Duration::from_secs(1) && wait > Duration::ZERO);
    }
}
