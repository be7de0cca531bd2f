//! What the operator console (and the buyer app's event list) reads: the list of
//! events, an event's live dashboard, and the audit run on demand.

use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use boxoffice_domain::catalog::PriceTier;
use boxoffice_domain::{EventId, Millis, SaleStatus};
use boxoffice_engine::dashboard::Dashboard;
use boxoffice_engine::ports::SeatCounts;
use boxoffice_engine::{AuditReport, EventOverview, MAX_LISTED_EVENTS};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::{Operator, QueryParams};
use crate::openapi::{Doc, Schema};
use crate::path_id::Id;

/// Events one listing shows when the client names no limit.
const DEFAULT_LIMIT: usize = 50;
/// The shortest time between two audits on one node: an audit reads the whole ledger.
pub(crate) const AUDIT_INTERVAL: Duration = Duration::from_secs(5);

/// An event in a listing: enough to choose it, not its layout.
#[derive(Serialize, utoipa::ToSchema)]
pub struct EventSummary<'a> {
    event_id: EventId,
    name: &'a str,
    venue: Option<&'a str>,
    currency: &'a str,
    status: SaleStatus,
    opens_at: Option<Millis>,
    capacity: u32,
    counts: Option<SeatCounts>,
    /// The lowest price of a tier, in minor units.
    price_from: Option<i64>,
    created_at: Millis,
}

impl<'a> EventSummary<'a> {
    fn of(o: &'a EventOverview) -> EventSummary<'a> {
        let e = &o.entry.event;
        EventSummary {
            event_id: e.id,
            name: &e.name,
            venue: e.venue.as_deref(),
            currency: &e.currency,
            status: e.status,
            opens_at: e.opens_at,
            capacity: e.capacity(),
            counts: o.counts,
            price_from: e.tiers.iter().map(|t: &PriceTier| t.price.0).min(),
            created_at: e.created_at,
        }
    }
}

/// Events, newest first.
#[derive(Serialize, utoipa::ToSchema)]
pub struct EventList<'a> {
    events: Vec<EventSummary<'a>>,
}

#[derive(Deserialize)]
pub struct ListQuery {
    /// Comma-separated sale statuses; all when absent.
    status: Option<String>,
    limit: Option<usize>,
}

/// How the API document describes `list`, and what it refuses with.
pub(crate) const LIST_DOC: Doc = Doc {
    op: "listEvents",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<EventList<'static>>())],
    refuses: {
        use ErrorCode as C;
        &[C::InvalidQuery, C::Internal, C::Unavailable]
    },
    shared: &[],
};

/// GET /v1/events: public, newest first, at most 100 (50 unless `limit` says).
pub async fn list(
    State(st): State<AppState>,
    QueryParams(q): QueryParams<ListQuery>,
) -> Result<Response, ApiError> {
    let statuses = match q.status.as_deref() {
        None | Some("") => SaleStatus::ALL.to_vec(),
        Some(list) => (list.split(','))
            .map(|s| {
                SaleStatus::parse(s.trim()).ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::InvalidQuery,
                        format!("status {s:?} is not one of scheduled, open, closed"),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LISTED_EVENTS).contains(&limit) {
        return Err(ApiError::new(
            ErrorCode::InvalidQuery,
            format!("limit must be 1-{}", MAX_LISTED_EVENTS),
        ));
    }
    let overviews = st.engine.list_events(&statuses, limit).await?;
    let list = EventList {
        events: overviews.iter().map(EventSummary::of).collect(),
    };
    let mut res = Json(list).into_response();
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(res)
}

/// How the API document describes `dashboard`, and what it refuses with.
pub(crate) const DASHBOARD_DOC: Doc = Doc {
    op: "getEventDashboard",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<Dashboard>())],
    refuses: {
        use ErrorCode as C;
        &[C::EventNotFound, C::Internal, C::Unavailable]
    },
    shared: &[crate::extract::OPERATOR_REFUSES],
};

/// GET /v1/events/{id}/dashboard: the operator's live figures, computed at most twice a
/// second per event on a node however many consoles poll (see the engine's dashboard).
pub async fn dashboard(
    State(st): State<AppState>,
    _: Operator,
    Id(id): Id<EventId>,
) -> Result<Response, ApiError> {
    let d: std::sync::Arc<Dashboard> = st.engine.dashboard(id).await?;
    let mut res = Json(&*d).into_response();
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(res)
}

/// One audit at a time per node, and none sooner than `AUDIT_INTERVAL` after the last
/// one started.
#[derive(Default)]
pub(crate) struct AuditGate {
    last: Mutex<Option<Instant>>,
}

impl AuditGate {
    /// A place for an audit now, or how long to wait.
    fn enter(&self) -> Result<(), Duration> {
        let mut last = self.last.lock();
        let now = Instant::now();
        if let Some(at) = *last {
            let since = now.saturating_duration_since(at);
            if since < AUDIT_INTERVAL {
                return Err(AUDIT_INTERVAL - since);
            }
        }
        *last = Some(now);
        Ok(())
    }
}

/// The audit's verdict, in the words the CLI uses too.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = AuditResult)]
pub struct AuditOut {
    clean: bool,
    /// The verdict in words.
    summary: String,
    report: AuditReport,
}

/// How the API document describes `audit`, and what it refuses with.
pub(crate) const AUDIT_DOC: Doc = Doc {
    op: "runAudit",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<AuditOut>())],
    refuses: {
        use ErrorCode as C;
        &[C::RateLimited, C::Internal, C::Unavailable]
    },
    shared: &[crate::extract::OPERATOR_REFUSES],
};

/// GET /v1/audit: checks P1, P2 and P6 over the whole ledger against the provider's
/// book, as `boxoffice audit` does; at most once per `AUDIT_INTERVAL` per node.
pub async fn audit(State(st): State<AppState>, _: Operator) -> Result<Response, ApiError> {
    if let Err(wait) = st.edge.audits.enter() {
        let mut res = ApiError::new(
            ErrorCode::RateLimited,
            "an audit ran moments ago; run it again in a few seconds",
        )
        .into_response();
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        (res.headers_mut()).insert(header::RETRY_AFTER, HeaderValue::from(secs));
        return Ok(res);
    }
    let report = st.engine.audit().await?;
    let out = AuditOut {
        clean: report.clean(),
        summary: summary(&report),
        report,
    };
    Ok(Json(out).into_response())
}

fn summary(r: &AuditReport) -> String {
    let mut s = format!(
        "Audited {} events: {} seats sold, {} orders ({} still in flight), {} provider payments.",
        r.events, r.seats_sold, r.orders, r.orders_in_flight, r.provider_payments
    );
    if r.clean() {
        s.push_str(
            " Clean: no seat sold twice and none over capacity (P1), no charge without a \
             ticket and no ticket without a charge (P2), every buyer within the ticket limit (P6).",
        );
    } else {
        s.push_str(&format!(" {} violations found.", r.violations.len()));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_audit_waits_for_the_interval() {
        let gate = AuditGate::default();
        assert!(gate.enter().is_ok());
        let wait = gate.enter().unwrap_err();
        assert!(wait <= AUDIT_INTERVAL && wait > Duration::ZERO);
    }
}
