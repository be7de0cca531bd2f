//! The one HTTP error type: every engine error and every bad request maps to a status
//! and a stable machine-readable code. Internal detail is logged once, never sent.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use boxoffice_domain::token::TokenError;
use boxoffice_engine::{EngineError, Resource};
use serde::Serialize;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

#[derive(Serialize)]
struct Body<'a> {
    error: &'a str,
    message: &'a str,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn not_found(what: Resource) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            not_found_code(what),
            format!("no such {what}"),
        )
    }

    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(&Body {
            error: self.code,
            message: &self.message,
        })
        .unwrap_or_default()
    }
}

fn not_found_code(what: Resource) -> &'static str {
    match what {
        Resource::Event => "event_not_found",
        Resource::Seat => "seat_not_found",
        Resource::Section => "section_not_found",
        Resource::Hold => "hold_not_found",
        Resource::Order => "order_not_found",
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> ApiError {
        use EngineError as E;
        use StatusCode as S;
        let msg = e.to_string();
        let (status, code) = match &e {
            E::NotFound(what) => return ApiError::not_found(*what),
            E::Invalid(_) => (S::UNPROCESSABLE_ENTITY, "invalid_request"),
            E::BadToken(TokenError::Expired) => (S::UNAUTHORIZED, "token_expired"),
            E::BadToken(TokenError::NotYetValid) => (S::UNAUTHORIZED, "token_not_yet_valid"),
            E::BadToken(TokenError::UnknownKey) => (S::UNAUTHORIZED, "token_unknown_key"),
            E::BadToken(TokenError::WrongIssuer) => (S::UNAUTHORIZED, "token_wrong_issuer"),
            E::BadToken(TokenError::WrongAudience) => (S::UNAUTHORIZED, "token_wrong_audience"),
            E::BadToken(TokenError::WrongEvent) => (S::FORBIDDEN, "token_wrong_event"),
            E::BadToken(TokenError::WrongSession) => (S::FORBIDDEN, "session_mismatch"),
            E::BadToken(_) => (S::UNAUTHORIZED, "invalid_token"),
            E::Forbidden(_) => (S::FORBIDDEN, "forbidden"),
            E::NotAdmitted => (S::FORBIDDEN, "not_admitted"),
            E::AdmissionExpired => (S::GONE, "admission_expired"),
            E::SaleNotOpen => (S::CONFLICT, "sale_not_open"),
            E::SaleClosed => (S::CONFLICT, "sale_closed"),
            E::SeatUnavailable => (S::CONFLICT, "seat_unavailable"),
            E::SoldOut => (S::CONFLICT, "sold_out"),
            E::LimitExceeded { .. } => (S::UNPROCESSABLE_ENTITY, "limit_exceeded"),
            E::HoldExpired => (S::GONE, "hold_expired"),
            E::HoldNotActive(_) => (S::CONFLICT, "hold_not_active"),
            E::CheckoutInProgress => (S::CONFLICT, "checkout_in_progress"),
            E::PaymentDeclined(_) => (S::PAYMENT_REQUIRED, "payment_declined"),
            E::SeatSold => (S::CONFLICT, "seat_sold"),
            E::Unavailable(_) => (S::SERVICE_UNAVAILABLE, "unavailable"),
            E::Internal(_) => (S::INTERNAL_SERVER_ERROR, "internal"),
        };
        let message = match &e {
            E::Unavailable(detail) | E::Internal(detail) => {
                tracing::error!(detail = %detail, code, "request failed");
                if status == S::SERVICE_UNAVAILABLE {
                    "temporarily unavailable; retry shortly"
                } else {
                    "internal error"
                }
                .to_string()
            }
            _ => msg,
        };
        ApiError {
            status,
            code,
            message,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        // Refusals that say "not now" say when to come back; a route that knows better
        // (a rate limit's own wait) replaces the header.
        let retry = matches!(
            self.status,
            StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS
        );
        let mut res = (
            self.status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            self.body(),
        )
            .into_response();
        if retry {
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        res
    }
}
