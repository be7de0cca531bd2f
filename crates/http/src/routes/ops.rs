//! Operations and published documents: liveness, readiness, Prometheus metrics, the
//! OpenAPI document and the token verification keys.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::openapi::Doc;

/// How the API document describes `healthz`, and what it refuses with.
pub(crate) const HEALTHZ_DOC: Doc = Doc {
    op: "healthz",
    body: None,
    ok: &[],
    refuses: &[],
    shared: &[],
};

pub async fn healthz() -> &'static str {
    "ok"
}

/// How the API document describes `readyz`, and what it refuses with.
pub(crate) const READYZ_DOC: Doc = Doc {
    op: "readyz",
    body: None,
    ok: &[],
    refuses: {
        use ErrorCode as C;
        &[C::Starting, C::Unavailable]
    },
    shared: &[],
};

/// Ready once start-up finished (hot store rebuilt) and while the ledger answers.
pub async fn readyz(State(st): State<AppState>) -> Result<&'static str, ApiError> {
    if !st.ready.load(Ordering::Acquire) {
        return Err(ApiError::new(
            ErrorCode::Starting,
            "start-up has not finished",
        ));
    }
    // The ledger answers (asked at most once a second, however often this is called).
    st.engine.ledger_answers().await?;
    Ok("ready")
}

/// How the API document describes `metrics`, and what it refuses with.
pub(crate) const METRICS_DOC: Doc = Doc {
    op: "metrics",
    body: None,
    ok: &[],
    refuses: &[],
    shared: &[],
};

pub async fn metrics(State(st): State<AppState>) -> Response {
    // Read at scrape time rather than kept on every request's way in and out.
    metrics::gauge!("boxoffice_http_in_flight").set(st.edge.in_flight() as f64);
    let body = st
        .metrics
        .as_ref()
        .map(|render| render())
        .unwrap_or_default();
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4"),
        )],
        body,
    )
        .into_response()
}

/// How the API document describes `openapi`, and what it refuses with.
pub(crate) const OPENAPI_DOC: Doc = Doc {
    op: "openapi",
    body: None,
    ok: &[],
    refuses: &[],
    shared: &[],
};

pub async fn openapi() -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        crate::openapi::document(),
    )
        .into_response()
}

/// How the API document describes `jwks`, and what it refuses with.
pub(crate) const JWKS_DOC: Doc = Doc {
    op: "jwks",
    body: None,
    ok: &[],
    refuses: &[],
    shared: &[],
};

/// The public keys of queue tickets and admission tokens (a JSON Web Key Set), for
/// edges that verify them without calling us. Public and cacheable: it changes only
/// when the server restarts with other keys, and is a few hundred bytes (the ring
/// holds at most 16 keys).
pub async fn jwks(State(st): State<AppState>) -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=300"),
            ),
        ],
        st.engine.jwks(),
    )
        .into_response()
}

/// How the API document describes the Swagger UI page.
pub(crate) const DOCS_DOC: Doc = Doc {
    op: "getDocs",
    body: None,
    ok: &[],
    refuses: &[],
    shared: &[],
};

/// How the API document describes the files of the Swagger UI page.
pub(crate) const DOCS_ASSET_DOC: Doc = Doc {
    op: "getDocsAsset",
    body: None,
    ok: &[],
    refuses: &[ErrorCode::NotFound],
    shared: &[],
};
