//! Replays for retried writes (P4). The first request with a key runs and its response
//! is kept; a retry with the same key and body gets that response again, with the same
//! key and another body gets 422, and while the first is still running gets 409. A claim
//! left by a process that died is taken over at once (see `Claimant`), and a replay
//! store too full of running requests to take another key answers 503.
//!
//! A handler takes the `Replay` extractor, which reads the key, method and path from the
//! request itself; the handler names only whose key it is (`Scope`) and the work. The
//! work outlives the request: a request abandoned by its client or cut off by the
//! request deadline still finishes and records its answer (in a task of its own, see
//! `Detached`), so the retry replays it instead of waiting for the claim's lease to lapse.

use std::borrow::Cow;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use boxoffice_domain::BuyerId;
use boxoffice_engine::EngineError;
use boxoffice_engine::ports::{
    Begin, Claimant, IdempotencyStore, KeptOutcome, KnownWrite, Lease, ReplayClaim, ReplayKey,
    StoredResponse,
};
use futures::FutureExt;
use serde::Serialize;
use tracing::Instrument;

use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::IdempotencyKey;

/// What a write behind the replay store may answer besides its own refusals.
pub(crate) const REFUSES: &[ErrorCode] = &[
    ErrorCode::IdempotencyKeyRequired,
    ErrorCode::IdempotencyKeyReused,
    ErrorCode::RequestInProgress,
    ErrorCode::IdempotencyStoreFull,
    ErrorCode::Unavailable,
    ErrorCode::Internal,
];

/// A handler's result before it becomes a response: a status and a JSON body.
pub type Reply = Result<(StatusCode, Vec<u8>), ApiError>;

pub fn reply<T: Serialize>(status: StatusCode, value: &T) -> Reply {
    reply_with(status, |body| serde_json::to_writer(body, value))
}

/// `reply` with the body written by `write`, for an answer written without `Serialize`.
pub fn reply_with<F>(status: StatusCode, write: F) -> Reply
where
    F: FnOnce(&mut Vec<u8>) -> serde_json::Result<()>,
{
    // Room for a typical answer (a hold's is about 200 bytes) from the start, rather
    // than growing from nothing and copying it at each doubling.
    let mut body = Vec::with_capacity(REPLY_CAPACITY);
    write(&mut body)
        .map(|()| (status, body))
        .map_err(|e| ApiError::from(EngineError::Internal(e.to_string())))
}

/// The first allocation of an answer's body.
const REPLY_CAPACITY: usize = 512;

/// Whose keys a key is among: a buyer's, the operator's, or the one shared namespace of
/// keys that are secrets themselves (buyer creation).
pub enum Scope {
    Buyer(BuyerId),
    Operator,
    Secrets,
    /// A gate device's scans.
    Gate(boxoffice_domain::GateId),
}

impl Scope {
    fn name(&self) -> Cow<'static, str> {
        match self {
            Scope::Buyer(b) => Cow::Owned(tagged("buyer:", &b.0)),
            Scope::Operator => Cow::Borrowed("operator"),
            Scope::Secrets => Cow::Borrowed("buyers"),
            Scope::Gate(g) => Cow::Owned(tagged("gate:", &g.0)),
        }
    }
}

/// `tag` and the id's hyphenated text (as the id displays), written without the
/// formatter's machinery: every write names its scope.
fn tagged(tag: &str, id: &uuid::Uuid) -> String {
    let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
    let id = id.hyphenated().encode_lower(&mut text);
    let mut name = String::with_capacity(tag.len() + id.len());
    name.push_str(tag);
    name.push_str(id);
    name
}

/// A write's Idempotency-Key and what identifies the request it was sent with: its
/// method and path, which the body completes.
pub struct Replay {
    key: IdempotencyKey,
    method: Method,
    path: String,
}

impl<S: Send + Sync> FromRequestParts<S> for Replay {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        Replay::of(parts)
    }
}

impl Replay {
    pub(crate) fn of(parts: &Parts) -> Result<Replay, ApiError> {
        Ok(Replay {
            key: IdempotencyKey::of(&parts.headers)?,
            method: parts.method.clone(),
            path: parts.uri.path().to_owned(),
        })
    }
}

/// Where a write's claim is kept while it runs and its answer afterwards.
pub struct Store<'a> {
    pub replays: &'a Arc<dyn IdempotencyStore>,
    /// This process, and how long its claims block retries.
    pub claimant: Claimant,
    pub now: boxoffice_domain::Millis,
}

impl Replay {
    pub fn key(&self) -> &IdempotencyKey {
        &self.key
    }

    /// The same request, kept under another key (a digest of a secret key).
    pub fn rekey(self, key: IdempotencyKey) -> Replay {
        Replay { key, ..self }
    }

