//! Holds: claim seats with an admission token (rate-limited per buyer), read or release
//! them with the buyer token.

use std::convert::Infallible;
use std::future::{Future, Ready, ready};
use std::net::IpAddr;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use boxoffice_domain::{EventId, HoldId, HoldState, Millis, Money};
use boxoffice_engine::ports::{Claimed, HoldView, KeptOutcome};
use boxoffice_engine::{EngineError, HoldInput, Origin, SeatSelection};
use futures::FutureExt;
use futures::future::Either;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde::{Deserialize, Serialize};
use tower::Service;
use utoipa::ToSchema;

use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::{BearerToken, Buyer, BuyerSessionHeader, Dpop, json};
use crate::idempotency::{ClaimArgs, Replay, Scope, Stepped, reply_with};
use crate::observe::Feeds;
use crate::openapi::{Doc, Schema};
use crate::path_id::Id;
use crate::routes::waiting::refused;
use crate::{AppState, ClientAddr};

/// Exactly one of seat_ids or best_available. All seats are held or none.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = HoldRequest)]
struct HoldBody {
    /// Seat ids from the seat map, each at most once.
    #[serde(default)]
    #[schema(min_items = 1)]
    seat_ids: Option<Vec<String>>,
    #[serde(default)]
    best_available: Option<BestAvailable>,
}

/// The best seats left in a section, chosen by the server.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct BestAvailable {
    /// Section key.
    section: String,
    /// Seats wanted, at most the event's max_tickets_per_buyer.
    #[schema(minimum = 1)]
    quantity: u32,
    /// Require seats side by side in one row.
    #[serde(default = "yes")]
    #[schema(default = true)]
    adjacent: bool,
}

fn yes() -> bool {
    true
}

impl HoldBody {
    fn into_input(self) -> Result<HoldInput, ApiError> {
        let selection = match (self.seat_ids, self.best_available) {
            (Some(ids), None) => SeatSelection::Named(ids),
            (None, Some(b)) => SeatSelection::BestAvailable {
                section: b.section,
                quantity: b.quantity,
                adjacent: b.adjacent,
            },
            _ => {
                return Err(ApiError::new(
                    ErrorCode::InvalidBody,
                    "send exactly one of seat_ids or best_available",
                ));
            }
        };
        Ok(HoldInput { selection })
    }
}

/// Seats held for a buyer until checkout or expiry.
#[derive(Serialize, ToSchema)]
#[schema(as = Hold)]
pub struct HoldOut {
    hold_id: HoldId,
    event_id: EventId,
    status: HoldState,
    seat_ids: Vec<String>,
    /// Price of each seat, in seat_ids order, fixed at hold time.
    prices: Vec<Money>,
    /// Sum of prices: what checkout charges.
    price_quote: Money,
    /// When the seats return to stock unless checkout has started.
    expires_at: Millis,
}

impl HoldOut {
    /// The JSON the derived `Serialize` writes (pinned by a test), written directly:
    /// every hold and release answers with one, and serde_json's struct path escapes
    /// each key and the hold id byte by byte. Only the seat labels (operator text) and
    /// the state go through serde_json.
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.extend_from_slice(b"{\"hold_id\":\"");
        // Digits, '-' and hex digits: nothing to escape.
        out.extend_from_slice(self.hold_id.text().as_bytes());
        out.extend_from_slice(b"\",\"event_id\":");
        serde_json::to_writer(&mut *out, &self.event_id)?;
        out.extend_from_slice(b",\"status\":");
        serde_json::to_writer(&mut *out, &self.status)?;
        out.extend_from_slice(b",\"seat_ids\":");
        serde_json::to_writer(&mut *out, &self.seat_ids)?;
        out.extend_from_slice(b",\"prices\":");
        serde_json::to_writer(&mut *out, &self.prices)?;
        out.extend_from_slice(b",\"price_quote\":");
        serde_json::to_writer(&mut *out, &self.price_quote)?;
        out.extend_from_slice(b",\"expires_at\":");
        serde_json::to_writer(&mut *out, &self.expires_at)?;
        out.push(b'}');
        Ok(())
    }
}

