//! Undoing sales: the operator cancels an order, one ticket of an order, or a whole
//! event, a buyer returns their own order while the event allows it. Each write is idempotent through `Replay`;
//! a refusal (an order that is no sale any more, a closed refund window) is a coded
//! 4xx that changes nothing. None takes a body.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use boxoffice_domain::ticket::TicketId;
use boxoffice_domain::{EventId, OrderId};
use boxoffice_engine::ports::EventCancellation;
use boxoffice_engine::tickets::TicketCancellation;
use boxoffice_engine::{Canceller, OrderView};

use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::{Buyer, Operator};
use crate::idempotency::{Replay, Scope, reply};
use crate::openapi::{Doc, Schema};
use crate::path_id::Id;

/// How the API document describes `cancel_order`, and what it refuses with.
pub(crate) const CANCEL_ORDER_DOC: Doc = Doc {
    op: "cancelOrder",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<OrderView>())],
    refuses: {
        use ErrorCode as C;
        &[C::OrderNotCancellable, C::OrderNotFound]
    },
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::OPERATOR_REFUSES,
    ],
};

/// POST /v1/orders/{id}/cancel (operator key): the sale undone, the money returned.
pub async fn cancel_order(
    State(st): State<AppState>,
    _: Operator,
    replay: Replay,
    Id(id): Id<OrderId>,
) -> Response {
    let engine = st.engine.clone();
    replay
        .run(st.replays(), Scope::Operator, b"", async move {
            let order = engine.cancel_order(id, Canceller::Operator).await?;
            reply(StatusCode::OK, &order)
        })
        .await
}

/// How the API document describes `cancel_ticket`, and what it refuses with.
pub(crate) const CANCEL_TICKET_DOC: Doc = Doc {
    op: "cancelTicket",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<TicketCancellation>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::TicketNotFound,
            C::TicketAlreadyCancelled,
            C::TicketNotCancellable,
            C::LastTicketOfOrder,
        ]
    },
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::OPERATOR_REFUSES,
    ],
};

/// POST /v1/tickets/{id}/cancel (operator key): one ticket of an order cancelled, its
/// seat back on sale, its part of the money returned.
pub async fn cancel_ticket(
    State(st): State<AppState>,
    _: Operator,
    replay: Replay,
    Id(id): Id<TicketId>,
) -> Response {
    let engine = st.engine.clone();
    replay
        .run(st.replays(), Scope::Operator, b"", async move {
            let cancelled = engine.cancel_ticket(id).await?;
            reply(StatusCode::OK, &cancelled)
        })
        .await
}

/// How the API document describes `refund_order`, and what it refuses with.
pub(crate) const REFUND_ORDER_DOC: Doc = Doc {
    op: "refundMyOrder",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<OrderView>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::OrderNotCancellable,
            C::OrderNotFound,
            C::OrderUsed,
            C::OrderGivenAway,
            C::RefundWindowClosed,
        ]
    },
    shared: &[crate::idempotency::REFUSES, crate::extract::BUYER_REFUSES],
};

/// POST /v1/orders/{id}/refund (buyer token, own orders): as `cancel_order`, within
/// the event's refund window.
pub async fn refund_order(
    State(st): State<AppState>,
    Buyer(who): Buyer,
    replay: Replay,
    Id(id): Id<OrderId>,
) -> Response {
    let engine = st.engine.clone();
    let scope = Scope::Buyer(who.buyer);
    replay
        .run(st.replays(), scope, b"", async move {
            let order = engine.cancel_order(id, Canceller::Buyer(&who)).await?;
            reply(StatusCode::OK, &order)
        })
        .await
}

/// How the API document describes `cancel_event`, and what it refuses with.
pub(crate) const CANCEL_EVENT_DOC: Doc = Doc {
    op: "cancelEvent",
    body: None,
    ok: &[(StatusCode::ACCEPTED, Schema::of::<EventCancellation>())],
    refuses: {
        use ErrorCode as C;
        &[C::EventNotFound]
    },
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::OPERATOR_REFUSES,
    ],
};

/// POST /v1/events/{id}/cancel (operator key): the sale closes for good and every
/// order is refunded by a job that survives restarts. 202: the job runs on.
pub async fn cancel_event(
    State(st): State<AppState>,
    _: Operator,
    replay: Replay,
    Id(id): Id<EventId>,
) -> Response {
    let engine = st.engine.clone();
    replay
        .run(st.replays(), Scope::Operator, b"", async move {
            let job = engine.cancel_event(id).await?;
            reply(StatusCode::ACCEPTED, &job)
        })
        .await
}

/// How the API document describes `cancellation`, and what it refuses with.
pub(crate) const CANCELLATION_DOC: Doc = Doc {
    op: "getEventCancellation",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<EventCancellation>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::EventNotCancelled,
            C::EventNotFound,
            C::Internal,
            C::Unavailable,
        ]
    },
    shared: &[crate::extract::OPERATOR_REFUSES],
};

/// GET /v1/events/{id}/cancellation (operator key): the job's progress.
pub async fn cancellation(
    State(st): State<AppState>,
    _: Operator,
    Id(id): Id<EventId>,
) -> Result<Json<EventCancellation>, ApiError> {
    Ok(Json(st.engine.event_cancellation(id).await?))
}