    /// What a retry must send again: method, NUL, path, NUL, body.
    fn parts<'a>(&'a self, body: &'a [u8]) -> [&'a [u8]; 5] {
        [
            self.method.as_str().as_bytes(),
            b"\0",
            self.path.as_bytes(),
            b"\0",
            body,
        ]
    }

    /// The request's fingerprint, as `replays` takes it (`IdempotencyStore::fingerprint`).
    fn fingerprint(&self, replays: &dyn IdempotencyStore, body: &[u8]) -> [u8; 32] {
        replays.fingerprint(&self.parts(body))
    }

    /// Runs `work` once per key and scope, and answers retries from the store.
    pub async fn run<F>(self, store: Store<'_>, scope: Scope, body: &[u8], work: F) -> Response
    where
        F: Future<Output = Reply> + Send + 'static,
    {
        let fingerprint = self.fingerprint(&**store.replays, body);
        let key = ReplayKey::new(scope.name(), self.key.0);
        Self::run_keyed(store, key, fingerprint, work).await
    }

    /// Runs a write whose answer is known before it runs (`answer`, a success) with its
    /// key's claim and the answer's keeping in one write of the replay store, where the
    /// store keeps its records in the ledger's own database
    /// (`IdempotencyStore::write_claimed`): one write instead of three. Elsewhere the
    /// write runs as `run` runs work: `fallback` makes the same write by itself, and
    /// `answer` follows it. Either way the answers to retries are `run`'s.
    pub async fn run_known<F>(
        self,
        store: Store<'_>,
        scope: Scope,
        body: &[u8],
        write: KnownWrite,
        answer: (StatusCode, Vec<u8>),
        fallback: F,
    ) -> Response
    where
        F: Future<Output = Result<(), ApiError>> + Send + 'static,
    {
        let fingerprint = self.fingerprint(&**store.replays, body);
        let key = ReplayKey::new(scope.name(), self.key.0);
        let (status, body) = answer;
        let kept = StoredResponse {
            status: status.as_u16(),
            body,
        };
        let claimant = &store.claimant;
        let written = (store.replays)
            .write_claimed(&key, &fingerprint, store.now, claimant, write, &kept)
            .await;
        match written {
            Ok(Some(Begin::Proceed)) => respond(status, kept.body, false),
            Ok(Some(refusal)) => refused(refusal),
            Err(e) => ApiError::from(EngineError::from(e)).into_response(),
            Ok(None) => {
                let work = async move {
                    fallback.await?;
                    Ok((status, kept.body))
                };
                Self::run_keyed(store, key, fingerprint, work).await
            }
        }
    }

    /// As `run`, for work that may keep its own answer in its last ledger write (a
    /// confirmed checkout: `boxoffice_engine::KeepConfirmed`). Once the key is claimed,
    /// `work` is given the replay store and the key it claimed, and answers its reply
    /// and whether the store kept that reply as the key's answer already: a kept reply
    /// is sent as it is, not kept again (one write fewer); any other is kept as `run`
    /// keeps it. Either way the request waits for the keeping, and retries are
    /// answered as `run` answers them.
    pub async fn run_self_keeping<F, Fut>(
        self,
        store: Store<'_>,
        scope: Scope,
        body: &[u8],
        work: F,
    ) -> Response
    where
        F: FnOnce(Arc<dyn IdempotencyStore>, Arc<ReplayKey>, Lease) -> Fut,
        Fut: Future<Output = (Reply, bool)> + Send + 'static,
    {
        let fingerprint = self.fingerprint(&**store.replays, body);
        let key = Arc::new(ReplayKey::new(scope.name(), self.key.0));
        let begun = (store.replays)
            .begin(&key, &fingerprint, store.now, &store.claimant)
            .await;
        match begun {
            Ok(Begin::Proceed) => {}
            Ok(other) => return refused(other),
            Err(e) => return ApiError::from(EngineError::from(e)).into_response(),
        }
        let lease = store.claimant.lease_from(store.now);
        let claim = Claim {
            replays: store.replays.clone(),
            key: key.clone(),
            lease,
        };
        let work = work(store.replays.clone(), key, lease);
        let task = async move {
            match AssertUnwindSafe(work).catch_unwind().await {
                Ok((reply, true)) => answered(reply),
                Ok((reply, false)) => claim.finish(reply).await,
                // A panic may have come after the claim: free the key, as `run` does.
                Err(_) => {
                    let e = EngineError::Internal("the request's work panicked".into());
                    claim.finish(Err(ApiError::from(e))).await
                }
            }
        };
        Detached::new(task).await
    }

    async fn run_keyed<F>(
        store: Store<'_>,
        key: ReplayKey,
        fingerprint: [u8; 32],
        work: F,
    ) -> Response
    where
        F: Future<Output = Reply> + Send + 'static,
    {
        let begun = (store.replays)
            .begin(&key, &fingerprint, store.now, &store.claimant)
            .await;
        let begin = match begun {
            Err(e) => return ApiError::from(EngineError::from(e)).into_response(),
            Ok(Begin::Proceed) => {
                let claim = Claim {
                    replays: store.replays.clone(),
                    key: Arc::new(key),
                    lease: store.claimant.lease_from(store.now),
                };
                return claim.run_detached(work).await;
            }
            Ok(other) => other,
        };
        refused(begin)
    }

    /// Runs a write whose step takes the key's claim itself, in the same call to the
    /// store as the write (a hold: `ClaimedHolds`), so the claim costs no round trip of
    /// its own. The answers are `run`'s: the step reports the claim's answer
    /// (`Stepped::Refused`) or its work's (`Stepped::Ran`), which is kept as `run` keeps
    /// it, except that the request does not wait for the store to confirm the keeping
    /// (see `Claim::keep_unwaited`). A refusal found before the step asked for the
    /// claim (`Stepped::Before`) is kept through an ordinary claim, as `run` would keep
    /// it, so a retry replays it. A store that kept the work's outcome itself in the
    /// step (`Stepped::Kept`) costs no second call at all: a retry then finds the
    /// outcome in the store's terms (`Begin::Kept`), which `render` answers again as the
    /// step answered it.
    ///
    /// A plain function returning the work to await: the claim's arguments are made
    /// here, so the caller's future holds the detached work alone while it runs, not
    /// also this call's arguments.
    pub(crate) fn run_claimed<F, Fut, R, RFut>(
        self,
        store: Store<'_>,
        scope: Scope,
        body: &[u8],
        step: F,
        render: R,
    ) -> Detached
    where
        F: FnOnce(ClaimArgs) -> Fut,
        Fut: Future<Output = Stepped> + Send + 'static,
        R: FnOnce(KeptOutcome) -> RFut + Send + 'static,
        RFut: Future<Output = Reply> + Send + 'static,
    {
        let fingerprint = self.fingerprint(&**store.replays, body);
        // The key's digest is taken here, once, for the claim and for the answer's keeping.
        let key = Arc::new(ReplayKey::new(scope.name(), self.key.0));
        let args = ClaimArgs {
            key: key.clone(),
            fingerprint,
            now: store.now,
            claimant: store.claimant,
        };
        let claim = Claim {
            replays: store.replays.clone(),
            key,
            lease: store.claimant.lease_from(store.now),
        };
        let (now, claimant) = (args.now, args.claimant);
        let work = ClaimedWork {
            step: AssertUnwindSafe(step(args)).catch_unwind(),
            rest: Some(AfterStep {
                claim,
                fingerprint,
                now,
                claimant,
                render,
            }),
            after: None,
        };
        Detached::new(work)
    }
}

