//! Swagger UI at /docs, from files embedded in the binary (nothing is fetched at build
//! or run time; see `assets/swagger-ui/README.md`). The page loads only its own
//! scripts and styles and reads /openapi.json, so a strict Content-Security-Policy
//! holds: Swagger UI styles elements inline and draws icons from data: URIs, which
//! are the only allowances.

use crate::web::FileName;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::code::ErrorCode;
use crate::error::ApiError;

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                   img-src 'self' data:; font-src 'self' data:; connect-src 'self'; \
                   base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const INDEX: &[u8] = include_bytes!("../../assets/swagger-ui/index.html");

/// The embedded files, by name, with their media types.
const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "swagger-ui-bundle.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/swagger-ui/swagger-ui-bundle.js"),
    ),
    (
        "swagger-ui.css",
        "text/css; charset=utf-8",
        include_bytes!("../../assets/swagger-ui/swagger-ui.css"),
    ),
    (
        "init.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/swagger-ui/init.js"),
    ),
];

fn respond(media_type: &'static str, body: &'static [u8]) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(media_type)),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CSP),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=300"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        body,
    )
        .into_response()
}

/// GET /docs: the Swagger UI page.
pub async fn docs_page() -> Response {
    respond("text/html; charset=utf-8", INDEX)
}

/// GET /docs/{file}: a file of the page; any other name is `not_found`.
pub async fn docs_asset(FileName(file): FileName) -> Response {
    match ASSETS.iter().find(|(name, _, _)| *name == file) {
        Some((_, media_type, body)) => respond(media_type, body),
        None => ApiError::new(ErrorCode::NotFound, "no such file").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_only_embedded_files_and_no_inline_script() {
        let page = String::from_utf8_lossy(INDEX);
        for (at, _) in page.match_indices("/docs/") {
            let name: String = page[at + 6..].chars().take_while(|c| *c != '"').collect();
            assert!(
                ASSETS.iter().any(|(n, _, _)| *n == name),
                "{name} is not embedded"
            );
        }
        assert!(
            !page.contains("<script>"),
            "an inline script would need 'unsafe-inline'"
        );
        assert!(!CSP.contains("script-src 'self' 'unsafe"));
    }

    #[tokio::test]
    async fn the_files_are_served_with_the_policy_and_an_unknown_one_is_not_found() {
        let res = docs_asset(FileName("swagger-ui-bundle.js".into())).await;
        assert_eq!(res.headers()[header::CONTENT_SECURITY_POLICY], CSP);
        assert!(
            res.headers()[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("text/javascript")
        );
        let res = docs_asset(FileName("../Cargo.toml".into())).await;
        assert_eq!(res.status(), axum::http::StatusCode::NOT_FOUND);
        let res = docs_page().await;
        assert_eq!(res.headers()[header::CONTENT_SECURITY_POLICY], CSP);
    }
}
