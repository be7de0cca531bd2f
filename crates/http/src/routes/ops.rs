//! Operations and published documents: liveness, readiness, Prometheus metrics, the
//! OpenAPI document and the token verification keys.

use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::openapi::Doc;
use crate::{AppState, MetricsRender};

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

/// The metrics rendered one scrape at a time. `/metrics` is a probe (never shed, no
/// credential, as a Prometheus server scrapes it), and each rendering formats every
/// series: scrapes arriving while one renders wait for the next rendering and share
/// it, so a flood of scrapes costs one rendering at a time, and every scrape still
/// sees a rendering begun after it arrived (nothing older than its request).
#[derive(Default)]
pub(crate) struct Scrapes {
    last: tokio::sync::Mutex<Option<(Instant, Bytes)>>,
}

impl Scrapes {
    async fn render(&self, arrived: Instant, render: &MetricsRender) -> Bytes {
        let mut last = self.last.lock().await;
        if let Some((began, body)) = &*last
            && *began >= arrived
        {
            return body.clone();
        }
        let began = Instant::now();
        let body = Bytes::from(render());
        *last = Some((began, body.clone()));
        body
    }
}

pub async fn metrics(State(st): State<AppState>) -> Response {
    let arrived = Instant::now();
    // Read at scrape time rather than kept on every request's way in and out.
    metrics::gauge!("boxoffice_http_in_flight").set(st.edge.in_flight() as f64);
    let body = match &st.metrics {
        Some(render) => st.edge.scrapes.render(arrived, render).await,
        None => Bytes::new(),
    };
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A flood of scrapes rendered every series once each, on a route that is never
    /// shed: scrapes waiting while one renders now share the next rendering, and none
    /// is answered with a rendering begun before it arrived.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn scrapes_arriving_together_share_one_rendering() {
        let renders = Arc::new(AtomicUsize::new(0));
        let counted = renders.clone();
        let render: MetricsRender = Arc::new(move || {
            let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
            std::thread::sleep(std::time::Duration::from_millis(20));
            format!("renders {n}\n")
        });
        let scrapes = Arc::new(Scrapes::default());
        let all = (0..50).map(|_| {
            let (scrapes, render) = (scrapes.clone(), render.clone());
            tokio::spawn(async move { scrapes.render(Instant::now(), &render).await })
        });
        let bodies = futures::future::join_all(all).await;
        assert!(bodies.iter().all(|b| b.is_ok()));
        let made = renders.load(Ordering::SeqCst);
        // One rendering a round of waiters (without the sharing: fifty).
        assert!(made <= 10, "50 scrapes at once rendered {made} times");
        // A scrape after those is answered with a rendering of its own.
        let later = scrapes.render(Instant::now(), &render).await;
        assert_eq!(renders.load(Ordering::SeqCst), made + 1);
        assert_eq!(later, Bytes::from(format!("renders {}\n", made + 1)));
    }
}
