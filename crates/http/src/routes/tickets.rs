//! Tickets: the holder's tickets and their QR codes, an event's public barcode keys,
//! and the operator's key rotation, retirement and rotating-barcode switch.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use boxoffice_domain::EventId;
use boxoffice_domain::ticket::{KeyId, TicketId};
use boxoffice_engine::tickets::{KeySetView, TicketView};
use serde::{Deserialize, Serialize};

use super::route;
use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::{Buyer, Operator, json};
use crate::idempotency::{Replay, Scope, reply};
use crate::openapi::{Doc, Schema};
use crate::path_id::Id;
use crate::qr;
use crate::routes::{RouteClass, RouteDef};

/// How long caches may keep an event's public keys: a retired key stops verifying at
/// gates that read them within this long.
const KEYS_MAX_AGE: &str = "public, max-age=300";

pub(super) fn routes() -> Vec<RouteDef> {
    use RouteClass::Api;
    use axum::http::Method as M;
    vec![
        route(M::GET, "/v1/me/tickets", Api, mine, &MINE_DOC),
        route(M::GET, "/v1/tickets/{id}", Api, get, &GET_DOC),
        route(M::GET, "/v1/tickets/{id}/qr.svg", Api, qr_svg, &QR_SVG_DOC),
        route(M::GET, "/v1/tickets/{id}/qr.png", Api, qr_png, &QR_PNG_DOC),
        route(M::GET, "/v1/events/{id}/keys", Api, keys, &KEYS_DOC),
        route(
            M::POST,
            "/v1/events/{id}/keys/rotate",
            Api,
            rotate,
            &ROTATE_DOC,
        ),
        route(
            M::POST,
            "/v1/events/{id}/keys/retire",
            Api,
            retire,
            &RETIRE_DOC,
        ),
        route(
            M::PUT,
            "/v1/events/{id}/barcodes",
            Api,
            set_barcodes,
            &SET_BARCODES_DOC,
        ),
    ]
}

/// What a buyer's ticket read may answer besides the buyer check.
const TICKET_REFUSES: &[ErrorCode] = &[
    ErrorCode::TicketNotFound,
    ErrorCode::EventNotFound,
    ErrorCode::Unavailable,
    ErrorCode::Internal,
];

/// The buyer's tickets.
#[derive(Serialize, utoipa::ToSchema)]
pub struct TicketList {
    tickets: Vec<TicketView>,
}

pub(crate) const MINE_DOC: Doc = Doc {
    op: "listMyTickets",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<TicketList>())],
    refuses: TICKET_REFUSES,
    shared: &[crate::extract::BUYER_REFUSES],
};

pub async fn mine(
    State(st): State<AppState>,
    Buyer(who): Buyer,
) -> Result<Json<TicketList>, ApiError> {
    let tickets = st.engine.my_tickets(&who).await?;
    Ok(Json(TicketList { tickets }))
}

pub(crate) const GET_DOC: Doc = Doc {
    op: "getTicket",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<TicketView>())],
    refuses: TICKET_REFUSES,
    shared: &[crate::extract::BUYER_REFUSES],
};

pub async fn get(
    State(st): State<AppState>,
    Buyer(who): Buyer,
    Id(id): Id<TicketId>,
) -> Result<Response, ApiError> {
    let view = st.engine.ticket_for(&who, id).await?;
    Ok(private(Json(view).into_response()))
}

pub(crate) const QR_SVG_DOC: Doc = Doc {
    op: "getTicketQrSvg",
    body: None,
    ok: &[],
    refuses: &[
        ErrorCode::TicketNotFound,
        ErrorCode::TicketRevoked,
        ErrorCode::EventNotFound,
        ErrorCode::Unavailable,
        ErrorCode::Internal,
    ],
    shared: &[crate::extract::BUYER_REFUSES],
};

pub async fn qr_svg(
    State(st): State<AppState>,
    Buyer(who): Buyer,
    Id(id): Id<TicketId>,
) -> Result<Response, ApiError> {
    let text = barcode_now(&st, &who, id).await?;
    let svg = qr::svg(&text)?;
    Ok(image(svg.into_bytes(), "image/svg+xml"))
}

pub(crate) const QR_PNG_DOC: Doc = Doc {
    op: "getTicketQrPng",
    body: None,
    ok: &[],
    refuses: QR_SVG_DOC.refuses,
    shared: &[crate::extract::BUYER_REFUSES],
};

