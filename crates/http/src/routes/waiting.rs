//! The waiting room's operator side and public proof: the fairness document, the
//! admission override, per-event rules, identity-provider buyer tokens; and the mapping
//! of waiting-room refusals to responses (403 rules and human checks, 429 + Retry-After
//! limits, 503 + Retry-After while a human-check verifier cannot answer).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use boxoffice_domain::EventId;
use boxoffice_engine::ports::KnownWrite;
use boxoffice_engine::waiting::{
    AdmissionControl, BuyerGrant, CurrentRate, FairnessView, Refusal, WaitingError, WaitingRules,
};
use serde::{Deserialize, Serialize};

use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::{Operator, QueryParams, json};
use crate::idempotency::{Replay, Scope, reply};
use crate::openapi::{Doc, Schema};
use crate::path_id::Id;
use crate::routes::buyers::BuyerOut;

/// Largest page of pool members one fairness response carries (about 37 KB), and the
/// page a client gets when it names none: the document is public and unauthenticated.
const MAX_POOL_PAGE: u64 = 1_000;

/// Seconds a join waits after the human-check verifier failed to answer.
const HUMAN_CHECK_RETRY_S: u64 = 5;

/// A refusal or an engine error as a response.
pub fn refused(e: WaitingError) -> Response {
    let r = match e {
        WaitingError::Engine(e) => return ApiError::from(e).into_response(),
        WaitingError::Refused(r) => r,
    };
    let msg = r.to_string();
    let err = match r {
        Refusal::NotVerified => ApiError::new(ErrorCode::BuyerNotVerified, msg),
        Refusal::AccountTooNew => ApiError::new(ErrorCode::AccountTooNew, msg),
        Refusal::PowRequired => ApiError::new(ErrorCode::PowRequired, msg),
        Refusal::PowInvalid => ApiError::new(ErrorCode::PowInvalid, msg),
        Refusal::HumanCheckRequired => ApiError::new(ErrorCode::HumanCheckRequired, msg),
        Refusal::HumanCheckFailed => ApiError::new(ErrorCode::HumanCheckFailed, msg),
        Refusal::HumanCheckReused => ApiError::new(ErrorCode::HumanCheckReused, msg),
        Refusal::HumanCheckUnavailable => {
            let mut res = ApiError::new(ErrorCode::HumanCheckUnavailable, msg).into_response();
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(HUMAN_CHECK_RETRY_S));
            return res;
        }
        Refusal::SignupDisabled => ApiError::new(ErrorCode::SelfSignupDisabled, msg),
        Refusal::NotRenewable => ApiError::new(ErrorCode::TokenNotRenewable, msg),
        Refusal::RateLimited { retry_after_ms } => {
            let mut res = ApiError::new(ErrorCode::RateLimited, msg).into_response();
            let secs = retry_after_ms.div_ceil(1000).max(1);
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            return res;
        }
    };
    err.into_response()
}

#[derive(Deserialize)]
pub struct PoolPage {
    #[serde(default)]
    offset: u64,
    #[serde(default = "page")]
    limit: u64,
}

fn page() -> u64 {
    MAX_POOL_PAGE
}

/// How the API document describes `fairness`, and what it refuses with.
pub(crate) const FAIRNESS_DOC: Doc = Doc {
    op: "getQueueFairness",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<FairnessView>())],
    refuses: {
        use ErrorCode as C;
        &[C::EventNotFound, C::InvalidQuery, C::Unavailable]
    },
    shared: &[],
};

/// The commitment (always), the seed and the pool (once placed): everything needed to
/// recompute the pre-opening order, a page of at most `MAX_POOL_PAGE` members at a time.
pub async fn fairness(
    State(st): State<AppState>,
    Id(id): Id<EventId>,
    QueryParams(q): QueryParams<PoolPage>,
) -> Result<Json<FairnessView>, ApiError> {
    let limit = q.limit.clamp(1, MAX_POOL_PAGE);
    Ok(Json(st.engine.fairness(id, q.offset, limit).await?))
}

