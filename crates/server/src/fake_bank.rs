//! The stand-in provider's confirmation page: where a payment waiting for the buyer
//! (3-D Secure, a bank redirect) sends them, as a real provider sends them to their
//! bank. Served only by a node that runs the stand-in; two buttons approve or decline
//! the payment, and the provider's webhook then settles the order as it would any
//! other. Plain HTML forms: no script, no style, nothing from elsewhere. The page is
//! public, so it is paced: at most `PER_SECOND` requests a second reach the provider's
//! records, the rest are told to come back (429 with Retry-After).

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use boxoffice_engine::ports::ProviderState;
use boxoffice_payment_fake::{CONFIRM_PATH, FakeGateway};

/// Requests a second the page answers in all; a person confirms one payment in seconds.
pub const PER_SECOND: u32 = 50;

/// A fixed one-second window over the whole page.
#[derive(Default)]
struct Pace {
    window: std::sync::Mutex<(Option<Instant>, u32)>,
}

impl Pace {
    fn admit(&self) -> bool {
        let mut w = self.window.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        match w.0 {
            Some(start) if now.saturating_duration_since(start).as_secs() < 1 => {
                w.1 += 1;
                w.1 <= PER_SECOND
            }
            _ => {
                *w = (Some(now), 1);
                true
            }
        }
    }
}

async fn paced(State(pace): State<Arc<Pace>>, req: Request, next: Next) -> Response {
    if pace.admit() {
        return next.run(req).await;
    }
    let mut res = html(
        StatusCode::TOO_MANY_REQUESTS,
        "Busy",
        "<p>The test bank is busy. Try again in a second.</p>",
    );
    (res.headers_mut()).insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    res
}

const CSP: &str = "default-src 'none'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The page and its two answers, under [`CONFIRM_PATH`].
pub fn router(fake: Arc<FakeGateway>) -> Router {
    let page = format!("{CONFIRM_PATH}{{reference}}");
    Router::new()
        .route(&page, get(show))
        .route(&format!("{page}/approve"), post(approve))
        .route(&format!("{page}/decline"), post(decline))
        .with_state(fake)
        .layer(middleware::from_fn_with_state(
            Arc::new(Pace::default()),
            paced,
        ))
}

async fn show(State(fake): State<Arc<FakeGateway>>, Path(reference): Path<String>) -> Response {
    let Some(record) = find(&fake, &reference).await else {
        return html(
            StatusCode::NOT_FOUND,
            "No such payment",
            "<p>This test bank knows no such payment.</p>",
        );
    };
    if record.state != ProviderState::RequiresAction {
        return html(
            StatusCode::OK,
            "Nothing to confirm",
            "<p>This payment is no longer waiting for you. Return to the box office.</p>",
        );
    }
    let amount = format!(
        "{} {}.{:02}",
        record.currency,
        record.amount.0 / 100,
        record.amount.0 % 100
    );
    let body = format!(
        "<p>The box office asks you to confirm a payment of <strong>{amount}</strong> \
         (test bank: no money moves).</p>\
         <form method=\"post\" action=\"{CONFIRM_PATH}{reference}/approve\">\
         <button type=\"submit\">Approve the payment</button></form>\
         <form method=\"post\" action=\"{CONFIRM_PATH}{reference}/decline\">\
         <button type=\"submit\">Decline the payment</button></form>"
    );
    html(StatusCode::OK, "Confirm your payment", &body)
}

async fn approve(fake: State<Arc<FakeGateway>>, reference: Path<String>) -> Response {
    answer(fake, reference, true).await
}

async fn decline(fake: State<Arc<FakeGateway>>, reference: Path<String>) -> Response {
    answer(fake, reference, false).await
}

async fn answer(
    State(fake): State<Arc<FakeGateway>>,
    Path(reference): Path<String>,
    approve: bool,
) -> Response {
    let Some(record) = find(&fake, &reference).await else {
        return html(
            StatusCode::NOT_FOUND,
            "No such payment",
            "<p>This test bank knows no such payment.</p>",
        );
    };
    match fake.complete_action(record.order, approve).await {
        Ok(_) if approve => html(
            StatusCode::OK,
            "Payment approved",
            "<p>You approved the payment. Close this tab and return to the box office: it shows your tickets once the payment is confirmed.</p>",
        ),
        Ok(_) => html(
            StatusCode::OK,
            "Payment declined",
            "<p>You declined the payment. Close this tab and return to the box office.</p>",
        ),
        Err(_) => html(
            StatusCode::CONFLICT,
            "Nothing to confirm",
            "<p>This payment is no longer waiting for you. Return to the box office.</p>",
        ),
    }
}

/// The payment by its reference; references are the provider's own (`fake_pi_…`), so
/// anything else is refused before a lookup.
async fn find(fake: &FakeGateway, reference: &str) -> Option<boxoffice_payment_fake::Record> {
    let plausible = !reference.is_empty()
        && reference.len() <= 64
        && reference
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !plausible {
        return None;
    }
    fake.record_by_reference(reference.to_owned())
        .await
        .ok()
        .flatten()
}

fn html(status: StatusCode, title: &str, body: &str) -> Response {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} — test bank</title></head><body><main><h1>{title}</h1>{body}</main>\
         </body></html>"
    );
    (
        status,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            ),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CSP),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        page,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_answers_at_most_its_pace_in_a_second() {
        let pace = Pace::default();
        for _ in 0..PER_SECOND {
            assert!(pace.admit());
        }
        assert!(!pace.admit(), "one over the pace is refused");
        *pace.window.lock().unwrap() = (
            Some(Instant::now() - std::time::Duration::from_secs(2)),
            999,
        );
        assert!(pace.admit(), "a new second starts afresh");
    }
}