pin_project_lite::pin_project! {
    /// `run_claimed`'s work: the step, then what its answer asks for. A future of its
    /// own rather than an `async` block: a block keeps the step it captured beside the
    /// step it awaits, twice the step's size in the box every write's work is moved
    /// into, and so copied and written for every hold.
    struct ClaimedWork<W, R> {
        #[pin]
        step: futures::future::CatchUnwind<AssertUnwindSafe<W>>,
        // What the answer needs once the step is done; taken then.
        rest: Option<AfterStep<R>>,
        // The answers of a retry or a refusal are boxed: they are rare, and their
        // futures (the store's calls, the render) would otherwise set the size of
        // every write's work, which is copied into its box.
        after: Option<Pin<Box<dyn Future<Output = Response> + Send>>>,
    }
}

struct AfterStep<R> {
    claim: Claim,
    fingerprint: [u8; 32],
    now: boxoffice_domain::Millis,
    claimant: Claimant,
    render: R,
}

impl<W, R, RFut> Future for ClaimedWork<W, R>
where
    W: Future<Output = Stepped>,
    R: FnOnce(KeptOutcome) -> RFut + Send + 'static,
    RFut: Future<Output = Reply> + Send + 'static,
{
    type Output = Response;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        let this = self.project();
        if let Some(after) = this.after.as_mut() {
            return after.as_mut().poll(cx);
        }
        if this.rest.is_none() {
            return Poll::Ready(polled_after_answer());
        }
        let stepped = ready!(this.step.poll(cx));
        let AfterStep {
            claim,
            fingerprint,
            now,
            claimant,
            render,
        } = this.rest.take().expect("checked above");
        // A panic may have come after the claim: free the key, as `run` does.
        let stepped = stepped.unwrap_or_else(|_| {
            Stepped::Ran(Err(ApiError::from(EngineError::Internal(
                "the request's work panicked".into(),
            ))))
        });
        let after: Pin<Box<dyn Future<Output = Response> + Send>> = match stepped {
            Stepped::Ran(reply) => return Poll::Ready(claim.finish_unwaited(reply)),
            Stepped::Kept(reply) => return Poll::Ready(answered(reply)),
            Stepped::Refused(begin) => Box::pin(replayed_or_refused(begin, render)),
            Stepped::Before(e) => Box::pin(async move {
                let begun = (claim.replays)
                    .begin(&claim.key, &fingerprint, now, &claimant)
                    .await;
                match begun {
                    Err(e) => ApiError::from(EngineError::from(e)).into_response(),
                    Ok(Begin::Proceed) => claim.finish(Err(e)).await,
                    Ok(other) => replayed_or_refused(other, render).await,
                }
            }),
        };
        this.after.insert(after).as_mut().poll(cx)
    }
}

fn polled_after_answer() -> Response {
    ApiError::from(EngineError::Internal("polled after its answer".into())).into_response()
}

/// The claim a `run_claimed` step asks for, owned so the step may outlive the request.
pub struct ClaimArgs {
    pub key: Arc<ReplayKey>,
    pub fingerprint: [u8; 32],
    pub now: boxoffice_domain::Millis,
    pub claimant: Claimant,
}

impl ClaimArgs {
    pub fn claim(&self) -> ReplayClaim<'_> {
        ReplayClaim {
            key: &self.key,
            fingerprint: &self.fingerprint,
            now: self.now,
            claimant: &self.claimant,
        }
    }
}

/// What a `run_claimed` step answered.
pub enum Stepped {
    /// Refused before the claim was granted: a check before the step, or the step's
    /// store failed (whether its claim was taken is unknown, so the ordinary claim
    /// that keeps this refusal finds out: a claim taken by the failed call answers
    /// "in flight" until its lease lapses, as after a failed `begin`).
    Before(ApiError),
    /// The claim was not granted (never `Begin::Proceed`): the step did not run.
    Refused(Begin),
    /// The claim was granted and the work answered this.
    Ran(Reply),
    /// The claim was granted, the work answered this, and the store kept the work's
    /// outcome as the key's answer in the same step (`Claimed::Kept`): nothing is left
    /// to keep, and a retry is answered by `run_claimed`'s `render` from that outcome.
    Kept(Reply),
}