/// How the API document describes `set_admission`, and what it refuses with.
pub(crate) const SET_ADMISSION_DOC: Doc = Doc {
    op: "setAdmission",
    body: Some(Schema::of::<AdmissionControl>()),
    ok: &[(StatusCode::OK, Schema::of::<AdmissionOut>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::EventNotFound,
            C::InvalidBody,
            C::InvalidRequest,
            C::MalformedJson,
            C::Unavailable,
        ]
    },
    shared: &[
        crate::extract::OPERATOR_REFUSES,
        crate::extract::BODY_REFUSES,
    ],
};

pub async fn set_admission(
    State(st): State<AppState>,
    _: Operator,
    Id(id): Id<EventId>,
    body: Bytes,
) -> Result<Json<AdmissionOut>, ApiError> {
    let control: AdmissionControl = json(&body)?;
    let control = st.engine.set_admission(id, control).await?;
    let stats = st.engine.waiting_stats(id).await?;
    Ok(Json(AdmissionOut {
        event_id: id,
        control,
        rate: stats.rate,
    }))
}

/// The control now in force and the current rate.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Admission)]
pub struct AdmissionOut {
    event_id: EventId,
    control: AdmissionControl,
    rate: CurrentRate,
}

/// An event's waiting-room rules as now in force.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Rules)]
pub struct RulesOut {
    event_id: EventId,
    rules: WaitingRules,
}

/// How the API document describes `set_rules`, and what it refuses with.
pub(crate) const SET_RULES_DOC: Doc = Doc {
    op: "setWaitingRules",
    body: Some(Schema::of::<WaitingRules>()),
    ok: &[(StatusCode::OK, Schema::of::<RulesOut>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::EventNotFound,
            C::InvalidBody,
            C::InvalidRequest,
            C::MalformedJson,
            C::Unavailable,
        ]
    },
    shared: &[
        crate::extract::OPERATOR_REFUSES,
        crate::extract::BODY_REFUSES,
    ],
};

pub async fn set_rules(
    State(st): State<AppState>,
    _: Operator,
    Id(id): Id<EventId>,
    body: Bytes,
) -> Result<Json<RulesOut>, ApiError> {
    let rules: WaitingRules = json(&body)?;
    let rules = st.engine.set_waiting_rules(id, rules).await?;
    Ok(Json(RulesOut {
        event_id: id,
        rules,
    }))
}

/// How the API document describes `grant_buyer_token`, and what it refuses with.
pub(crate) const GRANT_BUYER_TOKEN_DOC: Doc = Doc {
    op: "grantBuyerToken",
    body: Some(Schema::of::<BuyerGrant>()),
    ok: &[(StatusCode::CREATED, Schema::of::<BuyerOut>())],
    refuses: {
        use ErrorCode as C;
        &[C::InvalidBody, C::MalformedJson]
    },
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::OPERATOR_REFUSES,
        crate::extract::BODY_REFUSES,
    ],
};

/// An identity provider (or the operator, in embedded mode) mints a buyer token that
/// carries what eligibility rules read: verified, and when the account was created.
pub async fn grant_buyer_token(
    State(st): State<AppState>,
    _: Operator,
    replay: Replay,
    body: Bytes,
) -> Response {
    let grant: BuyerGrant = match json(&body) {
        Ok(g) => g,
        Err(e) => return e.into_response(),
    };
    // The token is all a grant leaves: its claim and its kept answer are one write.
    let out = BuyerOut::from(st.engine.grant_buyer_token(&grant));
    let answer = match reply(StatusCode::CREATED, &out) {
        Ok(answer) => answer,
        Err(e) => return e.into_response(),
    };
    let write = KnownWrite::AnswerOnly;
    let nothing = async { Ok(()) };
    replay
        .run_known(st.replays(), Scope::Operator, &body, write, answer, nothing)
        .await
}
