//! The face-value exchange: a holder lists a ticket (at most its face value) or
//! withdraws it; anyone reads an event's open listings a page at a time; a buyer
//! admitted by the waiting room takes a listing, paying for it in the same request.
//! Writes are rate-limited per buyer before the replay store (as holds and transfers
//! are) and idempotent through `Replay`; a refusal is a coded 4xx that changes nothing.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use boxoffice_domain::ticket::TicketId;
use boxoffice_domain::{EventId, ListingId, Money};
use boxoffice_engine::Origin;
use boxoffice_engine::exchange::{ExchangeRefusal, ListingPage, ListingView, MAX_PAGE, SwapView};
use serde::Deserialize;

use super::route;
use crate::AppState;
use crate::client_addr::ClientAddr;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::{BearerToken, BuyerSessionHeader, Dpop, QueryParams, json};
use crate::idempotency::{Replay, Scope, reply};
use crate::openapi::{Doc, Schema};
use crate::path_id::Id;
use crate::routes::holder_write::{HolderWrite, SHARED};
use crate::routes::waiting::refused;
use crate::routes::{RouteClass, RouteDef};

pub(super) fn routes() -> Vec<RouteDef> {
    use RouteClass::Api;
    use axum::http::Method as M;
    vec![
        route(M::POST, "/v1/tickets/{id}/listings", Api, list, &LIST_DOC),
        route(M::DELETE, "/v1/listings/{id}", Api, withdraw, &WITHDRAW_DOC),
        route(M::GET, "/v1/events/{id}/listings", Api, page, &PAGE_DOC),
        route(M::POST, "/v1/listings/{id}/purchase", Api, buy, &BUY_DOC),
    ]
}

pub(crate) fn refusal_code(r: &ExchangeRefusal) -> ErrorCode {
    use ErrorCode as C;
    match r {
        ExchangeRefusal::NotAvailable => C::ExchangeNotAvailable,
        ExchangeRefusal::Closed => C::ExchangeClosed,
        ExchangeRefusal::AboveFaceValue(_) => C::ListingAboveFaceValue,
        ExchangeRefusal::NotListable(_) => C::TicketNotListable,
        ExchangeRefusal::AlreadyListed => C::TicketAlreadyListed,
        ExchangeRefusal::NotOpen(_) => C::ListingNotOpen,
        ExchangeRefusal::OwnListing => C::OwnListing,
    }
}

/// The asking price.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ListingRequest)]
struct ListBody {
    /// In the event's currency's minor units; at most what the seat cost.
    #[schema(minimum = 0)]
    price: Money,
}

pub(crate) const LIST_DOC: Doc = Doc {
    op: "listTicketOnExchange",
    body: Some(Schema::of::<ListBody>()),
    ok: &[(StatusCode::CREATED, Schema::of::<ListingView>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::TicketNotFound,
            C::EventNotFound,
            C::ExchangeNotAvailable,
            C::ExchangeClosed,
            C::ListingAboveFaceValue,
            C::TicketNotListable,
            C::TicketAlreadyListed,
            C::InvalidBody,
            C::MalformedJson,
            C::PayloadTooLarge,
        ]
    },
    shared: SHARED,
};

/// POST /v1/tickets/{id}/listings (buyer token, the ticket's holder).
pub async fn list(
    State(st): State<AppState>,
    write: HolderWrite,
    Id(ticket): Id<TicketId>,
    body: Bytes,
) -> Response {
    let input: ListBody = match json(&body) {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    if input.price.0 < 0 {
        let e = ApiError::new(ErrorCode::InvalidBody, "price must not be negative");
        return e.into_response();
    }
    let price = input.price;
    write
        .run(
            &st,
            &body,
            StatusCode::CREATED,
            move |engine, who| async move { engine.list_ticket(&who, ticket, price).await },
        )
        .await
}

pub(crate) const WITHDRAW_DOC: Doc = Doc {
    op: "withdrawListing",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<ListingView>())],
    refuses: &[ErrorCode::ListingNotFound, ErrorCode::ListingNotOpen],
    shared: SHARED,
};

/// DELETE /v1/listings/{id} (buyer token, the seller). No body.
pub async fn withdraw(
    State(st): State<AppState>,
    write: HolderWrite,
    Id(id): Id<ListingId>,
) -> Response {
    write
        .run(&st, b"", StatusCode::OK, move |engine, who| async move {
            engine.withdraw_listing(&who, id).await
        })
        .await
}

#[derive(Deserialize)]
pub struct PageQuery {
    after: Option<String>,
    limit: Option<u32>,
}

pub(crate) const PAGE_DOC: Doc = Doc {
    op: "listEventListings",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<ListingPage>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::EventNotFound,
            C::InvalidQuery,
            C::Internal,
            C::Unavailable,
        ]
    },
    shared: &[],
};

