//! The one list of types whose schemas the document carries although no route's `Doc`
//! names them (they are named by parameters, headers and error responses). Every type a
//! `Doc` names as a body or an answer joins by itself, with the types it is built from.

use std::collections::BTreeSet;

use boxoffice_domain::ticket::TicketId;
use boxoffice_domain::{BuyerId, EventId, GateId, HoldId, OrderId};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema as Json, Type};
use utoipa::{PartialSchema, ToSchema};

use super::{Schema, by_status};
use crate::code::ErrorCode;
use crate::error::ErrorBody;

/// Types named by parameters and by every error response.
pub(super) const LISTED: &[Schema] = &[
    Schema::of::<ErrorBody<'static>>(),
    Schema::of::<ErrorCode>(),
    Schema::of::<EventId>(),
    Schema::of::<HoldId>(),
    Schema::of::<OrderId>(),
    Schema::of::<BuyerId>(),
    Schema::of::<TicketId>(),
    Schema::of::<GateId>(),
];

/// Every code, and by status which ones a client may meet.
impl PartialSchema for ErrorCode {
    fn schema() -> RefOr<Json> {
        let all: BTreeSet<ErrorCode> = ErrorCode::ALL.iter().copied().collect();
        let groups: Vec<String> = by_status(&all)
            .into_iter()
            .map(|(status, codes)| {
                let list: Vec<&str> = codes.iter().map(|c| c.as_str()).collect();
                format!("{}: {}.", status.as_u16(), list.join(", "))
            })
            .collect();
        let about = format!(
            "Stable machine-readable code; branch on it, not on the message. By status: {} \
             503 and 429 come with Retry-After.",
            groups.join(" ")
        );
        (ObjectBuilder::new().schema_type(Type::String))
            .enum_values(Some(ErrorCode::ALL.iter().map(|c| c.as_str())))
            .description(Some(about))
            .into()
    }
}

impl ToSchema for ErrorCode {}
