//! Checkout and orders.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use boxoffice_domain::{HoldId, OrderId};
use boxoffice_engine::ports::NextAction;
use boxoffice_engine::{CheckoutOutcome, OrderView};
use serde::{Deserialize, Serialize};

use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::{Buyer, json};
use crate::idempotency::{Replay, Scope, reply};
use crate::observe::Feeds;
use crate::openapi::Doc;
use crate::path_id::Id;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckoutBody {
    payment_method: String,
}

/// A checkout the provider has not settled yet, and what the buyer does next.
#[derive(Serialize)]
pub struct PaymentPending {
    status: &'static str,
    order: OrderView,
    next_action: NextAction,
}

impl PaymentPending {
    fn new(order: OrderView, next_action: NextAction) -> PaymentPending {
        PaymentPending {
            status: "payment_pending",
            order,
            next_action,
        }
    }
}

/// The buyer's orders.
#[derive(Serialize)]
pub struct OrderList {
    orders: Vec<OrderView>,
}

/// How the API document describes `checkout`, and what it refuses with.
pub(crate) const CHECKOUT_DOC: Doc = Doc {
    op: "checkout",
    refuses: {
        use ErrorCode as C;
        &[
            C::CheckoutInProgress,
            C::EventCancelled,
            C::HoldExpired,
            C::HoldNotActive,
            C::HoldNotFound,
            C::InvalidBody,
            C::LimitExceeded,
            C::MalformedJson,
            C::OrderNotFound,
            C::PaymentDeclined,
            C::SeatSold,
        ]
    },
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::BUYER_REFUSES,
        crate::extract::BODY_REFUSES,
    ],
};

pub async fn checkout(
    State(st): State<AppState>,
    Buyer(who): Buyer,
    replay: Replay,
    Id(hold): Id<HoldId>,
    feeds: Feeds,
    body: Bytes,
) -> Response {
    let prepared = (|| {
        let body: CheckoutBody = json(&body)?;
        if body.payment_method.is_empty() || body.payment_method.len() > 255 {
            return Err(ApiError::new(
                ErrorCode::InvalidBody,
                "payment_method must be 1-255 characters",
            ));
        }
        Ok(body)
    })();
    let input = match prepared {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let scope = Scope::Buyer(who.buyer);
    let state = st.clone();
    replay
        .run(st.replays(), scope, &body, async move {
            let sample = feeds.start();
            let outcome = (state.engine)
                .checkout(&who, hold, &input.payment_method)
                .await;
            sample.checkout(&state, &outcome);
            match outcome? {
                CheckoutOutcome::Confirmed(order) => reply(StatusCode::CREATED, &order),
                CheckoutOutcome::Pending(order) => {
                    let poll = NextAction {
                        kind: "poll".into(),
                        url: Some(format!("/v1/orders/{}", order.order_id)),
                    };
                    reply(StatusCode::ACCEPTED, &PaymentPending::new(order, poll))
                }
                // The buyer must finish at their bank; the provider's webhook completes it.
                CheckoutOutcome::ActionRequired(order, next) => {
                    reply(StatusCode::ACCEPTED, &PaymentPending::new(order, next))
                }
            }
        })
        .await
}

/// How the API document describes `get`, and what it refuses with.
pub(crate) const GET_DOC: Doc = Doc {
    op: "getOrder",
    refuses: {
        use ErrorCode as C;
        &[C::Internal, C::OrderNotFound, C::Unavailable]
    },
    shared: &[crate::extract::BUYER_REFUSES],
};

pub async fn get(
    State(st): State<AppState>,
    Buyer(who): Buyer,
    Id(id): Id<OrderId>,
) -> Result<Json<OrderView>, ApiError> {
    Ok(Json(st.engine.order_for(&who, id).await?))
}

/// How the API document describes `mine`, and what it refuses with.
pub(crate) const MINE_DOC: Doc = Doc {
    op: "listMyOrders",
    refuses: {
        use ErrorCode as C;
        &[C::Internal, C::Unavailable]
    },
    shared: &[crate::extract::BUYER_REFUSES],
};

pub async fn mine(
    State(st): State<AppState>,
    Buyer(who): Buyer,
) -> Result<Json<OrderList>, ApiError> {
    let orders = st.engine.orders_of(&who).await?;
    Ok(Json(OrderList { orders }))
}