async fn view(st: &AppState, h: HoldView) -> Result<HoldOut, ApiError> {
    let seat_ids = st.engine.hold_seat_labels(&h).await?;
    Ok(HoldOut::of(h, seat_ids))
}

impl HoldOut {
    fn of(h: HoldView, seat_ids: Vec<String>) -> HoldOut {
        HoldOut {
            seat_ids,
            hold_id: h.hold,
            event_id: h.hold.event,
            status: h.state,
            price_quote: h.total(),
            prices: h.prices,
            expires_at: h.expires_at,
        }
    }
}

/// How the API document describes `create`, and what it refuses with.
pub(crate) const CREATE_DOC: Doc = Doc {
    op: "createHold",
    body: Some(Schema::of::<HoldBody>()),
    ok: &[(StatusCode::CREATED, Schema::of::<HoldOut>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::EventNotFound,
            C::InvalidBody,
            C::InvalidRequest,
            C::InvalidToken,
            C::LimitExceeded,
            C::MalformedJson,
            C::MissingToken,
            C::RateLimited,
            C::SaleNotOpen,
            C::SeatNotFound,
            C::SeatUnavailable,
            C::SectionNotFound,
            C::SessionMismatch,
            C::SoldOut,
            C::TokenExpired,
            C::TokenNotYetValid,
            C::TokenUnknownKey,
            C::TokenWrongAudience,
            C::TokenWrongEvent,
            C::TokenWrongIssuer,
            C::TooManyBuyers,
        ]
    },
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::BODY_REFUSES,
        crate::extract::PROOF_REFUSES,
    ],
};

/// The hold route as a service of its own, not an axum handler: the node's service
/// (`Served`) calls it before the router, and the router serves it from the table
/// alike. A request is read straight from the request (no extractors, no path
/// parameters), and the state is cloned once, for the request's future.
pub(crate) fn create_service(
    st: AppState,
) -> impl Service<Request, Response = Response, Error = Infallible, Future: Send + 'static>
+ Clone
+ Send
+ Sync
+ 'static {
    // Mapped, not awaited in an `async` block: a block would keep the hold's future
    // twice, as the value it captured and as the one it awaits.
    tower::service_fn(move |req: Request| create(&st, req).map(Ok::<_, Infallible>))
}

/// What a hold request presents, read from its head in the order a refusal names it:
/// the Idempotency-Key, then the event; the admission token (with the buyer's session
/// token and the proof of possession, when sent) is checked after the body is read.
struct Presented {
    addr: IpAddr,
    token: BearerToken,
    session: BuyerSessionHeader,
    dpop: Dpop,
    replay: Replay,
    event: EventId,
    feeds: Feeds,
}

impl Presented {
    fn of(st: &AppState, parts: &Parts) -> Result<Presented, ApiError> {
        let replay = Replay::of(parts)?;
        // "/v1/events/{id}/holds": the id is the path's third segment.
        let Id(event) = Id::<EventId>::in_path(parts.uri.path(), 3)?;
        Ok(Presented {
            addr: ClientAddr::of_parts(st, parts).0,
            token: BearerToken::of(&parts.headers),
            session: BuyerSessionHeader::of(&parts.headers),
            dpop: Dpop::of(parts),
            replay,
            event,
            feeds: Feeds::of(&parts.extensions),
        })
    }
}

/// The body, up to the route's limit. A body over it is refused as every route's is
/// (`payload_too_large`); one that cannot be read (a broken chunk, a client gone
/// mid-body) as axum's body extractor refuses it on every other route: 400, in words.
async fn read_body(body: axum::body::Body) -> Result<Bytes, Response> {
    let limit = super::body_limit(super::HOLD_PATH);
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<LengthLimitError>() => {
            Err(crate::observe::too_large(limit).into_response())
        }
        Err(_) => {
            Err((StatusCode::BAD_REQUEST, "Failed to buffer the request body").into_response())
        }
    }
}

/// A hold: its head is read here, before its future is made, and the future keeps only
/// what the hold needs of it. The future is the request's, kept by its connection, so
/// every byte of it is written for every hold: no argument or local is kept in it
/// after its last use (an `async fn` keeps its arguments, and a local moved out of
/// keeps its place, until it returns).
fn create(
    st: &AppState,
    req: Request,
) -> Either<Ready<Response>, impl Future<Output = Response> + Send + use<>> {
    let (parts, body) = req.into_parts();
    let presented = match Presented::of(st, &parts) {
        Ok(p) => p,
        Err(e) => return Either::Left(ready(e.into_response())),
    };
    Either::Right(hold(st.clone(), presented, body))
}

