//! Ticket transfers: the holder offers a ticket to another buyer (by buyer id), the
//! recipient accepts, the holder may withdraw the offer first; both list their offers.
//! Every write is a buyer's, rate-limited per buyer before the replay store (a refused
//! attempt is not kept as the key's answer) and idempotent through `Replay`; a refusal
//! is a coded 4xx that changes nothing.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use boxoffice_domain::ticket::TicketId;
use boxoffice_domain::{BuyerId, TransferId};
use boxoffice_engine::tickets::{AcceptedView, MyTransfers, TransferView};
use serde::Deserialize;

use super::route;
use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::{Buyer, json};
use crate::openapi::{Doc, Schema};
use crate::path_id::Id;
use crate::routes::holder_write::{HolderWrite, SHARED};
use crate::routes::{RouteClass, RouteDef};

pub(super) fn routes() -> Vec<RouteDef> {
    use RouteClass::Api;
    use axum::http::Method as M;
    vec![
        route(
            M::POST,
            "/v1/tickets/{id}/transfers",
            Api,
            offer,
            &OFFER_DOC,
        ),
        route(
            M::POST,
            "/v1/transfers/{id}/accept",
            Api,
            accept,
            &ACCEPT_DOC,
        ),
        route(M::DELETE, "/v1/transfers/{id}", Api, cancel, &CANCEL_DOC),
        route(M::GET, "/v1/me/transfers", Api, mine, &MINE_DOC),
    ]
}

/// Whom to offer the ticket to.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = TransferRequest)]
struct OfferBody {
    to_buyer_id: BuyerId,
}

pub(crate) const OFFER_DOC: Doc = Doc {
    op: "offerTicketTransfer",
    body: Some(Schema::of::<OfferBody>()),
    ok: &[(StatusCode::CREATED, Schema::of::<TransferView>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::TicketNotFound,
            C::EventNotFound,
            C::TransfersNotAllowed,
            C::TransferWindowClosed,
            C::TransfersExchangeOnly,
            C::TicketNotTransferable,
            C::TransferPending,
            C::TicketListed,
            C::TransferToSelf,
            C::InvalidBody,
            C::MalformedJson,
            C::PayloadTooLarge,
        ]
    },
    shared: SHARED,
};

/// POST /v1/tickets/{id}/transfers (buyer token, the ticket's holder).
pub async fn offer(
    State(st): State<AppState>,
    write: HolderWrite,
    Id(ticket): Id<TicketId>,
    body: Bytes,
) -> Response {
    let input: OfferBody = match json(&body) {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let to = input.to_buyer_id;
    write
        .run(
            &st,
            &body,
            StatusCode::CREATED,
            move |engine, who| async move { engine.offer_transfer(&who, ticket, to).await },
        )
        .await
}

pub(crate) const ACCEPT_DOC: Doc = Doc {
    op: "acceptTicketTransfer",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<AcceptedView>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::TransferNotFound,
            C::EventNotFound,
            C::TransfersNotAllowed,
            C::TransferWindowClosed,
            C::TransfersExchangeOnly,
            C::TicketNotTransferable,
            C::TransferNotOpen,
            C::LimitExceeded,
        ]
    },
    shared: SHARED,
};

/// POST /v1/transfers/{id}/accept (buyer token, the offer's recipient). No body.
pub async fn accept(
    State(st): State<AppState>,
    write: HolderWrite,
    Id(id): Id<TransferId>,
) -> Response {
    write
        .run(&st, b"", StatusCode::OK, move |engine, who| async move {
            engine.accept_transfer(&who, id).await
        })
        .await
}

pub(crate) const CANCEL_DOC: Doc = Doc {
    op: "cancelTicketTransfer",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<TransferView>())],
    refuses: &[ErrorCode::TransferNotFound, ErrorCode::TransferNotOpen],
    shared: SHARED,
};

/// DELETE /v1/transfers/{id} (buyer token, the offer's sender). No body.
pub async fn cancel(
    State(st): State<AppState>,
    write: HolderWrite,
    Id(id): Id<TransferId>,
) -> Response {
    write
        .run(&st, b"", StatusCode::OK, move |engine, who| async move {
            engine.cancel_transfer(&who, id).await
        })
        .await
}

pub(crate) const MINE_DOC: Doc = Doc {
    op: "listMyTransfers",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<MyTransfers>())],
    refuses: &[ErrorCode::Unavailable, ErrorCode::Internal],
    shared: &[crate::extract::BUYER_REFUSES],
};

/// GET /v1/me/transfers (buyer token): the newest offers made and received, at most
/// `MAX_LISTED` in all.
pub async fn mine(
    State(st): State<AppState>,
    Buyer(who): Buyer,
) -> Result<Json<MyTransfers>, ApiError> {
    Ok(Json(st.engine.my_transfers(&who).await?))
}
