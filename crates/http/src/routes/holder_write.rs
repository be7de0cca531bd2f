//! What a ticket holder's writes share (transfers, attendee names, exchange listings):
//! each is taken from the buyer's allowance of ticket writes before the replay store, so
//! a refused attempt is not kept as the key's answer, then runs once per
//! Idempotency-Key. The route reads and bounds its body before the allowance is taken,
//! so a malformed body costs none of it.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::Response;
use boxoffice_engine::{BuyerSession, Engine, EngineError};
use serde::Serialize;

use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::Buyer;
use crate::idempotency::{Replay, Scope, reply};
use crate::routes::waiting::refused;

/// What every holder's write may answer besides its own refusals.
pub(crate) const SHARED: &[&[ErrorCode]] = &[
    &[ErrorCode::RateLimited],
    crate::idempotency::REFUSES,
    crate::extract::BUYER_REFUSES,
];

/// A ticket holder's write: the buyer, by their session token, and the request's
/// Idempotency-Key, taken in that order (as `Buyer` then `Replay` would be).
pub struct HolderWrite {
    who: BuyerSession,
    replay: Replay,
}

impl FromRequestParts<AppState> for HolderWrite {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let Buyer(who) = Buyer::from_request_parts(parts, state).await?;
        let replay = Replay::from_request_parts(parts, state).await?;
        Ok(HolderWrite { who, replay })
    }
}

impl HolderWrite {
    /// The write `write` makes for the buyer, once per key (`body` is the request's,
    /// for the key's fingerprint): answered `ok` with what it returns, or refused with
    /// nothing kept once the buyer's allowance is spent.
    pub(crate) async fn run<T, W, Fut>(
        self,
        st: &AppState,
        body: &[u8],
        ok: StatusCode,
        write: W,
    ) -> Response
    where
        T: Serialize,
        W: FnOnce(Arc<Engine>, BuyerSession) -> Fut,
        Fut: Future<Output = Result<T, EngineError>> + Send + 'static,
    {
        if let Err(r) = st.engine.limit_transfer(&self.who) {
            return refused(r.into());
        }
        let scope = Scope::Buyer(self.who.buyer);
        let done = write(st.engine.clone(), self.who);
        let answer = async move { reply(ok, &done.await?) };
        self.replay.run(st.replays(), scope, body, answer).await
    }
}
