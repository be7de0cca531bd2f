//! The buyer web app, embedded in the binary: plain ES modules from `web/app/` (no build
//! step, nothing fetched at run time). At start-up every file gets a content-hashed
//! name (`main.js` → `main.<hash>.js`, served `immutable`), the page is rewritten to
//! name them, an import map sends the modules' own imports to the hashed names, and
//! each body is gzipped once. The page itself is `no-cache`, so a new binary's page
//! reaches buyers at once and brings its new file names with it.

use std::collections::HashMap;
use std::io::Write;
use std::sync::LazyLock;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, header};
use base64::Engine as _;
use sha2::{Digest, Sha256};

/// Where the page's files are served from.
pub(crate) const PREFIX: &str = "/assets/";

const INDEX: &str = include_str!("../../../web/app/index.html");

/// The embedded files (besides the page), with their media types.
pub(crate) const FILES: &[(&str, &str, &[u8])] = &[
    ("app.css", CSS, include_bytes!("../../../web/app/app.css")),
    ("main.js", JS, include_bytes!("../../../web/app/main.js")),
    ("api.js", JS, include_bytes!("../../../web/app/api.js")),
    (
        "errors.js",
        JS,
        include_bytes!("../../../web/app/errors.js"),
    ),
    ("ui.js", JS, include_bytes!("../../../web/app/ui.js")),
    ("event.js", JS, include_bytes!("../../../web/app/event.js")),
    ("queue.js", JS, include_bytes!("../../../web/app/queue.js")),
    (
        "pow-worker.js",
        JS,
        include_bytes!("../../../web/app/pow-worker.js"),
    ),
    (
        "seatmap.js",
        JS,
        include_bytes!("../../../web/app/seatmap.js"),
    ),
    ("shop.js", JS, include_bytes!("../../../web/app/shop.js")),
    (
        "orders.js",
        JS,
        include_bytes!("../../../web/app/orders.js"),
    ),
    (
        "favicon.svg",
        SVG,
        include_bytes!("../../../web/app/favicon.svg"),
    ),
];

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const SVG: &str = "image/svg+xml";

/// One body as served: as is, and gzipped.
pub(crate) struct Body {
    pub media_type: &'static str,
    pub plain: Bytes,
    pub gzip: Bytes,
}

impl Body {
    fn new(media_type: &'static str, plain: Vec<u8>) -> Body {
        let gzip = gzip(&plain);
        Body {
            media_type,
            plain: Bytes::from(plain),
            gzip: Bytes::from(gzip),
        }
    }

    /// The body for a client that sent these headers, and its encoding if any.
    pub fn for_client(&self, headers: &HeaderMap) -> (Bytes, Option<&'static str>) {
        if accepts_gzip(headers) && self.gzip.len() < self.plain.len() {
            (self.gzip.clone(), Some("gzip"))
        } else {
            (self.plain.clone(), None)
        }
    }
}

/// The app as served: the page, the files by hashed name, the page's policy.
pub(crate) struct WebApp {
    pub index: Body,
    pub files: HashMap<String, Body>,
    /// The Content-Security-Policy of the page and its files.
    pub csp: HeaderValue,
}

/// Built on first use; `app()` forces it, so the work is done at start-up.
pub(crate) static APP: LazyLock<WebApp> = LazyLock::new(build);

fn build() -> WebApp {
    let mut page = INDEX.to_owned();
    let mut files = HashMap::new();
    let mut imports = serde_json::Map::new();
    for (name, media_type, body) in FILES {
        let hashed = hashed_name(name, body);
        let (plain, served) = (format!("{PREFIX}{name}"), format!("{PREFIX}{hashed}"));
        page = page.replace(&format!("\"{plain}\""), &format!("\"{served}\""));
        if *media_type == JS {
            imports.insert(plain, served.into());
        }
        files.insert(hashed, Body::new(media_type, body.to_vec()));
    }
    let map = serde_json::json!({ "imports": imports }).to_string();
    let page = page.replace(
        "<!--importmap-->",
        &format!("<script type=\"importmap\">{map}</script>"),
    );
    WebApp {
        index: Body::new("text/html; charset=utf-8", page.into_bytes()),
        files,
        csp: csp(&map),
    }
}

/// `name.<10 hex digits of its SHA-256>.ext`.
pub(crate) fn hashed_name(name: &str, body: &[u8]) -> String {
    let digest = Sha256::digest(body);
    let hash = boxoffice_domain::fairness::hex(&digest[..5]);
    match name.rsplit_once('.') {
        Some((stem, ext)) => format!("{stem}.{hash}.{ext}"),
        None => format!("{name}.{hash}"),
    }
}

/// Only the app's own files, plus the one inline script there is (the import map),
/// allowed by its digest: no inline code, no inline style, nothing from elsewhere.
fn csp(import_map: &str) -> HeaderValue {
    let digest = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(import_map));
    let policy = format!(
        "default-src 'none'; script-src 'self' 'sha256-{digest}'; style-src 'self'; \
         img-src 'self' data:; connect-src 'self'; worker-src 'self'; manifest-src 'self'; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    );
    HeaderValue::from_str(&policy).unwrap_or(HeaderValue::from_static("default-src 'none'"))
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing to a Vec cannot fail; an empty result just means the plain body is sent.
    enc.write_all(data)
        .and_then(|()| enc.finish())
        .unwrap_or_default()
}

/// Whether Accept-Encoding names gzip (or `*`) without `q=0`.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    value.split(',').any(|part| {
        let mut pieces = part.split(';').map(str::trim);
        let coding = pieces.next().unwrap_or("");
        let refused = pieces.any(|p| {
            p.strip_prefix("q=")
                .and_then(|q| q.parse::<f32>().ok())
                .is_some_and(|q| q == 0.0)
        });
        (coding.eq_ignore_ascii_case("gzip") || coding == "*") && !refused
    })
}

#[cfg(test)]
mod tests;
