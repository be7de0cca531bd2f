//! Operations and published documents: liveness, readiness, Prometheus metrics, the
//! OpenAPI document and the token verification keys.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;

pub async fn healthz() -> &'static str {
    "ok"
}

/// Ready once start-up finished (hot store rebuilt) and while the ledger answers.
pub async fn readyz(State(st): State<AppState>) -> Result<&'static str, ApiError> {
    if !st.ready.load(Ordering::Acquire) {
        return Err(ApiError::new(
            ErrorCode::Starting,
            "start-up has not finished",
        ));
    }
    // The ledger answers.
    st.engine.open_events().await?;
    Ok("ready")
}

pub async fn metrics(State(st): State<AppState>) -> Response {
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

pub async fn openapi() -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        crate::OPENAPI,
    )
        .into_response()
}

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
