//! The web app's pages (the buyer app, the operator console) and files (see `crate::web`): public, the page `no-cache`,
//! the files by content-hashed name and `immutable`, each gzipped when the client
//! takes it, all under the app's strict Content-Security-Policy.

use axum::extract::{RawQuery, State};
use boxoffice_domain::human_check::HostedProvider;

use crate::AppState;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::openapi::Doc;
use crate::web::{APP, Body, FileName};

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

/// GET /: the buyer app. Under the strict policy, except for `?check=<provider>` naming
/// a hosted human check this server can verify: then with that provider's widget
/// origins, on this page load only (the app reloads itself so when an event asks for
/// one). Any other query is ignored.
pub async fn page(
    State(st): State<AppState>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let widget = query
        .as_deref()
        .and_then(asked_widget)
        .filter(|p| st.engine.verifies(*p));
    index(&headers, widget)
}

/// The provider named by `check=` in a query string.
fn asked_widget(query: &str) -> Option<HostedProvider> {
    let name = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("check="))?;
    HostedProvider::ALL.into_iter().find(|p| p.as_str() == name)
}

fn index(headers: &HeaderMap, widget: Option<HostedProvider>) -> Response {
    let mut res = respond(&APP.index, headers, "no-cache");
    if let Some(policy) = widget.and_then(|p| APP.csp_with.get(&p)) {
        res.headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, policy.clone());
    }
    res
}

/// GET /console: the operator console (the operator key is asked for on the page and
/// kept in the tab's sessionStorage, never in a URL).
pub async fn console(headers: HeaderMap) -> Response {
    respond(&APP.console, &headers, "no-cache")
}

/// GET /assets/{file}: a file of the app by its hashed name; any other is `not_found`.
pub async fn asset(headers: HeaderMap, FileName(file): FileName) -> Response {
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
    page_headers(h, cache, APP.csp.clone());
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if let Some(encoding) = encoding {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(encoding));
    }
    res
}

/// What every page and file of the app is answered with, a shed page's too: how long a
/// cache may keep it, its Content-Security-Policy, and neither a guessed type nor the
/// page's address passed on to another site.
pub(crate) fn page_headers(h: &mut HeaderMap, cache: &'static str, policy: HeaderValue) {
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(header::CONTENT_SECURITY_POLICY, policy);
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
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

    #[test]
    fn only_a_named_provider_widens_the_policy_and_only_by_its_origins() {
        assert_eq!(
            asked_widget("check=turnstile"),
            Some(HostedProvider::Turnstile)
        );
        assert_eq!(
            asked_widget("x=1&check=hcaptcha"),
            Some(HostedProvider::Hcaptcha)
        );
        assert_eq!(asked_widget("check=evil.example"), None);
        assert_eq!(asked_widget("x=check=turnstile"), None);
        let strict = index(&HeaderMap::new(), None);
        let strict = strict.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap();
        assert!(!strict.contains("https://") && !strict.contains("frame-src"));
        let res = index(&HeaderMap::new(), Some(HostedProvider::Turnstile));
        let policy = res.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap();
        assert!(policy.contains("script-src 'self' 'sha256-"));
        assert!(policy.contains("https://challenges.cloudflare.com; style-src 'self';"));
        assert!(policy.contains("frame-src https://challenges.cloudflare.com;"));
        assert!(!policy.contains("hcaptcha") && !policy.contains("google"));
        assert!(policy.contains("frame-ancestors 'none'") && !policy.contains("unsafe"));
    }

    #[tokio::test]
    async fn the_page_is_revalidated_and_carries_the_policy() {
        let res = index(&gzip_please(), None);
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
        let res = asset(HeaderMap::new(), FileName(hashed)).await;
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
            let res = asset(HeaderMap::new(), FileName(name.into())).await;
            assert_eq!(res.status(), StatusCode::NOT_FOUND, "{name}");
        }
    }
}
