//! The door: gate devices (created and revoked by the operator), the bundle an offline
//! gate downloads, and scans, one at a time online or in batches made offline. A gate
//! authenticates with its credential as a bearer token; it acts for its own event only.

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use boxoffice_domain::attendees::NamesRefusal;
use boxoffice_domain::ticket::{BarcodeRefusal, GateBundle, MAX_BARCODE_TEXT};
use boxoffice_domain::{EventId, GateId, Millis};
use boxoffice_engine::EngineError;
use boxoffice_engine::ports::Gate;
use boxoffice_engine::tickets::{
    BatchItem, BatchOutcome, GateCreated, ScanRef, ScanVerdict, TicketRefusal,
};
use serde::{Deserialize, Serialize};

use super::route;
use crate::AppState;
use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::{BearerToken, Operator, json};
use crate::idempotency::{Replay, Scope, reply};
use crate::openapi::{Doc, Schema};
use crate::path_id::Id;
use crate::routes::{RouteClass, RouteDef};

/// Most scans in one offline batch.
pub const MAX_BATCH: usize = 500;
/// Largest scan body: a barcode and a little JSON.
const MAX_SCAN_BODY: usize = 2 * 1024;
/// Largest batch body: `MAX_BATCH` scans.
pub(crate) const MAX_BATCH_BODY: usize = MAX_BATCH * 512;
/// How far ahead of this node's clock an offline scan's time may be (gate clocks drift).
const FUTURE_SKEW_MS: i64 = 5 * 60_000;

pub(super) fn routes() -> Vec<RouteDef> {
    use RouteClass::Api;
    use axum::http::Method as M;
    vec![
        route(M::POST, "/v1/events/{id}/gates", Api, create, &CREATE_DOC),
        route(M::DELETE, "/v1/gates/{id}", Api, revoke, &REVOKE_DOC),
        route(
            M::GET,
            "/v1/events/{id}/gate-bundle",
            Api,
            bundle,
            &BUNDLE_DOC,
        ),
        route(M::POST, "/v1/events/{id}/scans", Api, scan, &SCAN_DOC),
        route(
            M::POST,
            "/v1/events/{id}/scans/batch",
            Api,
            scan_batch,
            &SCAN_BATCH_DOC,
        ),
    ]
}

/// The code of each after-sale refusal.
pub(crate) fn refusal_code(r: &TicketRefusal) -> ErrorCode {
    use ErrorCode as C;
    match r {
        TicketRefusal::GateUnknown => C::GateCredentialUnknown,
        TicketRefusal::GateRevoked => C::GateRevoked,
        TicketRefusal::GateWrongEvent => C::GateWrongEvent,
        TicketRefusal::Barcode(b) => barcode_code(*b),
        TicketRefusal::NotPaid => C::TicketRevoked,
        TicketRefusal::AlreadyScanned(_) => C::AlreadyScanned,
        TicketRefusal::KeyNotFound => C::KeyNotFound,
        TicketRefusal::CurrentKey => C::KeyCurrent,
        TicketRefusal::TooManyKeys => C::TooManyKeys,
        TicketRefusal::TransfersNotAllowed => C::TransfersNotAllowed,
        TicketRefusal::TransferWindowClosed => C::TransferWindowClosed,
        TicketRefusal::NotTransferable(_) => C::TicketNotTransferable,
        TicketRefusal::TransferPending => C::TransferPending,
        TicketRefusal::TransferEnded(_) => C::TransferNotOpen,
        TicketRefusal::TransferToSelf => C::TransferToSelf,
        TicketRefusal::TransfersExchangeOnly => C::TransfersExchangeOnly,
        TicketRefusal::AttendeeNames(NamesRefusal::Required { .. }) => C::AttendeeNamesRequired,
        TicketRefusal::AttendeeNames(NamesRefusal::WrongCount { .. }) => C::AttendeeNamesInvalid,
        TicketRefusal::AttendeeNames(NamesRefusal::NotTaken) | TicketRefusal::NamesNotTaken => {
            C::AttendeeNamesNotTaken
        }
        TicketRefusal::NameChangesNotAllowed => C::NameChangesNotAllowed,
        TicketRefusal::NameChangesClosed => C::NameChangesClosed,
        TicketRefusal::NameChangeLimit { .. } => C::NameChangeLimitReached,
        TicketRefusal::NotRenamable(_) => C::TicketNotRenamable,
        TicketRefusal::TicketChanged => C::TicketChanged,
        TicketRefusal::AlreadyCancelled => C::TicketAlreadyCancelled,
        TicketRefusal::NotCancellable(_) => C::TicketNotCancellable,
        TicketRefusal::LastTicketOfOrder => C::LastTicketOfOrder,
        TicketRefusal::TicketListed => C::TicketListed,
    }
}