impl Stepped {
    /// The work's answer, kept by the store already (`kept`) or to be kept.
    pub fn answered(reply: Reply, kept: bool) -> Stepped {
        if kept {
            Stepped::Kept(reply)
        } else {
            Stepped::Ran(reply)
        }
    }
}

/// The answer to a first request whose answer needs no keeping.
fn answered(reply: Reply) -> Response {
    match reply {
        Ok((status, body)) => respond(status, body, false),
        Err(e) => e.into_response(),
    }
}

/// A claim that was not granted: a kept outcome is answered again by `render` (as the
/// first request was answered), anything else as `refused` answers it.
async fn replayed_or_refused<R, RFut>(begin: Begin, render: R) -> Response
where
    R: FnOnce(KeptOutcome) -> RFut,
    RFut: Future<Output = Reply>,
{
    match begin {
        Begin::Kept(outcome) => match render(*outcome).await {
            Ok((status, body)) => respond(status, body, true),
            Err(e) => respond(e.status, e.body(), true),
        },
        other => refused(other),
    }
}

/// The answer to a claim that was not granted (`Begin::Proceed` is never passed here).
fn refused(begin: Begin) -> Response {
    match begin {
        Begin::Replay(r) => respond(
            StatusCode::from_u16(r.status).unwrap_or(StatusCode::OK),
            r.body,
            true,
        ),
        Begin::Mismatch => ApiError::new(
            ErrorCode::IdempotencyKeyReused,
            "this Idempotency-Key was already used for a different request",
        )
        .into_response(),
        Begin::InFlight => ApiError::new(
            ErrorCode::RequestInProgress,
            "a request with this Idempotency-Key is still running; retry shortly",
        )
        .into_response(),
        Begin::Full => ApiError::new(
            ErrorCode::IdempotencyStoreFull,
            "too many requests are running to remember another Idempotency-Key; retry shortly",
        )
        .into_response(),
        Begin::Proceed => ApiError::from(EngineError::Internal(
            "a granted claim was answered as refused".into(),
        ))
        .into_response(),
        // Only a claimed step keeps its outcome itself, and `run_claimed` answers it.
        Begin::Kept(_) => ApiError::from(EngineError::Internal(
            "an answer kept by a claimed step was asked for by another write".into(),
        ))
        .into_response(),
    }
}

/// A key claimed by this request: it is finished with the answer, or abandoned, while
/// the claim that took `lease` holds it (`IdempotencyStore::finish`).
struct Claim {
    replays: Arc<dyn IdempotencyStore>,
    key: Arc<ReplayKey>,
    lease: Lease,
}

impl Claim {
    /// Runs the work and records its answer. The work runs in the request's own task,
    /// and goes on in a task of its own only if the request is dropped first (the client
    /// left, or the deadline passed): see `Detached`.
    async fn run_detached<F>(self, work: F) -> Response
    where
        F: Future<Output = Reply> + Send + 'static,
    {
        let task = async move {
            let reply = AssertUnwindSafe(work).catch_unwind().await;
            let reply = reply.unwrap_or_else(|_| {
                Err(ApiError::from(EngineError::Internal(
                    "the request's work panicked".into(),
                )))
            });
            self.finish(reply).await
        };
        Detached::new(task).await
    }

    /// Records the answer (or, for a failure of ours, frees the key) and sends it.
    async fn finish(self, reply: Reply) -> Response {
        match reply {
            Ok((status, body)) => {
                let body = self.keep(status, body).await;
                respond(status, body, false)
            }
            Err(e) => {
                self.keep(e.status, e.body()).await;
                e.into_response()
            }
        }
    }

    /// As `finish`, but the request does not wait for the store to confirm: the
    /// store's command is handed over before the answer is sent (to its connection in
    /// Redis, so a retry through the same connection finds the answer kept; to the
    /// writer's queue in the ledger, where a retry's claim finds it kept or still
    /// running), and its reply is read by a task of its own. A failure is logged, as
    /// `finish` logs it.
    fn finish_unwaited(self, reply: Reply) -> Response {
        let (status, body, error) = match reply {
            Ok((status, body)) => (status, body, None),
            Err(e) => (e.status, e.body(), Some(e)),
        };
        let answer = match &error {
            None => Some(body.clone()),
            Some(_) => None,
        };
        let keeping = self.keep(status, body);
        let mut keeping: Pin<Box<dyn Future<Output = Vec<u8>> + Send>> = Box::pin(keeping);
        if keeping.as_mut().now_or_never().is_none() {
            drop(tokio::spawn(keeping.in_current_span()));
        }
        match (error, answer) {
            (Some(e), _) => e.into_response(),
            (None, answer) => respond(status, answer.unwrap_or_default(), false),
        }
    }

    async fn keep(self, status: StatusCode, body: Vec<u8>) -> Vec<u8> {
        // A failure of ours, or a "not now" (429), changed nothing the client can rely
        // on: let a retry run again.
        if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
            let outcome = self.replays.abandon(&self.key, self.lease).await;
            return Self::logged(outcome, body);
        }
        let kept = StoredResponse {
            status: status.as_u16(),
            body,
        };
        let outcome = self.replays.finish(&self.key, self.lease, &kept).await;
        Self::logged(outcome, kept.body)
    }

    fn logged<T>(outcome: Result<(), boxoffice_engine::ports::StoreError>, answer: T) -> T {
        if let Err(e) = outcome {
            tracing::warn!(error = %e, "could not record the idempotent response");
        }
        answer
    }
}