fn hold(
    st: AppState,
    presented: Presented,
    body: axum::body::Body,
) -> impl Future<Output = Response> + Send + use<> {
    let Presented {
        addr,
        token,
        session,
        dpop,
        replay,
        event: id,
        feeds,
    } = presented;
    async move {
        let body = match read_body(body).await {
            Ok(body) => body,
            Err(refused) => return refused,
        };
        // The buyer's own session token, when sent, must match the admission token's.
        let token = match token.get() {
            Ok(token) => token,
            Err(e) => return e.into_response(),
        };
        let session = session.0.as_deref();
        let admitted = match st.engine.admitted_in_session(id, token, session).await {
            Ok(admitted) => admitted,
            Err(e) => return ApiError::from(e).into_response(),
        };
        let input = match json::<HoldBody>(&body).and_then(HoldBody::into_input) {
            Ok(input) => input,
            Err(e) => return e.into_response(),
        };
        // Before the replay store: a refused attempt is cheap and is not kept as the key's
        // answer, so the same request succeeds after Retry-After.
        if let Err(r) = st.engine.limit_hold(&admitted) {
            return refused(r.into());
        }
        // The event, looked up once for the checks, the hold and its answer.
        let entry = match st.engine.event(admitted.event).await {
            Ok(entry) => entry,
            Err(e) => return ApiError::from(e).into_response(),
        };
        // Last of the checks: only a proof that passed everything else is remembered.
        if let Err(e) = (st.engine)
            .prove_admission(&entry, &admitted, dpop.input())
            .await
        {
            return ApiError::from(e).into_response();
        }
        // Where the buyer comes from: the clusters of the key the proof just proved (the
        // admission's) and of the network, which the hold's step joins once the hold's own
        // checks pass, before the hold is taken.
        let origin = Origin {
            ip: Some(addr),
            device: admitted.key.as_ref().map(|k| k.0.clone()),
        };
        // The key's claim and the hold are one call to the hot store (`ClaimedHolds`), which
        // may keep the hold's outcome as the key's answer in the same call.
        let scope = Scope::Buyer(admitted.who.buyer);
        let (state, again_st) = (st.clone(), st.clone());
        let step = move |args: ClaimArgs| async move {
            let sample = feeds.start();
            let claimed = (state.engine)
                .hold_claimed(
                    &entry,
                    &admitted,
                    &input,
                    &origin,
                    &*state.hold_claims,
                    &args.claim(),
                )
                .await;
            let (hold, kept) = match claimed.map(Claimed::outcome) {
                Err(e) => {
                    sample.hold(&state, Some(&e));
                    return Stepped::Before(e.into());
                }
                Ok(Err(begin)) => return Stepped::Refused(begin),
                Ok(Ok(ran)) => ran,
            };
            sample.hold(&state, hold.as_ref().err());
            let reply = hold.map_err(ApiError::from).and_then(|hold| {
                let seat_ids = state.engine.seat_labels(&entry, &hold.seats);
                let out = HoldOut::of(hold, seat_ids);
                reply_with(StatusCode::CREATED, |b| out.write_json(b))
            });
            Stepped::answered(reply, kept)
        };
        let work = replay.run_claimed(st.hold_replays(), scope, &body, step, |k| {
            again(again_st, k)
        });
        work.await
    }
}

/// A hold's outcome as the buyer is told it (`status` when it is the hold): a
/// release's, and a hold's again to a retry of the same request whose outcome the hot
/// store kept (`create` answers the first time from the event it already has, with the
/// same labels).
async fn answer(
    st: &AppState,
    status: StatusCode,
    hold: Result<HoldView, EngineError>,
) -> crate::idempotency::Reply {
    match hold {
        Ok(hold) => {
            let out = view(st, hold).await?;
            reply_with(status, |b| out.write_json(b))
        }
        Err(e) => Err(e.into()),
    }
}

