//! The web app's pages (the buyer app, the operator console) and files (see `crate::web`): public, the page `no-cache`,
//! the files by content-hashed name and `immutable`, each gzipped when the client
//! takes it, all under the app's strict Content-Security-Policy.

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::openapi::Doc;
use crate::web::{APP, Body};

/// How the API document describes the buyer app's page.
pub(crate) const PAGE_DOC: Doc = Doc {
    op: "getWebApp",
    body: None,
    ok: &[],
    refuses: &[],
    shared: &[],
};

/// How the API document describes the operator console's page.
pub(crate) const CONSOLE_DOC: Doc = Doc {
    op: "getConsole",
    body: None,
    ok: &[],
    refuses: &[],
    shared: &[],
};

/// How the API document describes the files of the buyer app.
pub(crate) const ASSET_DOC: Doc = Doc {
    op: "getWebAsset",
    body: None,
    ok: &[],
    refuses: &[ErrorCode::NotFound],
    shared: &[],
};

/// GET /: the buyer app.
pub async fn page(headers: HeaderMap) -> Response {
    respond(&APP.index, &headers, "no-cache")
}

/// GET /console: the operator console (the operator key is asked for on the page and
/// kept in the tab's sessionStorage, never in a URL).
pub async fn console(headers: HeaderMap) -> Response {
    respond(&APP.console, &headers, "no-cache")
}

/// GET /assets/{file}: a file of the app by its hashed name; any other is `not_found`.
pub async fn asset(headers: HeaderMap, Path(file): Path<String>) -> Response {
    match APP.files.get(&file) {
        Some(body) => respond(body, &headers, "public, max-age=31536000, immutable"),
        None => ApiError::new(ErrorCode::NotFound, "no such file").into_response(),
    }
}

fn respond(body: &Body, headers: &HeaderMap, cache: &'static str) -> Response {
    let (bytes, encoding) = body.for_client(headers);
    let mut res = bytes.into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(body.media_type),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(header::CONTENT_SECURITY_POLICY, APP.csp.clone());
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if let Some(encoding) = encoding {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(encoding));
    }
    res
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;

    use super::*;
    use crate::web::FILES;

    fn gzip_please() -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
        h
    }

    #[tokio::test]
    async fn the_page_is_revalidated_and_carries_the_policy() {
        let res = page(gzip_please()).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()[header::CACHE_CONTROL], "no-cache");
        assert_eq!(res.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(res.headers()[header::CONTENT_SECURITY_POLICY], APP.csp);
        assert!(
            res.headers()[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
    }

    #[tokio::test]
    async fn a_hashed_file_is_immutable_and_a_plain_or_unknown_name_is_not_found() {
        let (name, _, body) = FILES.iter().find(|f| f.0 == "main.js").unwrap();
        let hashed = crate::web::hashed_name(name, body);
        let res = asset(HeaderMap::new(), Path(hashed)).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert!(
            res.headers()[header::CACHE_CONTROL]
                .to_str()
                .unwrap()
                .contains("immutable")
        );
        assert!(res.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(res.headers()[header::VARY], "accept-encoding");
        for name in ["main.js", "../Cargo.toml", "main.0000000000.js"] {
            let res = asset(HeaderMap::new(), Path(name.into())).await;
            assert_eq!(res.status(), StatusCode::NOT_FOUND, "{name}");
        }
    }
}