/// GET /v1/events/{id}/listings: public; open listings in id order, at most `MAX_PAGE`
/// (50 unless `limit` says), after the listing `after`.
pub async fn page(
    State(st): State<AppState>,
    Id(event): Id<EventId>,
    QueryParams(q): QueryParams<PageQuery>,
) -> Result<Json<ListingPage>, ApiError> {
    let limit = q.limit.unwrap_or(50);
    if !(1..=MAX_PAGE).contains(&limit) {
        let why = format!("limit must be 1-{MAX_PAGE}");
        return Err(ApiError::new(ErrorCode::InvalidQuery, why));
    }
    let after =
        match q.after.as_deref() {
            None | Some("") => None,
            Some(a) => Some(a.parse::<ListingId>().map_err(|_| {
                ApiError::new(ErrorCode::InvalidQuery, "after must be a listing id")
            })?),
        };
    Ok(Json(st.engine.listings(event, after, limit).await?))
}

/// How the buyer pays.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = PurchaseRequest)]
struct BuyBody {
    /// Payment-provider token for the buyer's card or wallet.
    #[schema(min_length = 1, max_length = 255)]
    payment_method: String,
}

pub(crate) const BUY_DOC: Doc = Doc {
    op: "buyListing",
    body: Some(Schema::of::<BuyBody>()),
    ok: &[
        (StatusCode::CREATED, Schema::of::<SwapView>()),
        (StatusCode::ACCEPTED, Schema::of::<SwapView>()),
    ],
    refuses: {
        use ErrorCode as C;
        &[
            C::ListingNotFound,
            C::EventNotFound,
            C::ExchangeNotAvailable,
            C::ExchangeClosed,
            C::ListingNotOpen,
            C::OwnListing,
            C::TicketNotListable,
            C::LimitExceeded,
            C::PaymentDeclined,
            C::PaymentVelocity,
            C::BuyerLocked,
            C::TooManyBuyers,
            C::InvalidBody,
            C::InvalidRequest,
            C::MalformedJson,
            C::PayloadTooLarge,
            C::InvalidToken,
            C::MissingToken,
            C::RateLimited,
            C::SessionMismatch,
            C::TokenExpired,
            C::TokenNotYetValid,
            C::TokenUnknownKey,
            C::TokenWrongAudience,
            C::TokenWrongEvent,
            C::TokenWrongIssuer,
            C::Unavailable,
            C::Internal,
        ]
    },
    shared: &[crate::idempotency::REFUSES, crate::extract::PROOF_REFUSES],
};

/// POST /v1/listings/{id}/purchase (the admission token of the listing's event, and
/// its proof of possession where the event binds admissions to a key, as for a hold). Answers the swap: `done` (the ticket is the caller's), or `reserved` /
/// `charged` / `moved` when the provider did not answer in time (the exchange worker
/// finishes it); 202 with `next_action` when the buyer must finish 3-D Secure at their
/// bank (the provider's webhook finishes the swap). The event's velocity limits apply
/// as at checkout: over one, a coded refusal before the provider hears of it.
pub async fn buy(
    State(st): State<AppState>,
    // The client, as the velocity limits and signals see it.
    ClientAddr(addr): ClientAddr,
    (token, session, dpop): (BearerToken, BuyerSessionHeader, Dpop),
    replay: Replay,
    Id(id): Id<ListingId>,
    body: Bytes,
) -> Response {
    let prepared = async {
        let input = json::<BuyBody>(&body)?;
        if input.payment_method.is_empty() || input.payment_method.len() > 255 {
            let why = "payment_method must be 1-255 characters";
            return Err(ApiError::new(ErrorCode::InvalidBody, why));
        }
        let event = st.engine.listing_event(id).await?;
        let admitted = (st.engine)
            .admitted_in_session(event, token.get()?, session.0.as_deref())
            .await?;
        Ok::<_, ApiError>((admitted, input))
    }
    .await;
    let (admitted, input) = match prepared {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    if let Err(r) = st.engine.limit_hold(&admitted) {
        return refused(r.into());
    }
    // Last of the checks, as for a hold: only a proof that passed everything else is
    // remembered. A token handed to a client without its key buys nothing here either.
    let proved = async {
        let entry = st.engine.event(admitted.event).await?;
        (st.engine)
            .prove_admission(&entry, &admitted, dpop.input())
            .await
    };
    if let Err(e) = proved.await {
        return ApiError::from(e).into_response();
    }
    // The device is the key the admission token is bound to, if any.
    let origin = Origin {
        ip: Some(addr),
        device: admitted.key.as_ref().map(|k| k.0.clone()),
    };
    let engine = st.engine.clone();
    replay
        .run(
            st.replays(),
            Scope::Buyer(admitted.who.buyer),
            &body,
            async move {
                let swap = engine
                    .buy_listing(&admitted, id, &input.payment_method, &origin)
                    .await?;
                let status = match swap.next_action {
                    Some(_) => StatusCode::ACCEPTED,
                    None => StatusCode::CREATED,
                };
                reply(status, &swap)
            },
        )
        .await
}