/// A write's work, polled by the request; if the request is dropped before the work is
/// done, what is left of it is handed to a task of its own, which finishes it and records
/// the answer for the retry. Spawning every write instead would cost a task, a move of
/// the whole future into it and a wake-up across threads for each request, while nearly
/// every request finishes where it started. The work is boxed, so what is left of it can
/// be moved to the task at any point. Polled by the request, the work runs in the
/// request's span, which the request's own future has entered; only a task it is handed
/// to is given that span (instrumenting every write's work would move it once more and
/// enter the span twice on every poll).
pub(crate) struct Detached {
    work: Option<Pin<Box<dyn Future<Output = Response> + Send>>>,
    span: tracing::Span,
}

impl Detached {
    fn new(work: impl Future<Output = Response> + Send + 'static) -> Self {
        Detached {
            work: Some(Box::pin(work)),
            span: tracing::Span::current(),
        }
    }
}

impl Future for Detached {
    type Output = Response;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        let Some(work) = self.work.as_mut() else {
            return Poll::Ready(polled_after_answer());
        };
        let answer = ready!(work.as_mut().poll(cx));
        self.work = None;
        Poll::Ready(answer)
    }
}

impl Drop for Detached {
    fn drop(&mut self) {
        let Some(work) = self.work.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn(work.instrument(self.span.clone()))),
            Err(_) => tracing::warn!("a write was dropped outside the runtime, unfinished"),
        }
    }
}