fn barcode_code(b: BarcodeRefusal) -> ErrorCode {
    use BarcodeRefusal as B;
    use ErrorCode as C;
    match b {
        B::Malformed => C::BarcodeMalformed,
        B::WrongEvent => C::BarcodeWrongEvent,
        B::UnknownKey => C::BarcodeUnknownKey,
        B::BadSignature => C::BarcodeBadSignature,
        B::Revoked => C::BarcodeRevoked,
        B::CodeMissing => C::BarcodeCodeMissing,
        B::CannotCheckCode => C::BarcodeCodeUncheckable,
        B::CodeNotYetValid => C::BarcodeCodeNotYetValid,
        B::CodeExpired => C::BarcodeCodeExpired,
        B::NameMissing => C::BarcodeNameMissing,
        // A bundle's verdict; online, the check-in answers `already_scanned` itself.
        B::AlreadyAdmitted => C::AlreadyScanned,
    }
}

/// What a route answers when its gate credential is missing or refused.
const GATE_REFUSES: &[ErrorCode] = &[
    ErrorCode::MissingToken,
    ErrorCode::GateCredentialUnknown,
    ErrorCode::GateRevoked,
    ErrorCode::GateWrongEvent,
    ErrorCode::EventNotFound,
    ErrorCode::Unavailable,
    ErrorCode::Internal,
];

/// What a scan may be refused with, online or (per item) in a batch.
const SCAN_REFUSES: &[ErrorCode] = &[
    ErrorCode::BarcodeMalformed,
    ErrorCode::BarcodeWrongEvent,
    ErrorCode::BarcodeUnknownKey,
    ErrorCode::BarcodeBadSignature,
    ErrorCode::BarcodeRevoked,
    ErrorCode::BarcodeCodeMissing,
    ErrorCode::BarcodeCodeUncheckable,
    ErrorCode::BarcodeCodeNotYetValid,
    ErrorCode::BarcodeCodeExpired,
    ErrorCode::BarcodeNameMissing,
    ErrorCode::TicketNotFound,
    ErrorCode::TicketRevoked,
    ErrorCode::AlreadyScanned,
];

async fn gate(st: &AppState, token: &BearerToken, event: EventId) -> Result<Gate, ApiError> {
    Ok(st.engine.gate_for(token.get()?, event).await?)
}

/// The gate the credential names, then the request's body, read only for a gate of the
/// event and only up to `limit` bytes: a caller the ledger does not know is refused
/// before a byte of its body is kept.
async fn gate_then_body(
    st: &AppState,
    token: &BearerToken,
    event: EventId,
    body: Body,
    limit: usize,
) -> Result<(Gate, Bytes), ApiError> {
    let gate = gate(st, token, event).await?;
    let body = axum::body::to_bytes(body, limit).await.map_err(|e| {
        if e.into_inner().is::<http_body_util::LengthLimitError>() {
            too_large(&format!("a body over {limit} bytes"))
        } else {
            ApiError::new(ErrorCode::InvalidBody, "the request body could not be read")
        }
    })?;
    Ok((gate, body))
}

/// A new gate device.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = GateRequest)]
struct CreateBody {
    #[schema(min_length = 1, max_length = 64)]
    name: String,
}

pub(crate) const CREATE_DOC: Doc = Doc {
    op: "createGate",
    body: Some(Schema::of::<CreateBody>()),
    ok: &[(StatusCode::CREATED, Schema::of::<GateCreated>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::EventNotFound,
            C::InvalidBody,
            C::InvalidRequest,
            C::MalformedJson,
        ]
    },
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::OPERATOR_REFUSES,
        crate::extract::BODY_REFUSES,
    ],
};

