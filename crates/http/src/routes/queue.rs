//! The waiting room's buyer side: join, the public queue document (cacheable, with an
//! ETag) and its SSE stream, the personal status call, and proof-of-work challenges.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use boxoffice_domain::EventId;
use boxoffice_engine::ports::{Claimed, KeptOutcome};
use boxoffice_engine::waiting::{Challenge, PublicQueueBody};
use boxoffice_engine::{EngineError, JoinOutcome, Joiner, PowSolution, QueueStatus};
use futures::StreamExt;
use serde::Deserialize;

use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::{Dpop, QueryParams, bearer, json};
use crate::idempotency::{ClaimArgs, Replay, Scope, Stepped, reply};
use crate::openapi::{Doc, Schema};
use crate::path_id::Id;
use crate::routes::waiting::refused;
use crate::{AppState, ClientAddr, sse};

/// A join: empty, or with what the event's human check asks (the public queue
/// document's `human_check`): a solved proof of work, or a hosted verifier's token.
#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = JoinRequest)]
struct JoinBody {
    #[serde(default)]
    pow: Option<PowSolution>,
    /// The token the provider's widget gave (Turnstile, hCaptcha, reCAPTCHA); used
    /// once.
    #[serde(default)]
    #[schema(max_length = 4096)]
    human_check_token: Option<String>,
}

/// How the API document describes `join`, and what it refuses with.
pub(crate) const JOIN_DOC: Doc = Doc {
    op: "joinQueue",
    body: Some(Schema::of::<JoinBody>()),
    ok: &[(StatusCode::OK, Schema::of::<JoinOutcome>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::AccountTooNew,
            C::BuyerNotVerified,
            C::EventNotFound,
            C::HumanCheckFailed,
            C::HumanCheckRequired,
            C::HumanCheckReused,
            C::HumanCheckUnavailable,
            C::InvalidBody,
            C::MalformedJson,
            C::PowInvalid,
            C::PowRequired,
            C::RateLimited,
            C::SaleClosed,
            C::TooManyBuyers,
        ]
    },
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::BUYER_REFUSES,
        crate::extract::BODY_REFUSES,
        crate::extract::PROOF_REFUSES,
    ],
};

pub async fn join(
    State(st): State<AppState>,
    ClientAddr(addr): ClientAddr,
    headers: HeaderMap,
    dpop: Dpop,
    replay: Replay,
    Id(id): Id<EventId>,
    body: Bytes,
) -> Response {
    let prepared = async {
        let token = bearer(&headers)?;
        let who = st.engine.identify(token).await?;
        Ok::<_, ApiError>((who, json::<JoinBody>(&body)?))
    }
    .await;
    let (who, parsed) = match prepared {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let joiner = Joiner {
        who: &who,
        ip: Some(addr),
        pow: parsed.pow.as_ref(),
        proof: Some(dpop.input()),
        human_token: parsed.human_check_token.as_deref(),
    };
    // Refusals (403, 429) are answered before the replay store: they change nothing,
    // and a retry after Retry-After must be able to succeed.
    let pass = match st.engine.check_join(id, joiner).await {
        Ok(pass) => pass,
        Err(e) => return refused(e),
    };
    // The replay store decides before the join takes effect: a key used for another
    // request is refused without taking a place. After opening the claim and the place
    // are one call to the hot store (`ClaimedJoins`), which may keep "joined" as the
    // key's answer in the same call; a retry then runs the join again, which finds the
    // buyer's place again. Otherwise the answer is kept after it is sent, not waited on
    // (`Stepped::Ran`): a join run again gives the same answer.
    let scope = Scope::Buyer(pass.buyer());
    let (state, again) = (st.clone(), (st.engine.clone(), pass.clone()));
    let step = move |args: ClaimArgs| async move {
        let joins = state.join_claims.clone();
        let claimed = (state.engine)
            .join_claimed(pass, &*joins, &args.claim())
            .await;
        match claimed.map(Claimed::outcome) {
            Err(e) => Stepped::Before(e.into()),
            Ok(Err(begin)) => Stepped::Refused(begin),
            Ok(Ok((out, kept))) => {
                let reply = out.map_err(ApiError::from);
                Stepped::answered(reply.and_then(|out| reply_json(&out)), kept)
            }
        }
    };
    let render = move |kept: KeptOutcome| async move {
        let (engine, pass) = again;
        match kept {
            KeptOutcome::Joined => reply_json(&engine.join_checked(pass).await?),
            _ => Err(EngineError::Internal("a hold's record under a join's key".into()).into()),
        }
    };
    replay
        .run_claimed(st.join_replays(), scope, &body, step, render)
        .await
}

/// A join's answer, as every join (and a retry that runs it again) sends it.
fn reply_json(out: &JoinOutcome) -> crate::idempotency::Reply {
    reply(StatusCode::OK, out)
}

/// How the API document describes `public`, and what it refuses with.
pub(crate) const PUBLIC_DOC: Doc = Doc {
    op: "getQueue",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<PublicQueueBody<'static>>())],
    refuses: {
        use ErrorCode as C;
        &[C::EventNotFound, C::Internal, C::Unavailable]
    },
    shared: &[],
};

/// The public, cacheable line state of an event: pre-serialized once per node per
/// `public_doc_ttl_ms`, revalidated by ETag.
pub async fn public(
    State(st): State<AppState>,
    headers: HeaderMap,
    Id(id): Id<EventId>,
) -> Result<Response, ApiError> {
    let doc = st.engine.public_doc(id).await?;
    let etag = HeaderValue::from_str(&doc.etag).unwrap_or(HeaderValue::from_static("\"0\""));
    let cache = HeaderValue::from_static("public, max-age=1");
    if headers.get(header::IF_NONE_MATCH) == Some(&etag) {
        let mut res = StatusCode::NOT_MODIFIED.into_response();
        res.headers_mut().insert(header::CACHE_CONTROL, cache);
        res.headers_mut().insert(header::ETAG, etag);
        return Ok(res);
    }
    let mut res = Response::new(Body::from(doc.body.clone()));
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CACHE_CONTROL, cache);
    h.insert(header::ETAG, etag);
    Ok(res)
}