pub fn respond(status: StatusCode, body: Vec<u8>, replayed: bool) -> Response {
    // Built directly: a body turned into a response is first labelled
    // application/octet-stream, a header written only to be overwritten.
    let mut res = Response::new(axum::body::Body::from(body));
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if replayed {
        res.headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    if status == StatusCode::SERVICE_UNAVAILABLE {
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    res
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::http::Request;
    use boxoffice_domain::Millis;
    use boxoffice_engine::ports::Incarnation;
    use boxoffice_store_memory::MemoryIdempotency;
    use boxoffice_testkit::deadline::eventually;
    use tokio::sync::oneshot;

    use super::*;

    fn claimant() -> Claimant {
        Claimant {
            node: Incarnation::random(),
            lease_ms: 60_000,
            dead_after_ms: 30_000,
        }
    }

    /// The replay store as a route sees it, at a fixed time.
    fn at_1000(replays: &Arc<dyn IdempotencyStore>, claimant: Claimant) -> Store<'_> {
        Store {
            replays,
            claimant,
            now: Millis(1_000),
        }
    }

    async fn replay(key: &str) -> Replay {
        let req = Request::post("/v1/events/7/open")
            .header("idempotency-key", key)
            .body(())
            .unwrap();
        let (mut parts, ()) = req.into_parts();
        Replay::from_request_parts(&mut parts, &()).await.unwrap()
    }

    async fn send(
        replays: &Arc<dyn IdempotencyStore>,
        claimant: Claimant,
        work: impl Future<Output = Reply> + Send + 'static,
    ) -> Response {
        let store = at_1000(replays, claimant);
        replay("k-1")
            .await
            .run(store, Scope::Operator, b"{}", work)
            .await
    }

    async fn body(res: Response) -> Vec<u8> {
        axum::body::to_bytes(res.into_body(), 1 << 16)
            .await
            .unwrap()
            .to_vec()
    }

    #[test]
    fn a_scope_is_named_as_before() {
        let buyer = BuyerId::random();
        let gate = boxoffice_domain::GateId::random();
        assert_eq!(Scope::Buyer(buyer).name(), format!("buyer:{buyer}"));
        assert_eq!(Scope::Gate(gate).name(), format!("gate:{gate}"));
        assert_eq!(Scope::Operator.name(), "operator");
        assert_eq!(Scope::Secrets.name(), "buyers");
    }

    #[tokio::test]
    async fn the_fingerprint_is_the_digest_of_method_path_and_body_as_stored_before() {
        use sha2::{Digest, Sha256};
        let expected: [u8; 32] = Sha256::digest(b"POST\0/v1/events/7/open\0{}").into();
        let parts = replay("k").await.parts(b"{}").concat();
        assert_eq!(parts, b"POST\0/v1/events/7/open\0{}");
        let sha = boxoffice_engine::ports::fingerprint(&replay("k").await.parts(b"{}"));
        assert_eq!(sha, expected);
    }

    #[tokio::test]
    async fn the_fingerprint_is_the_stores_own() {
        let memory = MemoryIdempotency::new();
        let replay = replay("k").await;
        let parts = replay.parts(b"{}");
        assert_eq!(
            replay.fingerprint(&memory, b"{}"),
            memory.fingerprint(&parts)
        );
        assert_ne!(
            replay.fingerprint(&memory, b"{}"),
            replay.fingerprint(&memory, b"{ }")
        );
    }

    #[tokio::test]
    async fn a_write_whose_request_was_dropped_still_records_its_answer_for_the_retry() {
        let replays: Arc<dyn IdempotencyStore> = Arc::new(MemoryIdempotency::new());
        let claimant = claimant();
        let (release, released) = oneshot::channel::<()>();
        let (done, finished) = oneshot::channel::<()>();
        let work = async move {
            let _ = released.await;
            let _ = done.send(());
            Ok((StatusCode::CREATED, b"{\"made\":1}".to_vec()))
        };
        // The request is cut off (deadline, client gone) while its work runs.
        let cut = tokio::time::timeout(Duration::from_millis(20), send(&replays, claimant, work));
        assert!(cut.await.is_err(), "the work was still waiting");
        let res = send(&replays, claimant, async { unreachable!("ran twice") }).await;
        assert_eq!(res.status(), StatusCode::CONFLICT, "still running");
        release.send(()).unwrap();
        finished.await.unwrap();
        // The answer is recorded after the work, by the detached task.
        let retry = || async {
            let res = send(&replays, claimant, async { unreachable!("ran twice") }).await;
            match res.status() {
                StatusCode::CONFLICT => Err("still in progress"),
                _ => Ok(res),
            }
        };
        let every = Duration::from_millis(5);
        let res = eventually("the answer recorded", Duration::from_secs(5), every, retry).await;
        assert_eq!(res.status(), StatusCode::CREATED);
        assert_eq!(res.headers()["idempotent-replayed"], "true");
        assert_eq!(body(res).await, b"{\"made\":1}");
    }

    #[tokio::test]
    async fn a_write_handed_to_a_task_of_its_own_still_logs_in_its_requests_span() {
        let (lines, _guard) = crate::trace::captured_logs();
        let replays: Arc<dyn IdempotencyStore> = Arc::new(MemoryIdempotency::new());
        let (release, released) = oneshot::channel::<()>();
        let (done, finished) = oneshot::channel::<()>();
        let work = async move {
            let _ = released.await;
            tracing::info!("the work went on");
            let _ = done.send(());
            Ok((StatusCode::CREATED, b"{}".to_vec()))
        };
        let span = tracing::info_span!("request", request_id = "r-1");
        let request = send(&replays, claimant(), work).instrument(span);
        let cut = tokio::time::timeout(Duration::from_millis(20), request);
        assert!(cut.await.is_err(), "the work was still waiting");
        release.send(()).unwrap();
        finished.await.unwrap();
        let text = lines.text();
        let line = text.lines().find(|l| l.contains("the work went on"));
        assert!(
            line.is_some_and(|l| l.contains("request{request_id=\"r-1\"}")),
            "{text}"
        );
    }

    /// A store whose `finish` waits for a permit of `kept` (none at first): an answer
    /// whose keeping is slow, or never durable (the process died first).
    struct SlowKeeping {
        inner: MemoryIdempotency,
        kept: Arc<tokio::sync::Semaphore>,
    }

    #[async_trait::async_trait]
    impl IdempotencyStore for SlowKeeping {
        async fn begin(
            &self,
            key: &ReplayKey,
            fingerprint: &[u8; 32],
            now: Millis,
            claimant: &Claimant,
        ) -> Result<Begin, boxoffice_engine::ports::StoreError> {
            self.inner.begin(key, fingerprint, now, claimant).await
        }
        async fn finish(
            &self,
            key: &ReplayKey,
            lease: Lease,
            response: &StoredResponse,
        ) -> Result<(), boxoffice_engine::ports::StoreError> {
            let permit = self.kept.acquire().await;
            drop(permit);
            self.inner.finish(key, lease, response).await
        }
        async fn abandon(
            &self,
            key: &ReplayKey,
            lease: Lease,
        ) -> Result<(), boxoffice_engine::ports::StoreError> {
            self.inner.abandon(key, lease).await
        }
        async fn heartbeat(
            &self,
            node: Incarnation,
            now: Millis,
        ) -> Result<(), boxoffice_engine::ports::StoreError> {
            self.inner.heartbeat(node, now).await
        }
        async fn prune(
            &self,
            before: Millis,
            limit: u32,
        ) -> Result<u64, boxoffice_engine::ports::StoreError> {
            self.inner.prune(before, limit).await
        }
    }

    /// `send` through `run_claimed`, whose step claims the key (as `claimant`) and
    /// answers `work`'s reply as ran (`Stepped::Ran`: kept after it is sent).
    async fn send_repeatable(
        replays: &Arc<dyn IdempotencyStore>,
        claimant: Claimant,
        work: impl Future<Output = Reply> + Send + 'static,
    ) -> Response {
        let store = at_1000(replays, claimant);
        let held = replays.clone();
        let step = move |args: ClaimArgs| async move {
            let c = args.claim();
            let begun = (held.begin(c.key, c.fingerprint, c.now, c.claimant)).await;
            match begun.expect("the store answers") {
                Begin::Proceed => Stepped::Ran(work.await),
                other => Stepped::Refused(other),
            }
        };
        let render = |_: KeptOutcome| async { unreachable!("nothing kept by the step") };
        replay("k-1")
            .await
            .run_claimed(store, Scope::Operator, b"{}", step, render)
            .await
    }

    #[tokio::test]
    async fn a_repeatable_writes_answer_is_sent_before_the_store_has_kept_it() {
        let kept = Arc::new(tokio::sync::Semaphore::new(0));
        let replays: Arc<dyn IdempotencyStore> = Arc::new(SlowKeeping {
            inner: MemoryIdempotency::new(),
            kept: kept.clone(),
        });
        let claimant = claimant();
        let work = async { Ok((StatusCode::OK, b"{\"place\":1}".to_vec())) };
        let sent = send_repeatable(&replays, claimant, work);
        let res = tokio::time::timeout(Duration::from_secs(5), sent)
            .await
            .expect("answered while the store still keeps it");
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(body(res).await, b"{\"place\":1}");
        // Kept or not, the key is this live process's: a retry does not run it again.
        let again = send_repeatable(&replays, claimant, async { unreachable!("ran twice") });
        assert_eq!(again.await.status(), StatusCode::CONFLICT);
        kept.add_permits(1);
        let retry = || async {
            let res =
                send_repeatable(&replays, claimant, async { unreachable!("ran twice") }).await;
            match res.status() {
                StatusCode::CONFLICT => Err("still keeping"),
                _ => Ok(res),
            }
        };
        let every = Duration::from_millis(5);
        let res = eventually("the answer kept", Duration::from_secs(5), every, retry).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()["idempotent-replayed"], "true");
        assert_eq!(body(res).await, b"{\"place\":1}");
    }

    #[tokio::test]
    async fn a_repeatable_write_whose_process_died_before_its_answer_was_kept_runs_again() {
        let replays: Arc<dyn IdempotencyStore> = Arc::new(SlowKeeping {
            inner: MemoryIdempotency::new(),
            kept: Arc::new(tokio::sync::Semaphore::new(0)),
        });
        let first = async { Ok((StatusCode::OK, b"{\"place\":1}".to_vec())) };
        let res = send_repeatable(&replays, claimant(), first).await;
        assert_eq!(res.status(), StatusCode::OK);
        // The keeping never lands; the next life of the process (another incarnation)
        // takes the claim over and runs the work again.
        let again = async { Ok((StatusCode::OK, b"{\"place\":1}".to_vec())) };
        let res = send_repeatable(&replays, claimant(), again).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert!(
            res.headers().get("idempotent-replayed").is_none(),
            "ran again"
        );
        assert_eq!(body(res).await, b"{\"place\":1}");
    }

    #[tokio::test]
    async fn a_write_whose_request_waits_for_it_runs_in_the_requests_own_task() {
        let replays: Arc<dyn IdempotencyStore> = Arc::new(MemoryIdempotency::new());
        let request = tokio::spawn(async move {
            let (ran_in, task) = oneshot::channel();
            let work = async move {
                let _ = ran_in.send(tokio::task::try_id());
                Ok((StatusCode::CREATED, b"{}".to_vec()))
            };
            let res = send(&replays, claimant(), work).await;
            (res.status(), tokio::task::id(), task.await.unwrap())
        });
        let (status, request_task, work_task) = request.await.unwrap();
        assert_eq!(status, StatusCode::CREATED);
        assert_eq!(work_task, Some(request_task), "no task of its own");
    }

    /// A `run_claimed` step that claims the key as a `ClaimedHolds` would, then answers
    /// `answer`.
    async fn send_claimed(replays: &Arc<dyn IdempotencyStore>, answer: Reply) -> Response {
        send_stepped(replays, Stepped::Ran, answer).await
    }

    /// `send_claimed` with the step's answer made by `stepped` once the claim is granted.
    /// A kept outcome is answered again as 409 and its debug text.
    async fn send_stepped(
        replays: &Arc<dyn IdempotencyStore>,
        stepped: impl FnOnce(Reply) -> Stepped + Send + 'static,
        answer: Reply,
    ) -> Response {
        let store = at_1000(replays, claimant());
        let held = replays.clone();
        let step = move |args: ClaimArgs| async move {
            let c = args.claim();
            let begun = (held.begin(c.key, c.fingerprint, c.now, c.claimant)).await;
            match begun.expect("the store answers") {
                Begin::Proceed => stepped(answer),
                other => Stepped::Refused(other),
            }
        };
        let render = |kept: KeptOutcome| async move {
            Ok((StatusCode::CONFLICT, format!("{kept:?}").into()))
        };
        replay("k-1")
            .await
            .run_claimed(store, Scope::Operator, b"{}", step, render)
            .await
    }

    #[tokio::test]
    async fn a_claimed_writes_answer_its_store_kept_is_sent_and_not_kept_again() {
        let replays: Arc<dyn IdempotencyStore> = Arc::new(MemoryIdempotency::new());
        let created = Ok((StatusCode::CREATED, b"{\"h\":1}".to_vec()));
        let res = send_stepped(&replays, Stepped::Kept, created).await;
        assert_eq!(res.status(), StatusCode::CREATED);
        assert!(res.headers().get("idempotent-replayed").is_none());
        assert_eq!(body(res).await, b"{\"h\":1}");
        // The store was not asked to keep it again: this store keeps nothing by itself,
        // so the next request (another process's: the claim's holder is gone) runs anew
        // where a kept answer would have been replayed.
        let again = send_claimed(&replays, Ok((StatusCode::OK, b"{}".to_vec()))).await;
        assert_eq!(again.status(), StatusCode::OK);
        assert!(again.headers().get("idempotent-replayed").is_none());
    }

    #[tokio::test]
    async fn a_kept_outcome_is_answered_again_by_the_writes_render_as_a_replay() {
        let replays: Arc<dyn IdempotencyStore> = Arc::new(MemoryIdempotency::new());
        let sold_out = || {
            let kept = KeptOutcome::Hold(Err(boxoffice_engine::ports::ArbiterError::SoldOut));
            Stepped::Refused(Begin::Kept(Box::new(kept)))
        };
        let res = send_stepped(&replays, move |_| sold_out(), Ok((StatusCode::OK, vec![]))).await;
        assert_eq!(res.status(), StatusCode::CONFLICT);
        assert_eq!(res.headers()["idempotent-replayed"], "true");
        assert_eq!(body(res).await, b"Hold(Err(SoldOut))");
    }

    #[tokio::test]
    async fn a_claimed_writes_answer_is_handed_to_the_store_before_the_response() {
        let replays: Arc<dyn IdempotencyStore> = Arc::new(MemoryIdempotency::new());
        let res = send_claimed(&replays, Ok((StatusCode::CREATED, b"{\"h\":1}".to_vec()))).await;
        assert_eq!(res.status(), StatusCode::CREATED);
        assert!(res.headers().get("idempotent-replayed").is_none());
        assert_eq!(body(res).await, b"{\"h\":1}");
        // No waiting, no polling: the answer is there when the response is.
        let again = send_claimed(&replays, Ok((StatusCode::OK, b"{}".to_vec()))).await;
        assert_eq!(again.status(), StatusCode::CREATED);
        assert_eq!(again.headers()["idempotent-replayed"], "true");
        assert_eq!(body(again).await, b"{\"h\":1}");
    }

    /// A `run_self_keeping` write whose work answers `answer`, kept by its store already
    /// when `kept` (the work then checks it was given the key it claimed and its lease).
    async fn send_self_keeping(
        replays: &Arc<dyn IdempotencyStore>,
        answer: Reply,
        kept: bool,
    ) -> Response {
        let me = claimant();
        let store = at_1000(replays, me);
        let work = move |_: Arc<dyn IdempotencyStore>, key: Arc<ReplayKey>, lease| async move {
            assert_eq!(key.key(), "k-1");
            assert_eq!(lease, me.lease_from(Millis(1_000)));
            (answer, kept)
        };
        replay("k-1")
            .await
            .run_self_keeping(store, Scope::Operator, b"{}", work)
            .await
    }

    #[tokio::test]
    async fn a_self_kept_answer_is_sent_and_not_kept_again() {
        let replays: Arc<dyn IdempotencyStore> = Arc::new(MemoryIdempotency::new());
        let created = Ok((StatusCode::CREATED, b"{\"o\":1}".to_vec()));
        let res = send_self_keeping(&replays, created, true).await;
        assert_eq!(res.status(), StatusCode::CREATED);
        assert!(res.headers().get("idempotent-replayed").is_none());
        assert_eq!(body(res).await, b"{\"o\":1}");
        // Not kept again: this store keeps nothing by itself, so the next request
        // (another process's: the claim's holder is gone) runs anew where a kept answer
        // would have been replayed.
        let again = send_self_keeping(&replays, Ok((StatusCode::OK, vec![])), false).await;
        assert_eq!(again.status(), StatusCode::OK);
        assert!(again.headers().get("idempotent-replayed").is_none());
    }

    #[tokio::test]
    async fn an_answer_not_kept_by_its_work_is_kept_as_run_keeps_it() {
        let replays: Arc<dyn IdempotencyStore> = Arc::new(MemoryIdempotency::new());
        let pending = Ok((StatusCode::ACCEPTED, b"{\"p\":1}".to_vec()));
        let res = send_self_keeping(&replays, pending, false).await;
        assert_eq!(res.status(), StatusCode::ACCEPTED);
        let again = send_self_keeping(&replays, Ok((StatusCode::OK, vec![])), false).await;
        assert_eq!(again.status(), StatusCode::ACCEPTED);
        assert_eq!(again.headers()["idempotent-replayed"], "true");
        assert_eq!(body(again).await, b"{\"p\":1}");
    }

    #[tokio::test]
    async fn a_claimed_writes_failure_of_ours_frees_the_key() {
        let replays: Arc<dyn IdempotencyStore> = Arc::new(MemoryIdempotency::new());
        let failed = Err(ApiError::from(EngineError::Internal("a bug".into())));
        let res = send_claimed(&replays, failed).await;
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let again = send_claimed(&replays, Ok((StatusCode::OK, b"{}".to_vec()))).await;
        assert_eq!(again.status(), StatusCode::OK);
        assert!(again.headers().get("idempotent-replayed").is_none());
    }

    #[tokio::test]
    async fn a_claimed_write_that_panics_after_its_claim_answers_500_and_frees_the_key() {
        let replays: Arc<dyn IdempotencyStore> = Arc::new(MemoryIdempotency::new());
        let res = send_stepped(&replays, |_| panic!("a bug"), Ok((StatusCode::OK, vec![]))).await;
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let again = send_claimed(&replays, Ok((StatusCode::OK, b"{}".to_vec()))).await;
        assert_eq!(again.status(), StatusCode::OK, "the key was left claimed");
        assert!(again.headers().get("idempotent-replayed").is_none());
    }

    #[tokio::test]
    async fn a_refusal_before_the_claim_is_kept_as_the_keys_answer() {
        let replays: Arc<dyn IdempotencyStore> = Arc::new(MemoryIdempotency::new());
        let send = || {
            let store = at_1000(&replays, claimant());
            async move {
                let refused = |_: ClaimArgs| async {
                    Stepped::Before(ApiError::new(ErrorCode::SaleNotOpen, "not open"))
                };
                let render = |_: KeptOutcome| async { unreachable!("nothing was kept") };
                (replay("k-1").await)
                    .run_claimed(store, Scope::Operator, b"{}", refused, render)
                    .await
            }
        };
        let first = send().await;
        let status = first.status();
        assert!(status.is_client_error(), "{status}");
        assert!(first.headers().get("idempotent-replayed").is_none());
        let again = send().await;
        assert_eq!(again.status(), status);
        assert_eq!(again.headers()["idempotent-replayed"], "true");
    }

    #[tokio::test]
    async fn a_panicking_write_answers_500_and_leaves_the_key_free_for_a_retry() {
        let replays: Arc<dyn IdempotencyStore> = Arc::new(MemoryIdempotency::new());
        let claimant = claimant();
        let res = send(&replays, claimant, async { panic!("a bug") }).await;
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let res = send(&replays, claimant, async {
            Ok((StatusCode::OK, b"{}".to_vec()))
        })
        .await;
        assert_eq!(res.status(), StatusCode::OK);
        assert!(res.headers().get("idempotent-replayed").is_none());
    }
}
