//! Order events out: an order's history (its buyer or the operator), and the operator's
//! webhook endpoints with their dead letters. The relay that delivers the events runs
//! beside the API (`boxoffice_engine::relay`).

use std::str::FromStr;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequestParts, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use boxoffice_domain::OrderId;
use boxoffice_engine::Resource;
use boxoffice_engine::events_out::{DeadLetterView, HistoryReader, WebhookEndpoint};
use boxoffice_engine::ports::HistoryLine;
use serde::{Deserialize, Serialize};

use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::{Operator, bearer, json};
use crate::idempotency::{Replay, Scope, reply};
use crate::openapi::{Doc, Schema};
use crate::path_id::{Id, PathId};

/// Longest endpoint URL accepted.
const MAX_URL: usize = 2_048;

/// A webhook endpoint's id in a path: `we_` and 32 hex digits.
pub struct EndpointId(String);

impl FromStr for EndpointId {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        let hex = s.strip_prefix("we_").ok_or(())?;
        if hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(EndpointId(s.to_owned()))
        } else {
            Err(())
        }
    }
}

impl PathId for EndpointId {
    const RESOURCE: Resource = Resource::WebhookEndpoint;
}

/// A sink with dead letters in a path: a webhook endpoint's id, or `nats`.
pub struct SinkId(String);

impl FromStr for SinkId {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            boxoffice_engine::ports::NATS_SINK => Ok(SinkId(s.to_owned())),
            _ => EndpointId::from_str(s).map(|EndpointId(id)| SinkId(id)),
        }
    }
}

impl PathId for SinkId {
    const RESOURCE: Resource = Resource::WebhookEndpoint;
}

/// Whoever may read an order's history: the operator by its key, or a buyer.
pub struct Reader(Option<boxoffice_engine::BuyerSession>);

impl FromRequestParts<AppState> for Reader {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = bearer(&parts.headers)?;
        if state.operator_key.matches(token) {
            return Ok(Reader(None));
        }
        Ok(Reader(Some(state.engine.authenticate(token).await?)))
    }
}

/// An order's history, oldest first.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = OrderHistory)]
pub struct History {
    order_id: OrderId,
    lines: Vec<HistoryLine>,
}

/// How the API document describes `history`, and what it refuses with.
pub(crate) const HISTORY_DOC: Doc = Doc {
    op: "getOrderHistory",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<History>())],
    refuses: {
        use ErrorCode as C;
        &[C::Internal, C::OrderNotFound, C::Unavailable]
    },
    shared: &[crate::extract::BUYER_REFUSES],
};

pub async fn history(
    State(st): State<AppState>,
    Reader(who): Reader,
    Id(id): Id<OrderId>,
) -> Result<Json<History>, ApiError> {
    let reader = match &who {
        Some(buyer) => HistoryReader::Buyer(buyer),
        None => HistoryReader::Operator,
    };
    let lines = st.engine.order_history(reader, id).await?;
    Ok(Json(History {
        order_id: id,
        lines,
    }))
}

/// Where order events are delivered.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = WebhookEndpointRequest)]
struct EndpointBody {
    /// http:// or https:// URL with a host.
    #[schema(max_length = 2048)]
    url: String,
}

/// A new endpoint, with the secret its deliveries are signed with: shown this once.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = NewWebhookEndpoint)]
pub struct NewEndpoint {
    #[serde(flatten)]
    endpoint: WebhookEndpoint,
    /// The signing secret (`whsec_…`); shown only in this answer.
    secret: String,
}

/// The operator's endpoints, secrets left out.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = WebhookEndpointList)]
pub struct EndpointList {
    endpoints: Vec<WebhookEndpoint>,
}

/// An endpoint's dead letters, oldest first.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = DeadLetterList)]
pub struct DeadLetters {
    dead_letters: Vec<DeadLetterView>,
}

/// How many dead letters were made due again.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ReplayedDeadLetters)]
pub struct Replayed {
    replayed: u64,
}

/// `http://` or `https://`, a host, no spaces or control characters, at most `MAX_URL`.
fn endpoint_url(body: &[u8]) -> Result<String, ApiError> {
    let EndpointBody { url } = json(body)?;
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    let host_ok = rest.is_some_and(|r| !r.is_empty() && !r.starts_with(['/', '?', '#']));
    if !host_ok || url.len() > MAX_URL || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ApiError::new(
            ErrorCode::InvalidBody,
            "url must be an http:// or https:// URL with a host, at most 2048 characters",
        ));
    }
    Ok(url)
}

/// How the API document describes `create_endpoint`, and what it refuses with.
pub(crate) const CREATE_ENDPOINT_DOC: Doc = Doc {
    op: "createWebhookEndpoint",
    body: Some(Schema::of::<EndpointBody>()),
    ok: &[(StatusCode::CREATED, Schema::of::<NewEndpoint>())],
    refuses: {
        use ErrorCode as C;
        &[C::InvalidBody, C::InvalidRequest, C::MalformedJson]
    },
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::OPERATOR_REFUSES,
        crate::extract::BODY_REFUSES,
    ],
};

