//! Names on tickets: the holder puts the attendee's name on a ticket (events that take
//! names at checkout or before the doors). A buyer's write, rate-limited per buyer with
//! the transfer writes (a rename moves a ticket to a new version as a transfer does)
//! before the replay store, and idempotent through `Replay`; the same name again
//! changes nothing. A refusal is a coded 4xx that changes nothing.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use boxoffice_domain::ticket::{AttendeeName, TicketId};
use boxoffice_engine::tickets::TicketView;
use serde::Deserialize;

use super::route;
use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::json;
use crate::openapi::{Doc, Schema};
use crate::path_id::Id;
use crate::routes::holder_write::{HolderWrite, SHARED};
use crate::routes::{RouteClass, RouteDef};

pub(super) fn routes() -> Vec<RouteDef> {
    use axum::http::Method as M;
    vec![route(
        M::PUT,
        "/v1/tickets/{id}/attendee",
        RouteClass::Api,
        set,
        &SET_DOC,
    )]
}

/// The attendee's name as typed: trimmed and its inner white space made single spaces,
/// then 1-64 bytes of letters (any script), spaces and the marks ' - . ,
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AttendeeRequest)]
struct SetBody {
    #[schema(min_length = 1, max_length = 200)]
    name: String,
}

/// Longest name accepted as typed, before trimming: longer is no name.
const MAX_TYPED: usize = 200;

pub(crate) const SET_DOC: Doc = Doc {
    op: "setTicketAttendee",
    body: Some(Schema::of::<SetBody>()),
    ok: &[(StatusCode::OK, Schema::of::<TicketView>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::TicketNotFound,
            C::EventNotFound,
            C::AttendeeNamesInvalid,
            C::AttendeeNamesNotTaken,
            C::NameChangesNotAllowed,
            C::NameChangesClosed,
            C::NameChangeLimitReached,
            C::TicketNotRenamable,
            C::TicketChanged,
            C::TicketListed,
            C::InvalidBody,
            C::MalformedJson,
            C::PayloadTooLarge,
        ]
    },
    shared: SHARED,
};

fn name_of(body: &Bytes) -> Result<AttendeeName, ApiError> {
    let input: SetBody = json(body)?;
    if input.name.len() > MAX_TYPED {
        return Err(ApiError::new(
            ErrorCode::AttendeeNamesInvalid,
            "an attendee name is at most 64 bytes",
        ));
    }
    AttendeeName::parse(&input.name)
        .map_err(|e| ApiError::new(ErrorCode::AttendeeNamesInvalid, e.to_string()))
}

/// PUT /v1/tickets/{id}/attendee (buyer token, the ticket's holder).
pub async fn set(
    State(st): State<AppState>,
    write: HolderWrite,
    Id(ticket): Id<TicketId>,
    body: Bytes,
) -> Response {
    let name = match name_of(&body) {
        Ok(n) => n,
        Err(e) => return e.into_response(),
    };
    write
        .run(&st, &body, StatusCode::OK, move |engine, who| async move {
            engine.set_attendee(&who, ticket, name).await
        })
        .await
}