/// A retry answered from the outcome the hot store kept, as the step answered it.
async fn again(st: AppState, kept: KeptOutcome) -> crate::idempotency::Reply {
    let (status, hold) = match kept {
        KeptOutcome::Hold(hold) => (StatusCode::CREATED, hold),
        KeptOutcome::Release(released) => (StatusCode::OK, released.map(|r| r.hold)),
        // Joins keep their records in a store of their own.
        KeptOutcome::Joined => {
            let e = EngineError::Internal("a join's record under a hold's key".into());
            return Err(e.into());
        }
    };
    answer(&st, status, hold.map_err(EngineError::from)).await
}

/// How the API document describes `get`, and what it refuses with.
pub(crate) const GET_DOC: Doc = Doc {
    op: "getHold",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<HoldOut>())],
    refuses: {
        use ErrorCode as C;
        &[C::HoldNotFound, C::Internal, C::Unavailable]
    },
    shared: &[crate::extract::BUYER_REFUSES],
};

pub async fn get(
    State(st): State<AppState>,
    Buyer(who): Buyer,
    Id(id): Id<HoldId>,
) -> Result<Json<HoldOut>, ApiError> {
    let hold = st.engine.get_hold(&who, id).await?;
    Ok(Json(view(&st, hold).await?))
}

/// How the API document describes `release`, and what it refuses with.
pub(crate) const RELEASE_DOC: Doc = Doc {
    op: "releaseHold",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<HoldOut>())],
    refuses: {
        use ErrorCode as C;
        &[C::HoldNotActive, C::HoldNotFound]
    },
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::BUYER_REFUSES,
        crate::extract::PROOF_REFUSES,
    ],
};

pub async fn release(
    State(st): State<AppState>,
    Buyer(who): Buyer,
    dpop: Dpop,
    replay: Replay,
    Id(hold): Id<HoldId>,
) -> Response {
    if let Err(e) = st.engine.prove_for_hold(hold, dpop.input()).await {
        return ApiError::from(e).into_response();
    }
    // The key's claim and the release are one call to the hot store (`ClaimedHolds`).
    let scope = Scope::Buyer(who.buyer);
    let state = st.clone();
    let again_st = st.clone();
    let step = move |args: ClaimArgs| async move {
        let holds = state.hold_claims.clone();
        let claimed = (state.engine)
            .release_hold_claimed(&who, hold, &*holds, &args.claim())
            .await;
        let (released, kept) = match claimed.map(Claimed::outcome) {
            Err(e) => return Stepped::Before(e.into()),
            Ok(Err(begin)) => return Stepped::Refused(begin),
            Ok(Ok(ran)) => ran,
        };
        Stepped::answered(answer(&state, StatusCode::OK, released).await, kept)
    };
    replay
        .run_claimed(st.hold_replays(), scope, b"", step, |k| again(again_st, k))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(seat_ids: &[&str], prices: &[i64]) -> HoldOut {
        let hold_id = HoldId::random(EventId(42));
        HoldOut {
            hold_id,
            event_id: hold_id.event,
            status: HoldState::Held,
            seat_ids: seat_ids.iter().map(|s| s.to_string()).collect(),
            prices: prices.iter().map(|&p| Money(p)).collect(),
            price_quote: Money(prices.iter().sum()),
            expires_at: Millis(1_764_000_000_123),
        }
    }

    #[test]
    fn a_holds_json_is_what_its_derived_serialize_writes() {
        for hold in [
            out(&["GA-1"], &[4_500]),
            out(
                &["A-1", "A-2", "row \"B\" \\ 7", "Älvsjö\n\u{1}"],
                &[1, -2, 0, 9_999_999_999],
            ),
            out(&[], &[]),
        ] {
            let mut written = Vec::new();
            hold.write_json(&mut written).unwrap();
            assert_eq!(
                String::from_utf8(written).unwrap(),
                serde_json::to_string(&hold).unwrap()
            );
        }
        let mut states = out(&["GA-1"], &[1]);
        states.hold_id = HoldId::random(EventId(-7));
        for status in HoldState::ALL {
            states.status = status;
            let mut written = Vec::new();
            states.write_json(&mut written).unwrap();
            assert_eq!(written, serde_json::to_vec(&states).unwrap());
        }
    }
}