pub async fn create_endpoint(
    State(st): State<AppState>,
    _: Operator,
    replay: Replay,
    body: Bytes,
) -> Response {
    let url = match endpoint_url(&body) {
        Ok(url) => url,
        Err(e) => return e.into_response(),
    };
    let engine = st.engine.clone();
    replay
        .run(st.replays(), Scope::Operator, &body, async move {
            let (endpoint, secret) = engine.add_webhook_endpoint(&url).await?;
            reply(StatusCode::CREATED, &NewEndpoint { endpoint, secret })
        })
        .await
}

/// How the API document describes `list_endpoints`, and what it refuses with.
pub(crate) const LIST_ENDPOINTS_DOC: Doc = Doc {
    op: "listWebhookEndpoints",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<EndpointList>())],
    refuses: {
        use ErrorCode as C;
        &[C::Internal, C::Unavailable]
    },
    shared: &[crate::extract::OPERATOR_REFUSES],
};

pub async fn list_endpoints(
    State(st): State<AppState>,
    _: Operator,
) -> Result<Json<EndpointList>, ApiError> {
    let endpoints = st.engine.webhook_endpoints().await?;
    Ok(Json(EndpointList { endpoints }))
}

/// How the API document describes `delete_endpoint`, and what it refuses with.
pub(crate) const DELETE_ENDPOINT_DOC: Doc = Doc {
    op: "deleteWebhookEndpoint",
    body: None,
    ok: &[],
    refuses: {
        use ErrorCode as C;
        &[C::SinkInUse, C::WebhookEndpointNotFound]
    },
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::OPERATOR_REFUSES,
    ],
};

/// Removes a webhook endpoint, or retires the NATS sink (`nats`) once no node has
/// `[nats]` (`Engine::remove_sink`).
pub async fn delete_endpoint(
    State(st): State<AppState>,
    _: Operator,
    replay: Replay,
    Id(SinkId(id)): Id<SinkId>,
) -> Response {
    let engine = st.engine.clone();
    replay
        .run(st.replays(), Scope::Operator, b"", async move {
            engine.remove_sink(&id).await?;
            Ok((StatusCode::NO_CONTENT, Vec::new()))
        })
        .await
}

/// How the API document describes `dead_letters`, and what it refuses with.
pub(crate) const DEAD_LETTERS_DOC: Doc = Doc {
    op: "listDeadLetters",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<DeadLetters>())],
    refuses: {
        use ErrorCode as C;
        &[C::Internal, C::Unavailable, C::WebhookEndpointNotFound]
    },
    shared: &[crate::extract::OPERATOR_REFUSES],
};

pub async fn dead_letters(
    State(st): State<AppState>,
    _: Operator,
    Id(SinkId(id)): Id<SinkId>,
) -> Result<Json<DeadLetters>, ApiError> {
    let dead_letters = st.engine.dead_letters(&id).await?;
    Ok(Json(DeadLetters { dead_letters }))
}

/// How the API document describes `replay_dead_letters`, and what it refuses with.
pub(crate) const REPLAY_DOC: Doc = Doc {
    op: "replayDeadLetters",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<Replayed>())],
    refuses: {
        use ErrorCode as C;
        &[C::WebhookEndpointNotFound]
    },
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::OPERATOR_REFUSES,
    ],
};

pub async fn replay_dead_letters(
    State(st): State<AppState>,
    _: Operator,
    replay: Replay,
    Id(SinkId(id)): Id<SinkId>,
) -> Response {
    let engine = st.engine.clone();
    replay
        .run(st.replays(), Scope::Operator, b"", async move {
            let replayed = engine.replay_dead_letters(&id).await?;
            reply(StatusCode::OK, &Replayed { replayed })
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_urls_need_a_scheme_and_a_host() {
        let ok = |u: &str| endpoint_url(format!("{{\"url\":{u:?}}}").as_bytes()).is_ok();
        assert!(ok("https://hooks.example.com/boxoffice"));
        assert!(ok("http://127.0.0.1:9000/in"));
        assert!(!ok("ftp://example.com"));
        assert!(!ok("https://"));
        assert!(!ok("https:///path"));
        assert!(!ok("https://a b"));
        assert!(!ok(&format!("https://{}", "a".repeat(MAX_URL))));
    }

    #[test]
    fn endpoint_ids_are_we_and_32_hex_digits() {
        assert!(EndpointId::from_str(&format!("we_{}", "a".repeat(32))).is_ok());
        assert!(EndpointId::from_str("we_123").is_err());
        assert!(EndpointId::from_str(&"a".repeat(35)).is_err());
        assert!(EndpointId::from_str("nats").is_err());
        assert!(SinkId::from_str("nats").is_ok());
        assert!(SinkId::from_str(&format!("we_{}", "a".repeat(32))).is_ok());
        assert!(SinkId::from_str("natsx").is_err());
    }
}
