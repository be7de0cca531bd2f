//! The web app, embedded in the binary: plain ES modules from `web/app/` (no build
//! step, nothing fetched at run time), with two pages, the buyer app (`index.html` at
//! `/`) and the operator console (`console.html` at `/console`), which share modules.
//! At start-up every file gets a content-hashed name (`main.js` → `main.<hash>.js`,
//! served `immutable`), the pages are rewritten to name them, an import map sends the
//! modules' own imports to the hashed names, and each body is compressed once (gzip,
//! and brotli). The pages themselves are `no-cache`, so a new binary's page reaches
//! its readers at once and brings its new file names with it.

use std::collections::HashMap;
use std::io::Write;
use std::sync::LazyLock;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, header};
use base64::Engine as _;
use boxoffice_domain::human_check::HostedProvider;
use sha2::{Digest, Sha256};

/// Where the page's files are served from.
pub(crate) const PREFIX: &str = "/assets/";

const INDEX: &str = include_str!("../../../web/app/index.html");
const CONSOLE: &str = include_str!("../../../web/app/console.html");
/// A served file's name, from the route's one path parameter, read without axum's
/// `Path`, whose refusal of a segment that does not decode to UTF-8 is an uncoded 400:
/// a name that is no file's, however it was sent, is answered `not_found`.
pub struct FileName(pub String);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for FileName {
    type Rejection = std::convert::Infallible;
    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        let raw = axum::extract::RawPathParams::from_request_parts(parts, state).await;
        let name = raw
            .ok()
            .and_then(|r| r.iter().next().map(|(_, v)| v.to_owned()));
        Ok(FileName(name.unwrap_or_default()))
    }
}

