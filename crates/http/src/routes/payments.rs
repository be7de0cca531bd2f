//! The payment provider's webhook. Signed by the provider (`Stripe-Signature`), so it
//! takes no bearer token and no `Idempotency-Key`: duplicates are harmless because the
//! engine settles from the provider's current state, not from the webhook's content
//! (and an event id already handled is answered without asking the provider again).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use boxoffice_domain::exchange::SwapState;
use boxoffice_domain::{OrderId, OrderState, SwapId};
use boxoffice_engine::ports::WebhookError;
use boxoffice_engine::{WebhookReceipt, WebhookRejected};
use serde::Serialize;

use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::openapi::{Doc, Schema};

/// The header providers sign with (Stripe's name; the fake uses the same format).
const SIGNATURE_HEADER: &str = "stripe-signature";

/// Acknowledged. `order_id`, `status` (after settling) and `duplicate` when the payment
/// is one of our orders; `swap_id`, `swap_state` and `duplicate` when it is the charge
/// of an exchange purchase.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = WebhookReceipt)]
pub struct Receipt {
    received: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    order_id: Option<OrderId>,
    /// The order's state after settling.
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<OrderState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    swap_id: Option<SwapId>,
    /// The swap's state after driving it on.
    #[serde(skip_serializing_if = "Option::is_none")]
    swap_state: Option<SwapState>,
    /// True when this event id was already handled: the order's current state is
    /// reported and the provider is not asked again.
    #[serde(skip_serializing_if = "Option::is_none")]
    duplicate: Option<bool>,
}

/// How the API document describes `webhook`, and what it refuses with.
pub(crate) const WEBHOOK_DOC: Doc = Doc {
    op: "paymentWebhook",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<Receipt>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::Internal,
            C::InvalidSignature,
            C::MalformedWebhook,
            C::MissingSignature,
            C::StaleWebhook,
            C::Unavailable,
        ]
    },
    shared: &[crate::extract::BODY_REFUSES],
};

pub async fn webhook(State(st): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let Some(signature) = headers.get(SIGNATURE_HEADER).and_then(|v| v.to_str().ok()) else {
        return rejected(WebhookError::MissingSignature).into_response();
    };
    match st.engine.handle_webhook(&body, signature).await {
        Ok(WebhookReceipt::Settled {
            order,
            status,
            duplicate,
        }) => Json(Receipt {
            received: true,
            order_id: Some(order),
            status: Some(status),
            swap_id: None,
            swap_state: None,
            duplicate: Some(duplicate),
        })
        .into_response(),
        Ok(WebhookReceipt::Swap {
            swap,
            state,
            duplicate,
        }) => Json(Receipt {
            received: true,
            order_id: None,
            status: None,
            swap_id: Some(swap),
            swap_state: Some(state),
            duplicate: Some(duplicate),
        })
        .into_response(),
        Ok(WebhookReceipt::Ignored) => Json(Receipt {
            received: true,
            order_id: None,
            status: None,
            swap_id: None,
            swap_state: None,
            duplicate: None,
        })
        .into_response(),
        Err(WebhookRejected::Invalid(e)) => rejected(e).into_response(),
        // A 5xx makes the provider deliver again later, which is what we want.
        Err(WebhookRejected::Engine(e)) => ApiError::from(e).into_response(),
    }
}

fn rejected(e: WebhookError) -> ApiError {
    let code = match e {
        WebhookError::MissingSignature => ErrorCode::MissingSignature,
        WebhookError::BadSignature => ErrorCode::InvalidSignature,
        WebhookError::Stale => ErrorCode::StaleWebhook,
        WebhookError::Malformed(_) => ErrorCode::MalformedWebhook,
    };
    ApiError::new(code, e.to_string())
}
