//! The one HTTP error type: every engine error and every bad request maps to a status
//! and a stable machine-readable code. Internal detail is never sent: it travels with
//! the response as `Failure` to the edge middleware, which logs it once, in the
//! request's span (see `trace`).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use boxoffice_domain::token::TokenError;
use boxoffice_engine::{EngineError, Resource};

use crate::code::ErrorCode;
use serde::Serialize;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: ErrorCode,
    pub message: String,
    /// What went wrong inside, for the log only.
    detail: Option<String>,
    /// Seconds the client should wait, when the refusal knows (else 1 for 429 and 503).
    retry_after_s: Option<u64>,
}

/// An error response's code and inside detail, kept on the response for the log.
#[derive(Clone, Debug)]
pub(crate) struct Failure {
    pub code: ErrorCode,
    pub detail: Option<String>,
}

/// Every error response has this shape.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Error)]
pub(crate) struct ErrorBody<'a> {
    /// Stable machine-readable code; branch on this, not on the message.
    error: ErrorCode,
    /// Human-readable explanation; wording may change.
    message: &'a str,
}

impl ApiError {
    /// A refusal with the code's usual status.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError::with_status(code.status(), code, message)
    }

    /// A refusal with one of the code's other statuses.
    pub fn with_status(
        status: StatusCode,
        code: ErrorCode,
        message: impl Into<String>,
    ) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            detail: None,
            retry_after_s: None,
        }
    }

    /// What the log says of this error.
    pub(crate) fn failure(&self) -> Failure {
        Failure {
            code: self.code,
            detail: self.detail.clone(),
        }
    }

    pub fn not_found(what: Resource) -> ApiError {
        ApiError::new(not_found_code(what), format!("no such {what}"))
    }

    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(&ErrorBody {
            error: self.code,
            message: &self.message,
        })
        .unwrap_or_default()
    }
}

fn not_found_code(what: Resource) -> ErrorCode {
    match what {
        Resource::Event => ErrorCode::EventNotFound,
        Resource::Seat => ErrorCode::SeatNotFound,
        Resource::Section => ErrorCode::SectionNotFound,
        Resource::Hold => ErrorCode::HoldNotFound,
        Resource::Order => ErrorCode::OrderNotFound,
        Resource::Ticket => ErrorCode::TicketNotFound,
        Resource::Gate => ErrorCode::GateNotFound,
        Resource::Transfer => ErrorCode::TransferNotFound,
        Resource::Listing => ErrorCode::ListingNotFound,
        Resource::WebhookEndpoint => ErrorCode::WebhookEndpointNotFound,
    }
}

/// The code of an engine error.
fn engine_code(e: &EngineError) -> ErrorCode {
    use EngineError as E;
    use ErrorCode as C;
    match e {
        E::NotFound(what) => not_found_code(*what),
        E::Invalid(_) => C::InvalidRequest,
        E::BadToken(t) => token_code(t),
        E::Forbidden(_) => C::Forbidden,
        E::Proof(r) => proof_code(*r),
        E::NotAdmitted => C::NotAdmitted,
        E::AdmissionExpired => C::AdmissionExpired,
        E::SaleNotOpen => C::SaleNotOpen,
        E::SaleClosed => C::SaleClosed,
        E::SeatUnavailable => C::SeatUnavailable,
        E::SoldOut => C::SoldOut,
        E::LimitExceeded { .. } => C::LimitExceeded,
        E::HoldExpired => C::HoldExpired,
        E::HoldNotActive(_) => C::HoldNotActive,
        E::CheckoutInProgress => C::CheckoutInProgress,
        E::PaymentDeclined(_) => C::PaymentDeclined,
        E::SeatSold => C::SeatSold,
        E::Ticket(r) => crate::routes::gates::refusal_code(r),
        E::Exchange(r) => crate::routes::exchange::refusal_code(r),
        E::OrderNotCancellable(_) => C::OrderNotCancellable,
        E::RefundWindowClosed => C::RefundWindowClosed,
        E::OrderUsed => C::OrderUsed,
        E::OrderGivenAway => C::OrderGivenAway,
        E::EventCancelled => C::EventCancelled,
        E::EventNotCancelled => C::EventNotCancelled,
        E::PaymentVelocity { .. } => C::PaymentVelocity,
        E::BuyerLocked => C::BuyerLocked,
        E::TooManyBuyers(_) => C::TooManyBuyers,
        E::SinkInUse(_) => C::SinkInUse,
        E::Unavailable(_) => C::Unavailable,
        E::Internal(_) => C::Internal,
    }
}

fn proof_code(r: boxoffice_engine::ProofRefusal) -> ErrorCode {
    use boxoffice_engine::ProofRefusal as R;
    match r {
        R::Required => ErrorCode::ProofRequired,
        R::Invalid(_) => ErrorCode::ProofInvalid,
        R::Stale => ErrorCode::ProofStale,
        R::Replayed => ErrorCode::ProofReplayed,
        R::KeyMismatch => ErrorCode::ProofKeyMismatch,
    }
}

fn token_code(e: &TokenError) -> ErrorCode {
    use ErrorCode as C;
    match e {
        TokenError::Expired => C::TokenExpired,
        TokenError::NotYetValid => C::TokenNotYetValid,
        TokenError::UnknownKey => C::TokenUnknownKey,
        TokenError::WrongIssuer => C::TokenWrongIssuer,
        TokenError::WrongAudience => C::TokenWrongAudience,
        TokenError::WrongEvent => C::TokenWrongEvent,
        TokenError::WrongSession => C::SessionMismatch,
        TokenError::Malformed | TokenError::BadSignature | TokenError::WrongKind(_) => {
            C::InvalidToken
        }
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> ApiError {
        let code = engine_code(&e);
        match e {
            EngineError::Unavailable(detail) => ApiError {
                detail: Some(detail),
                ..ApiError::new(code, "temporarily unavailable; retry shortly")
            },
            EngineError::Internal(detail) => ApiError {
                detail: Some(detail),
                ..ApiError::new(code, "internal error")
            },
            EngineError::PaymentVelocity { retry_after_s } => ApiError {
                retry_after_s: Some(retry_after_s),
                ..ApiError::new(code, e.to_string())
            },
            e => ApiError::new(code, e.to_string()),
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
            let secs = self.retry_after_s.unwrap_or(1);
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        res.extensions_mut().insert(self.failure());
        res
    }
}
