//! Parsing requests into domain terms, once, at the edge: bearer tokens, ids in paths,
//! the Idempotency-Key header and JSON bodies. Each failure is a clear 4xx.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, header};
use boxoffice_engine::BuyerSession;
use serde::de::DeserializeOwned;

use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;

/// What a route answers when its buyer token is missing or refused.
pub(crate) const BUYER_REFUSES: &[ErrorCode] = &[
    ErrorCode::MissingToken,
    ErrorCode::InvalidToken,
    ErrorCode::TokenExpired,
    ErrorCode::TokenNotYetValid,
    ErrorCode::TokenUnknownKey,
    ErrorCode::TokenWrongIssuer,
    ErrorCode::TokenWrongAudience,
];

/// What a route answers when the operator key is missing or wrong.
pub(crate) const OPERATOR_REFUSES: &[ErrorCode] = &[ErrorCode::MissingToken, ErrorCode::Forbidden];

/// What a route answers when its proof of possession (`DPoP`) is missing or refused.
pub(crate) const PROOF_REFUSES: &[ErrorCode] = &[
    ErrorCode::ProofRequired,
    ErrorCode::ProofInvalid,
    ErrorCode::ProofStale,
    ErrorCode::ProofReplayed,
    ErrorCode::ProofKeyMismatch,
];

/// What a route that reads a body answers when it is over `MAX_BODY`.
pub(crate) const BODY_REFUSES: &[ErrorCode] = &[ErrorCode::PayloadTooLarge];

// The request headers a write reads, named once: a name given as text is parsed and
// checked on every lookup.
pub(crate) const BUYER_SESSION: HeaderName = HeaderName::from_static("x-buyer-session");
const DPOP: HeaderName = HeaderName::from_static("dpop");
const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// The raw bearer token of a request.
pub fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    match value.strip_prefix("Bearer ").map(str::trim) {
        Some(t) if !t.is_empty() => Ok(t),
        _ => Err(ApiError::new(
            ErrorCode::MissingToken,
            "send the token as Authorization: Bearer <token>",
        )),
    }
}

/// The bearer token of a request, taken without copying the other headers; a missing
/// token is reported by whoever needs it, so errors keep their order.
pub struct BearerToken(Option<String>);

impl BearerToken {
    pub fn get(&self) -> Result<&str, ApiError> {
        self.0.as_deref().ok_or_else(missing_token)
    }
}

impl BearerToken {
    pub(crate) fn of(headers: &HeaderMap) -> BearerToken {
        BearerToken(bearer(headers).ok().map(str::to_owned))
    }
}

impl<S: Send + Sync> FromRequestParts<S> for BearerToken {
    type Rejection = std::convert::Infallible;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(BearerToken::of(&parts.headers))
    }
}

/// The buyer's session token sent beside an admission token (`X-Buyer-Session`), if any.
pub struct BuyerSessionHeader(pub Option<String>);

impl BuyerSessionHeader {
    pub(crate) fn of(headers: &HeaderMap) -> BuyerSessionHeader {
        let value = headers.get(&BUYER_SESSION).and_then(|v| v.to_str().ok());
        BuyerSessionHeader(value.map(str::to_owned))
    }
}

impl<S: Send + Sync> FromRequestParts<S> for BuyerSessionHeader {
    type Rejection = std::convert::Infallible;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(BuyerSessionHeader::of(&parts.headers))
    }
}

/// A request's proof of possession (the `DPoP` header, RFC 9449) with the method and
/// path it must be a proof for. Sent twice, or not as visible ASCII, it is kept as an
/// empty proof, which no check accepts.
pub struct Dpop {
    proof: Option<String>,
    method: axum::http::Method,
    path: String,
}

impl Dpop {
    pub fn input(&self) -> boxoffice_engine::ProofInput<'_> {
        boxoffice_engine::ProofInput {
            proof: self.proof.as_deref(),
            method: self.method.as_str(),
            path: &self.path,
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Dpop {
    type Rejection = std::convert::Infallible;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Dpop::of(parts))
    }
}

impl Dpop {
    pub(crate) fn of(parts: &Parts) -> Dpop {
        let mut sent = parts.headers.get_all(&DPOP).iter();
        let proof = match (sent.next(), sent.next()) {
            (None, _) => None,
            (Some(one), None) => Some(one.to_str().unwrap_or_default().to_owned()),
            (Some(_), Some(_)) => Some(String::new()),
        };
        // The path is what a proof is checked against: without one it is never read.
        let path = match proof {
            Some(_) => parts.uri.path().to_owned(),
            None => String::new(),
        };
        Dpop {
            proof,
            method: parts.method.clone(),
            path,
        }
    }
}

fn missing_token() -> ApiError {
    ApiError::new(
        ErrorCode::MissingToken,
        "send the token as Authorization: Bearer <token>",
    )
}

/// A buyer authenticated by their session token.
pub struct Buyer(pub BuyerSession);

impl FromRequestParts<AppState> for Buyer {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = bearer(&parts.headers)?;
        Ok(Buyer(state.engine.authenticate(token).await?))
    }
}

/// The operator, by the operator key.
pub struct Operator;

impl FromRequestParts<AppState> for Operator {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = bearer(&parts.headers)?;
        if state.operator_key.matches(token) {
            Ok(Operator)
        } else {
            Err(ApiError::new(
                ErrorCode::Forbidden,
                "this call needs the operator key",
            ))
        }
    }
}

/// The client's Idempotency-Key: 1-255 visible ASCII characters.
pub struct IdempotencyKey(pub String);

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKey {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        IdempotencyKey::of(&parts.headers)
    }
}

impl IdempotencyKey {
    pub(crate) fn of(headers: &HeaderMap) -> Result<IdempotencyKey, ApiError> {
        let missing = || {
            ApiError::new(
                ErrorCode::IdempotencyKeyRequired,
                "writes need an Idempotency-Key header (1-255 visible ASCII characters)",
            )
        };
        let key = headers
            .get(&IDEMPOTENCY_KEY)
            .ok_or_else(missing)?
            .to_str()
            .map_err(|_| missing())?;
        if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(missing());
        }
        Ok(IdempotencyKey(key.to_string()))
    }
}

/// Parses a JSON body: broken JSON is 400 `malformed_json`, the wrong shape is 422
/// `invalid_body` with serde's description of what is wrong.
pub fn json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let body = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}".as_slice()
    } else {
        body
    };
    serde_json::from_slice(body).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            ApiError::new(
                ErrorCode::MalformedJson,
                format!("the body is not valid JSON: {e}"),
            )
        } else {
            ApiError::new(
                ErrorCode::InvalidBody,
                format!("the body does not match the schema: {e}"),
            )
        }
    })
}

/// A query string parsed into `T`; one that does not parse is 400 `invalid_query`.
pub struct QueryParams<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::try_from_uri(&parts.uri)
            .map(|q| QueryParams(q.0))
            .map_err(|e| {
                ApiError::new(
                    ErrorCode::InvalidQuery,
                    format!("the query string is not valid: {}", e.body_text()),
                )
            })
    }
}