pub async fn qr_png(
    State(st): State<AppState>,
    Buyer(who): Buyer,
    Id(id): Id<TicketId>,
) -> Result<Response, ApiError> {
    let text = barcode_now(&st, &who, id).await?;
    Ok(image(qr::png(&text)?, "image/png"))
}

async fn barcode_now(
    st: &AppState,
    who: &boxoffice_engine::BuyerSession,
    id: TicketId,
) -> Result<String, ApiError> {
    st.engine.barcode_now(who, id).await?.ok_or_else(|| {
        ApiError::new(
            ErrorCode::TicketRevoked,
            "this ticket was cancelled: its order was refunded or cancelled",
        )
    })
}

/// A QR code is a credential of its holder, and a rotating one changes every 15 s.
fn image(bytes: Vec<u8>, content_type: &'static str) -> Response {
    let mut res = bytes.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    private(res)
}

fn private(mut res: Response) -> Response {
    (res.headers_mut()).insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    res
}

pub(crate) const KEYS_DOC: Doc = Doc {
    op: "getEventKeys",
    body: None,
    ok: &[],
    refuses: &[
        ErrorCode::EventNotFound,
        ErrorCode::Unavailable,
        ErrorCode::Internal,
    ],
    shared: &[],
};

/// Public: anyone may check a barcode's signature. Cached by clients and CDNs.
pub async fn keys(
    State(st): State<AppState>,
    Id(event): Id<EventId>,
) -> Result<Response, ApiError> {
    let keys = st.engine.barcode_keys(event).await?;
    let mut res = Json(keys).into_response();
    (res.headers_mut()).insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(KEYS_MAX_AGE),
    );
    Ok(res)
}

/// What an operator's key change may answer besides the replay store and the key check.
const KEY_CHANGE_REFUSES: &[ErrorCode] = &[ErrorCode::EventNotFound];

pub(crate) const ROTATE_DOC: Doc = Doc {
    op: "rotateEventKey",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<KeySetView>())],
    refuses: &[ErrorCode::EventNotFound, ErrorCode::TooManyKeys],
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::OPERATOR_REFUSES,
    ],
};

pub async fn rotate(
    State(st): State<AppState>,
    _: Operator,
    replay: Replay,
    Id(event): Id<EventId>,
) -> Response {
    let engine = st.engine.clone();
    replay
        .run(st.replays(), Scope::Operator, b"", async move {
            let set: KeySetView = engine.rotate_barcode_key(event).await?;
            reply(StatusCode::OK, &set)
        })
        .await
}

/// The key to retire.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RetireKeyRequest)]
struct RetireBody {
    kid: KeyId,
}

pub(crate) const RETIRE_DOC: Doc = Doc {
    op: "retireEventKey",
    body: Some(Schema::of::<RetireBody>()),
    ok: &[(StatusCode::OK, Schema::of::<KeySetView>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::EventNotFound,
            C::InvalidBody,
            C::KeyCurrent,
            C::KeyNotFound,
            C::MalformedJson,
        ]
    },
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::OPERATOR_REFUSES,
        crate::extract::BODY_REFUSES,
    ],
};

pub async fn retire(
    State(st): State<AppState>,
    _: Operator,
    replay: Replay,
    Id(event): Id<EventId>,
    body: Bytes,
) -> Response {
    let input: RetireBody = match json(&body) {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let engine = st.engine.clone();
    replay
        .run(st.replays(), Scope::Operator, &body, async move {
            let set = engine.retire_barcode_key(event, input.kid).await?;
            reply(StatusCode::OK, &set)
        })
        .await
}

/// Whether the event's barcodes rotate.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = BarcodesRequest)]
struct BarcodesBody {
    rotating: bool,
}

pub(crate) const SET_BARCODES_DOC: Doc = Doc {
    op: "setEventBarcodes",
    body: Some(Schema::of::<BarcodesBody>()),
    ok: &[(StatusCode::OK, Schema::of::<KeySetView>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::InvalidBody,
            C::MalformedJson,
            C::Unavailable,
            C::Internal,
        ]
    },
    shared: &[
        KEY_CHANGE_REFUSES,
        crate::extract::OPERATOR_REFUSES,
        crate::extract::BODY_REFUSES,
    ],
};

/// Setting the same value again changes nothing: a PUT needs no Idempotency-Key.
pub async fn set_barcodes(
    State(st): State<AppState>,
    _: Operator,
    Id(event): Id<EventId>,
    body: Bytes,
) -> Result<Json<KeySetView>, ApiError> {
    let input: BarcodesBody = json(&body)?;
    let set = st
        .engine
        .set_rotating_barcodes(event, input.rotating)
        .await?;
    Ok(Json(set))
}