/// The pages, which are not in `FILES`: they are served by their routes, not by name.
#[cfg(test)]
pub(crate) const PAGES: [&str; 2] = ["index.html", "console.html"];

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
    ("pop.js", JS, include_bytes!("../../../web/app/pop.js")),
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
    ("list.js", JS, include_bytes!("../../../web/app/list.js")),
    ("qr.js", JS, include_bytes!("../../../web/app/qr.js")),
    (
        "console.css",
        CSS,
        include_bytes!("../../../web/app/console.css"),
    ),
    (
        "console.js",
        JS,
        include_bytes!("../../../web/app/console.js"),
    ),
    (
        "charts.js",
        JS,
        include_bytes!("../../../web/app/charts.js"),
    ),
    (
        "dashboard.js",
        JS,
        include_bytes!("../../../web/app/dashboard.js"),
    ),
    (
        "templates.js",
        JS,
        include_bytes!("../../../web/app/templates.js"),
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

/// One body as served: as is, gzipped, and brotli-compressed.
pub(crate) struct Body {
    pub media_type: &'static str,
    pub plain: Bytes,
    pub gzip: Bytes,
    pub br: Bytes,
}

impl Body {
    fn new(media_type: &'static str, plain: Vec<u8>) -> Body {
        let gzip = gzip(&plain);
        let br = brotli(&plain);
        Body {
            media_type,
            plain: Bytes::from(plain),
            gzip: Bytes::from(gzip),
            br: Bytes::from(br),
        }
    }

    /// The body for a client that sent these headers, and its encoding if any: the
    /// smallest the client takes, the plain body when compression would not shrink it.
    pub fn for_client(&self, headers: &HeaderMap) -> (Bytes, Option<&'static str>) {
        let takes = |coding: &str| accepts(headers, coding);
        let smaller = |b: &Bytes| !b.is_empty() && b.len() < self.plain.len();
        if takes("br") && smaller(&self.br) {
            (self.br.clone(), Some("br"))
        } else if takes("gzip") && smaller(&self.gzip) {
            (self.gzip.clone(), Some("gzip"))
        } else {
            (self.plain.clone(), None)
        }
    }
}

/// The app as served: the pages, the files by hashed name, the pages' policy.
pub(crate) struct WebApp {
    pub index: Body,
    pub console: Body,
    pub files: HashMap<String, Body>,
    /// The Content-Security-Policy of the pages and their files.
    pub csp: HeaderValue,
    /// The buyer page's policy when it draws a hosted human-check widget: the strict
    /// one plus that provider's origins, one per provider.
    pub csp_with: HashMap<HostedProvider, HeaderValue>,
}

/// Built on first use; `app()` forces it, so the work is done at start-up.
pub(crate) static APP: LazyLock<WebApp> = LazyLock::new(build);

fn build() -> WebApp {
    let (mut index, mut console) = (INDEX.to_owned(), CONSOLE.to_owned());
    let mut files = HashMap::new();
    let mut imports = serde_json::Map::new();
    for (name, media_type, body) in FILES {
        let hashed = hashed_name(name, body);
        let (plain, served) = (format!("{PREFIX}{name}"), format!("{PREFIX}{hashed}"));
        for page in [&mut index, &mut console] {
            *page = page.replace(&format!("\"{plain}\""), &format!("\"{served}\""));
        }
        if *media_type == JS {
            imports.insert(plain, served.into());
        }
        files.insert(hashed, Body::new(media_type, body.to_vec()));
    }
    // One import map for both pages, so one digest in the policy allows it.
    let map = serde_json::json!({ "imports": imports }).to_string();
    let tag = format!("<script type=\"importmap\">{map}</script>");
    let page = |p: String| Body::new(HTML, p.replace("<!--importmap-->", &tag).into_bytes());
    WebApp {
        index: page(index),
        console: page(console),
        files,
        csp: csp(&map, None),
        csp_with: HostedProvider::ALL
            .into_iter()
            .map(|p| (p, csp(&map, Some(p))))
            .collect(),
    }
}

const HTML: &str = "text/html; charset=utf-8";

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
/// allowed by its digest: no inline code, no inline style, nothing from elsewhere. With
/// `widget`, also the origins that provider documents for its widget's script, frames
/// and calls, and nothing else.
fn csp(import_map: &str, widget: Option<HostedProvider>) -> HeaderValue {
    let digest = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(import_map));
    let (script, frame, style, connect) = match widget {
        None => ("", "", "", ""),
        Some(HostedProvider::Turnstile) => {
            let cf = " https://challenges.cloudflare.com";
            (cf, cf, "", "")
        }
        Some(HostedProvider::Hcaptcha) => {
            let h = " https://hcaptcha.com https://*.hcaptcha.com";
            (h, h, h, h)
        }
        Some(HostedProvider::Recaptcha) => (
            " https://www.google.com/recaptcha/ https://www.gstatic.com/recaptcha/",
            " https://www.google.com/recaptcha/ https://recaptcha.google.com/recaptcha/",
            "",
            "",
        ),
    };
    let frames = if frame.is_empty() {
        String::new()
    } else {
        format!(" frame-src{frame};")
    };
    let policy = format!(
        "default-src 'none'; script-src 'self' 'sha256-{digest}'{script}; style-src 'self'{style}; \
         img-src 'self' data:; connect-src 'self'{connect};{frames} worker-src 'self'; \
         manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
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

/// Brotli at its best quality: done once per file at start-up, so the time is spent
/// once and every client gets the smallest body.
fn brotli(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let params = brotli::enc::BrotliEncoderParams {
        quality: 11,
        lgwin: 22,
        ..Default::default()
    };
    // Reading from a slice and writing to a Vec cannot fail; empty means plain is sent.
    match brotli::BrotliCompress(&mut &data[..], &mut out, &params) {
        Ok(_) => out,
        Err(_) => Vec::new(),
    }
}

/// Whether Accept-Encoding takes this coding: named without `q=0`, or not named and
/// `*` is taken.
fn accepts(headers: &HeaderMap, wanted: &str) -> bool {
    let Some(value) = headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let mut star = None;
    for part in value.split(',') {
        let mut pieces = part.split(';').map(str::trim);
        let coding = pieces.next().unwrap_or("");
        let refused = pieces.any(|p| {
            p.strip_prefix("q=")
                .and_then(|q| q.parse::<f32>().ok())
                .is_some_and(|q| q == 0.0)
        });
        if coding.eq_ignore_ascii_case(wanted) {
            return !refused;
        }
        if coding == "*" {
            star = Some(!refused);
        }
    }
    star.unwrap_or(false)
}

#[cfg(test)]
mod tests;