/// The first answer carries the credential; the replay store keeps the answer without
/// it, so a retry gets the gate and no credential (revoke it and make another if the
/// first answer was lost).
pub async fn create(
    State(st): State<AppState>,
    _: Operator,
    replay: Replay,
    Id(event): Id<EventId>,
    body: Bytes,
) -> Response {
    let input: CreateBody = match json(&body) {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let shown = std::sync::Arc::new(parking_lot::Mutex::new(None::<String>));
    let (engine, key, kept) = (st.engine.clone(), replay.key().0.clone(), shown.clone());
    let res = replay
        .run(st.replays(), Scope::Operator, &body, async move {
            let mut created = engine.create_gate(event, &input.name, &key).await?;
            *kept.lock() = created.credential.take();
            reply(StatusCode::CREATED, &created)
        })
        .await;
    let credential = shown.lock().take();
    match credential {
        Some(c) => with_credential(res, c).await,
        None => res,
    }
}

/// The response with `credential` set in its JSON body.
async fn with_credential(res: Response, credential: String) -> Response {
    let (mut parts, body) = res.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 64 * 1024).await else {
        return ApiError::from(EngineError::Internal("gate answer unreadable".into()))
            .into_response();
    };
    let mut value: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    value["credential"] = serde_json::Value::String(credential);
    let out = serde_json::to_vec(&value).unwrap_or_default();
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(out))
}

pub(crate) const REVOKE_DOC: Doc = Doc {
    op: "revokeGate",
    body: None,
    ok: &[(StatusCode::OK, Schema::of::<GateCreated>())],
    refuses: &[ErrorCode::GateNotFound],
    shared: &[
        crate::idempotency::REFUSES,
        crate::extract::OPERATOR_REFUSES,
    ],
};

pub async fn revoke(
    State(st): State<AppState>,
    _: Operator,
    replay: Replay,
    Id(id): Id<GateId>,
) -> Response {
    let engine = st.engine.clone();
    replay
        .run(st.replays(), Scope::Operator, b"", async move {
            reply(StatusCode::OK, &engine.revoke_gate(id).await?)
        })
        .await
}

pub(crate) const BUNDLE_DOC: Doc = Doc {
    op: "getGateBundle",
    body: None,
    ok: &[],
    refuses: &[],
    shared: &[GATE_REFUSES],
};

/// The bundle carries the rotation secret when barcodes rotate: never cached.
pub async fn bundle(
    State(st): State<AppState>,
    token: BearerToken,
    Id(event): Id<EventId>,
) -> Result<Response, ApiError> {
    let gate = gate(&st, &token, event).await?;
    let bundle: GateBundle = st.engine.gate_bundle(&gate).await?;
    let mut res = Json(bundle).into_response();
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(res)
}

/// A barcode scanned online.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ScanRequest)]
struct ScanBody {
    /// The QR code's text.
    #[schema(max_length = 538)]
    barcode: String,
}

pub(crate) const SCAN_DOC: Doc = Doc {
    op: "scanTicket",
    body: Some(Schema::of::<ScanBody>()),
    ok: &[(StatusCode::OK, Schema::of::<ScanVerdict>())],
    refuses: {
        use ErrorCode as C;
        &[C::InvalidBody, C::MalformedJson, C::PayloadTooLarge]
    },
    shared: &[crate::idempotency::REFUSES, GATE_REFUSES, SCAN_REFUSES],
};

/// `already_scanned` names the gate and time of the admitting scan beside the code.
#[derive(Serialize)]
struct AlreadyScanned {
    error: ErrorCode,
    message: String,
    first_scan: ScanRef,
}

pub async fn scan(
    State(st): State<AppState>,
    Id(event): Id<EventId>,
    token: BearerToken,
    replay: Replay,
    body: Body,
) -> Response {
    let prepared = async {
        let (gate, body) = gate_then_body(&st, &token, event, body, MAX_SCAN_BODY).await?;
        let input: ScanBody = json(&body)?;
        if input.barcode.len() > MAX_BARCODE_TEXT * 2 {
            return Err(ApiError::new(
                ErrorCode::BarcodeMalformed,
                BarcodeRefusal::Malformed.to_string(),
            ));
        }
        Ok((gate, input, body))
    };
    let (gate, input, body) = match prepared.await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let engine = st.engine.clone();
    let scope = Scope::Gate(gate.id);
    replay
        .run(st.replays(), scope, &body, async move {
            match engine.scan(&gate, &input.barcode).await {
                Ok(verdict) => reply(StatusCode::OK, &verdict),
                Err(EngineError::Ticket(TicketRefusal::AlreadyScanned(first))) => {
                    let message = TicketRefusal::AlreadyScanned(first.clone()).to_string();
                    let out = AlreadyScanned {
                        error: ErrorCode::AlreadyScanned,
                        message,
                        first_scan: first.into(),
                    };
                    reply(StatusCode::CONFLICT, &out)
                }
                Err(e) => Err(e.into()),
            }
        })
        .await
}

fn too_large(what: &str) -> ApiError {
    ApiError::new(ErrorCode::PayloadTooLarge, format!("{what} is too large"))
}

