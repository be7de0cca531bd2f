//! Checkout and orders.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use boxoffice_domain::catalog::MAX_TICKETS_PER_BUYER;
use boxoffice_domain::ticket::AttendeeName;
use boxoffice_domain::{HoldId, OrderId};
use boxoffice_engine::ports::{NextAction, RenderKept, StoredResponse};
use boxoffice_engine::{CheckoutOutcome, EngineError, KeepConfirmed, OrderView, Origin};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa::openapi::schema::{ObjectBuilder, Type};

use crate::AppState;
use crate::client_addr::ClientAddr;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::{Buyer, Dpop, json};
use crate::idempotency::{Replay, Reply, Scope, reply};
use crate::observe::Feeds;
use crate::openapi::{Doc, Schema};
use crate::path_id::Id;

/// How the buyer pays.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CheckoutRequest)]
struct CheckoutBody {
    /// Payment-provider token for the buyer's card or wallet.
    #[schema(min_length = 1, max_length = 255)]
    payment_method: String,
    /// The attendee's name for each seat, in the hold's seat order, for events whose
    /// tickets carry names (`sale.attendee_names`). Each is trimmed, its inner white
    /// space made single spaces, and must then be 1-64 bytes of letters (any script),
    /// spaces and the marks ' - . ,
    #[serde(default)]
    #[schema(max_items = 50)]
    attendees: Vec<String>,
}

/// The attendee names of a checkout, parsed; more names than any hold has seats, or a
/// name that is not one, is refused before anything is looked up.
fn attendee_names(raw: &[String]) -> Result<Vec<AttendeeName>, ApiError> {
    if raw.len() > MAX_TICKETS_PER_BUYER as usize {
        return Err(ApiError::new(
            ErrorCode::AttendeeNamesInvalid,
            "at most one attendee name per seat",
        ));
    }
    raw.iter()
        .map(|n| AttendeeName::parse(n))
        .collect::<Result<_, _>>()
        .map_err(|e| ApiError::new(ErrorCode::AttendeeNamesInvalid, e.to_string()))
}

/// Nothing is decided yet. Either the provider has not answered (next_action `poll`:
/// the seats stay pinned while recovery asks the provider), or the buyer must act at
/// their bank (next_action `redirect_to_url`, 3-D Secure: the provider's webhook
/// completes the order). Either way, poll the order.
#[derive(Serialize, ToSchema)]
pub struct PaymentPending {
    #[schema(schema_with = pending)]
    status: &'static str,
    order: OrderView,
    next_action: NextAction,
}

/// `PaymentPending::status`: always `payment_pending`.
fn pending() -> ObjectBuilder {
    (ObjectBuilder::new().schema_type(Type::String)).enum_values(Some(["payment_pending"]))
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
#[derive(Serialize, ToSchema)]
pub struct OrderList {
    orders: Vec<OrderView>,
}

/// How the API document describes `checkout`, and what it refuses with.
pub(crate) const CHECKOUT_DOC: Doc = Doc {
    op: "checkout",
    body: Some(Schema::of::<CheckoutBody>()),
    ok: &[
        (StatusCode::CREATED, Schema::of::<OrderView>()),
        (StatusCode::ACCEPTED, Schema::of::<PaymentPending>()),
    ],
    refuses: {
        use ErrorCode as C;
        &[
            C::BuyerLocked,
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
            C::PaymentVelocity,
            C::SeatSold,
            C::AttendeeNamesRequired,
            C::AttendeeNamesInvalid,
            C::AttendeeNamesNotTaken,
            C::TooManyBuyers,
        ]
    },
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::BUYER_REFUSES,
        crate::extract::BODY_REFUSES,
        crate::extract::PROOF_REFUSES,
    ],
};

pub async fn checkout(
    State(st): State<AppState>,
    Buyer(who): Buyer,
    // The client, as the velocity limits and signals see it: its address and its proof.
    (ClientAddr(addr), dpop): (ClientAddr, Dpop),
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
        let names = attendee_names(&body.attendees)?;
        Ok((body, names))
    })();
    let (input, names) = match prepared {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    // Last of the checks: only a proof that passes is remembered.
    let device = match st.engine.prove_for_hold(hold, dpop.input()).await {
        Ok(key) => key,
        Err(e) => return ApiError::from(e).into_response(),
    };
    let scope = Scope::Buyer(who.buyer);
    let state = st.clone();
    // The device is the key the request proved, when the event binds admissions to one.
    let origin = Origin {
        ip: Some(addr),
        device: device.map(|k| k.0),
    };
    let render: Arc<RenderKept> = Arc::new(kept_confirmed);
    replay
        .run_self_keeping(
            st.replays(),
            scope,
            &body,
            |replays, key, lease| async move {
                let sample = feeds.start();
                // A confirmed order's answer is kept in the write that records its capture,
                // where the replay store keeps answers in the ledger's database.
                let keep = KeepConfirmed::new(replays, key, lease, render);
                let outcome = (state.engine)
                    .checkout_keeping(
                        &who,
                        hold,
                        &input.payment_method,
                        names,
                        &origin,
                        Some(&keep),
                    )
                    .await;
                sample.checkout(&state, &outcome);
                // What was kept is what a retry is replayed: send that.
                if let Some(kept) = keep.into_kept() {
                    let status = StatusCode::from_u16(kept.status).unwrap_or(StatusCode::CREATED);
                    return (Ok((status, kept.body)), true);
                }
                (checkout_reply(outcome), false)
            },
        )
        .await
}

/// A checkout's answer: 201 and the order once confirmed, 202 while the payment is
/// pending.
fn checkout_reply(outcome: Result<CheckoutOutcome, EngineError>) -> Reply {
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
}

/// A confirmed order's answer as `checkout_reply` renders it, for the store that keeps
/// it in the capture's own write.
fn kept_confirmed(order: &OrderView) -> Option<StoredResponse> {
    let (status, body) = reply(StatusCode::CREATED, order).ok()?;
    Some(StoredResponse {
        status: status.as_u16(),
        body,
    })
}

/// How the API document describes `get`, and what it refuses with.
pub(crate) const GET_DOC: Doc = Doc {
    op: "getOrder",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<OrderView>())],
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
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<OrderList>())],
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