/// How the API document describes `stream`, and what it refuses with.
pub(crate) const STREAM_DOC: Doc = Doc {
    op: "streamQueue",
    body: None,
    ok: &[],
    refuses: {
        use ErrorCode as C;
        &[
            C::EventNotFound,
            C::ShuttingDown,
            C::TooManyStreams,
            C::Unavailable,
        ]
    },
    shared: &[],
};

/// The same document as server-sent events: one `queue` event whenever it changes
/// (checked every second), plus keep-alives.
pub async fn stream(
    State(st): State<AppState>,
    ClientAddr(addr): ClientAddr,
    Id(id): Id<EventId>,
) -> Result<Response, ApiError> {
    st.engine.public_doc(id).await?;
    let slot = st.edge.open_stream(addr)?;
    let ticks =
        tokio_stream::wrappers::IntervalStream::new(tokio::time::interval(Duration::from_secs(1)));
    let mut last = String::new();
    let frames = ticks
        .then(move |_| {
            let st = st.clone();
            async move { st.engine.public_doc(id).await.ok() }
        })
        .filter_map(move |doc| {
            let out = doc.filter(|d| d.etag != last).map(|d| {
                last = d.etag.clone();
                sse::frame("queue", &d.etag, &String::from_utf8_lossy(&d.body))
            });
            std::future::ready(out)
        });
    Ok(sse::respond(slot, Box::pin(frames)))
}

#[derive(Deserialize)]
pub struct TicketQuery {
    ticket: Option<String>,
}

/// How the API document describes `status`, and what it refuses with.
pub(crate) const STATUS_DOC: Doc = Doc {
    op: "getQueueStatus",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<QueueStatus>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::AdmissionExpired,
            C::EventNotFound,
            C::Internal,
            C::InvalidQuery,
            C::InvalidToken,
            C::MissingToken,
            C::RateLimited,
            C::TokenExpired,
            C::TokenUnknownKey,
            C::Unavailable,
        ]
    },
    shared: &[],
};

/// Exchanges a queue ticket (bearer or `?ticket=`) for the buyer's standing, and for an
/// admission token once their turn has come.
pub async fn status(
    State(st): State<AppState>,
    headers: HeaderMap,
    QueryParams(q): QueryParams<TicketQuery>,
) -> Response {
    let ticket = match q.ticket.as_deref() {
        Some(t) if !t.is_empty() => t,
        _ => match bearer(&headers) {
            Ok(t) => t,
            Err(e) => return e.into_response(),
        },
    };
    match st.engine.queue_status(ticket).await {
        Ok(out) => {
            let mut res = axum::Json(out).into_response();
            res.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            res
        }
        Err(e) => refused(e),
    }
}

/// How the API document describes `challenge`, and what it refuses with.
pub(crate) const CHALLENGE_DOC: Doc = Doc {
    op: "getQueueChallenge",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<Challenge>())],
    refuses: {
        use ErrorCode as C;
        &[C::EventNotFound, C::RateLimited, C::Unavailable]
    },
    shared: &[crate::extract::BUYER_REFUSES],
};

/// A proof-of-work challenge for joining this event's queue.
pub async fn challenge(
    State(st): State<AppState>,
    ClientAddr(addr): ClientAddr,
    headers: HeaderMap,
    Id(id): Id<EventId>,
) -> Response {
    let token = match bearer(&headers) {
        Ok(t) => t,
        Err(e) => return e.into_response(),
    };
    match st.engine.pow_challenge(id, token, Some(addr)).await {
        Ok(c) => (
            [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
            axum::Json(c),
        )
            .into_response(),
        Err(e) => refused(e),
    }
}