/// Scans made offline, uploaded together.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ScanBatchRequest)]
struct BatchBody {
    #[schema(min_items = 1, max_items = 500)]
    scans: Vec<BatchScan>,
}

/// One offline scan: the barcode and when the gate read it.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct BatchScan {
    barcode: String,
    scanned_at: Millis,
}

/// One item's result, in the order sent.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ScanBatchItem)]
struct BatchResult {
    /// The item's place in the batch, from 0.
    index: usize,
    #[schema(schema_with = batch_outcome)]
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ticket_id: Option<boxoffice_domain::ticket::TicketId>,
    /// `already_scanned`: the scan that admitted the ticket.
    #[serde(skip_serializing_if = "Option::is_none")]
    first_scan: Option<ScanRef>,
    /// `admitted`: a later scan recorded before this one, which this one displaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    replaced: Option<ScanRef>,
    /// `refused`: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorCode>,
}

/// `BatchResult::outcome`.
fn batch_outcome() -> utoipa::openapi::schema::ObjectBuilder {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    (ObjectBuilder::new().schema_type(Type::String)).enum_values(Some([
        "admitted",
        "already_scanned",
        "refused",
    ]))
}

/// Each scan's result, in the order sent.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ScanBatchResult)]
struct BatchAnswer {
    results: Vec<BatchResult>,
}

pub(crate) const SCAN_BATCH_DOC: Doc = Doc {
    op: "scanBatch",
    body: Some(Schema::of::<BatchBody>()),
    ok: &[(StatusCode::OK, Schema::of::<BatchAnswer>())],
    refuses: {
        use ErrorCode as C;
        &[
            C::InvalidBody,
            C::InvalidRequest,
            C::MalformedJson,
            C::PayloadTooLarge,
        ]
    },
    shared: &[crate::idempotency::REFUSES, GATE_REFUSES],
};

pub async fn scan_batch(
    State(st): State<AppState>,
    Id(event): Id<EventId>,
    token: BearerToken,
    replay: Replay,
    body: Body,
) -> Response {
    let now = st.engine.now();
    let prepared = async {
        let (gate, body) = gate_then_body(&st, &token, event, body, MAX_BATCH_BODY).await?;
        let input: BatchBody = json(&body)?;
        check_batch(&input, now)?;
        Ok::<_, ApiError>((gate, input, body))
    };
    let (gate, input, body) = match prepared.await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let items: Vec<BatchItem> = (input.scans.into_iter())
        .map(|s| BatchItem {
            barcode: s.barcode,
            scanned_at: s.scanned_at,
        })
        .collect();
    let engine = st.engine.clone();
    replay
        .run(st.replays(), Scope::Gate(gate.id), &body, async move {
            let outcomes = engine.scan_batch(&gate, &items).await?;
            let results = outcomes.into_iter().enumerate().map(result).collect();
            reply(StatusCode::OK, &BatchAnswer { results })
        })
        .await
}

fn check_batch(input: &BatchBody, now: Millis) -> Result<(), ApiError> {
    let invalid = |m: String| ApiError::new(ErrorCode::InvalidRequest, m);
    if input.scans.is_empty() || input.scans.len() > MAX_BATCH {
        return Err(invalid(format!("a batch holds 1-{MAX_BATCH} scans")));
    }
    let late = Millis(now.0.saturating_add(FUTURE_SKEW_MS));
    if let Some(i) = input
        .scans
        .iter()
        .position(|s| s.scanned_at > late || s.scanned_at.0 < 0)
    {
        return Err(invalid(format!(
            "scan {i} is dated in the future (or before 1970); check the gate's clock"
        )));
    }
    Ok(())
}

fn result((index, outcome): (usize, BatchOutcome)) -> BatchResult {
    let mut r = BatchResult {
        index,
        outcome: "admitted",
        ticket_id: None,
        first_scan: None,
        replaced: None,
        error: None,
    };
    match outcome {
        BatchOutcome::Admitted {
            ticket_id,
            replaced,
        } => {
            r.ticket_id = Some(ticket_id);
            r.replaced = replaced;
        }
        BatchOutcome::AlreadyScanned { ticket_id, first } => {
            r.outcome = "already_scanned";
            r.ticket_id = Some(ticket_id);
            r.first_scan = Some(first);
        }
        BatchOutcome::Refused(e) => {
            r.outcome = "refused";
            r.error = Some(ApiError::from(e).code);
        }
    }
    r
}
