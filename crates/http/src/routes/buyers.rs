//! Anonymous buyers (POST /v1/buyers), when the operator allows self sign-up.
//!
//! The answer carries a bearer token, so replaying it is handing out that identity. A
//! replay therefore answers only to the secret the first request held: the
//! Idempotency-Key itself. Scoping replays by client address (as before) is wrong both
//! ways: clients behind one NAT that reuse a key (a key copied from documentation) got
//! each other's token, and a phone whose address changed between retries lost its own.
//! The server cannot tell apart two clients that send the same request, so the key must
//! be a secret: at least 32 characters of a random value (a UUID v4 is fine), refused
//! otherwise before anything is created. Replays are stored under a digest of the key,
//! in one scope for everyone, so the stored record never holds the key that unlocks it.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use boxoffice_domain::{BuyerId, Millis};
use boxoffice_engine::BuyerToken;
use boxoffice_engine::ports::KnownWrite;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::{IdempotencyKey, bearer};
use crate::idempotency::{Replay, Scope, reply};
use crate::openapi::{Doc, Schema};
use crate::routes::waiting::refused;
use crate::{AppState, ClientAddr};

/// A buyer and the session token that acts as them.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Buyer)]
pub struct BuyerOut {
    pub buyer_id: BuyerId,
    /// Buyer session token: send as `Authorization: Bearer <token>` (buyerToken).
    pub token: String,
    /// When the token lapses (ms since the epoch, a whole second). Renew it before
    /// then with `POST /v1/me/token`.
    pub expires_at: Millis,
}

impl From<BuyerToken> for BuyerOut {
    fn from(t: BuyerToken) -> Self {
        BuyerOut {
            buyer_id: t.buyer,
            token: t.token,
            expires_at: t.expires_at,
        }
    }
}

/// Shortest key accepted as a secret; a UUID has 36 characters, 32 random hex digits.
const MIN_KEY_LEN: usize = 32;
/// Fewest distinct characters: refuses padding such as `aaaa…` or `0000…` of any length
/// while a random UUID fails it with odds far below one in a million.
const MIN_DISTINCT: usize = 8;

/// The digest under which a buyer creation is kept, if the key can serve as a secret.
fn secret_digest(key: &IdempotencyKey) -> Result<IdempotencyKey, ApiError> {
    let raw = key.0.as_bytes();
    let mut seen = [false; 256];
    raw.iter().for_each(|&b| seen[b as usize] = true);
    let distinct = seen.iter().filter(|s| **s).count();
    if raw.len() < MIN_KEY_LEN || distinct < MIN_DISTINCT {
        return Err(ApiError::new(
            ErrorCode::IdempotencyKeyWeak,
            "creating a buyer needs an Idempotency-Key that is a secret: a retry with it gets \
             the buyer's token back. Use a fresh random value of at least 32 characters \
             (a UUID v4), never a key shared with anyone else",
        ));
    }
    let digest = Sha256::digest(raw);
    Ok(IdempotencyKey(
        digest.iter().map(|b| format!("{b:02x}")).collect(),
    ))
}

/// How the API document describes `create_buyer`, and what it refuses with.
pub(crate) const CREATE_BUYER_DOC: Doc = Doc {
    op: "createBuyer",
    body: None,
    ok: &[(StatusCode::CREATED, Schema::of::<BuyerOut>())],
    refuses: {
        use ErrorCode as C;
        &[C::IdempotencyKeyWeak, C::RateLimited, C::SelfSignupDisabled]
    },
    shared: &[crate::idempotency::REFUSES],
};

pub async fn create_buyer(
    State(st): State<AppState>,
    ClientAddr(ip): ClientAddr,
    replay: Replay,
) -> Response {
    if let Err(r) = st.engine.may_sign_up(Some(ip)) {
        return refused(r.into());
    }
    let replay = match secret_digest(replay.key()) {
        Ok(d) => replay.rekey(d),
        Err(e) => return e.into_response(),
    };
    // The answer is known before the write: where the replay store lives in the
    // ledger's database, the claim, the buyer's row and the kept answer are one write.
    let new = st.engine.new_buyer();
    let out = BuyerOut {
        buyer_id: new.buyer,
        token: new.token.clone(),
        expires_at: new.expires_at,
    };
    let answer = match reply(StatusCode::CREATED, &out) {
        Ok(answer) => answer,
        Err(e) => return e.into_response(),
    };
    let (engine, write) = (st.engine.clone(), new.write());
    let fallback = async move { Ok(engine.record_buyer(&new).await?) };
    replay
        .run_known(st.replays(), Scope::Secrets, b"", write, answer, fallback)
        .await
}

/// How the API document describes `renew_token`, and what it refuses with.
pub(crate) const RENEW_DOC: Doc = Doc {
    op: "renewBuyerToken",
    body: None,
    ok: &[(StatusCode::CREATED, Schema::of::<BuyerOut>())],
    refuses: {
        use ErrorCode as C;
        &[C::RateLimited, C::TokenNotRenewable]
    },
    shared: &[crate::idempotency::REFUSES, crate::extract::BUYER_REFUSES],
};

/// A fresh session token for the buyer calling (`Engine::renew_buyer_token`): the one
/// sent must be live and the box office's own. The answer is kept under the buyer's
/// Idempotency-Key like any write's, so a lost answer's retry gets the same token.
pub async fn renew_token(
    State(st): State<AppState>,
    replay: Replay,
    headers: HeaderMap,
) -> Response {
    let token = match bearer(&headers) {
        Ok(token) => token,
        Err(e) => return e.into_response(),
    };
    let renewed = match st.engine.renew_buyer_token(token) {
        Ok(renewed) => renewed,
        Err(e) => return refused(e),
    };
    let scope = Scope::Buyer(renewed.buyer);
    let answer = match reply(StatusCode::CREATED, &BuyerOut::from(renewed)) {
        Ok(answer) => answer,
        Err(e) => return e.into_response(),
    };
    let nothing = async { Ok(()) };
    replay
        .run_known(
            st.replays(),
            scope,
            b"",
            KnownWrite::AnswerOnly,
            answer,
            nothing,
        )
        .await
}
