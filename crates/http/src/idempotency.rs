//! Replays for retried writes (P4). The first request with a key runs and its response
//! is kept; a retry with the same key and body gets that response again, with the same
//! key and another body gets 422, and while the first is still running gets 409. A claim
//! left by a process that died is taken over at once (see `Claimant`), and a replay
//! store too full of running requests to take another key answers 503.

use std::future::Future;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use boxoffice_engine::ports::{Begin, Claimant, IdempotencyStore, StoredResponse};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::extract::IdempotencyKey;

pub struct Call<'a> {
    pub store: &'a dyn IdempotencyStore,
    /// This process, and how long its claims block retries.
    pub claimant: Claimant,
    pub scope: String,
    pub key: &'a IdempotencyKey,
    pub method: &'static str,
    pub path: &'a str,
    pub body: &'a [u8],
    pub now: boxoffice_domain::Millis,
}

/// A handler's result before it becomes a response: a status and a JSON value.
pub type Reply = Result<(StatusCode, Vec<u8>), ApiError>;

pub fn reply<T: Serialize>(status: StatusCode, value: &T) -> Reply {
    serde_json::to_vec(value)
        .map(|b| (status, b))
        .map_err(|e| ApiError::from(boxoffice_engine::EngineError::Internal(e.to_string())))
}

impl Call<'_> {
    fn fingerprint(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        for part in [
            self.method.as_bytes(),
            b"\0",
            self.path.as_bytes(),
            b"\0",
            self.body,
        ] {
            h.update(part);
        }
        h.finalize().into()
    }

    pub async fn run<F: Future<Output = Reply>>(self, work: F) -> Response {
        let key = &self.key.0;
        match self
            .store
            .begin(
                &self.scope,
                key,
                &self.fingerprint(),
                self.now,
                &self.claimant,
            )
            .await
        {
            Err(e) => ApiError::from(boxoffice_engine::EngineError::from(e)).into_response(),
            Ok(Begin::Replay(r)) => respond(
                StatusCode::from_u16(r.status).unwrap_or(StatusCode::OK),
                r.body,
                true,
            ),
            Ok(Begin::Mismatch) => ApiError::new(
                ErrorCode::IdempotencyKeyReused,
                "this Idempotency-Key was already used for a different request",
            )
            .into_response(),
            Ok(Begin::InFlight) => ApiError::new(
                ErrorCode::RequestInProgress,
                "a request with this Idempotency-Key is still running; retry shortly",
            )
            .into_response(),
            Ok(Begin::Full) => ApiError::new(
                ErrorCode::IdempotencyStoreFull,
                "too many requests are running to remember another Idempotency-Key; retry shortly",
            )
            .into_response(),
            Ok(Begin::Proceed) => self.finish(work.await).await,
        }
    }

    async fn finish(self, reply: Reply) -> Response {
        let (status, body) = match reply {
            Ok(ok) => ok,
            Err(e) => (e.status, e.body()),
        };
        // A failure of ours changed nothing the client can rely on: let a retry run again.
        let outcome = if status.is_server_error() {
            self.store.abandon(&self.scope, &self.key.0).await
        } else {
            self.store
                .finish(
                    &self.scope,
                    &self.key.0,
                    &StoredResponse {
                        status: status.as_u16(),
                        body: body.clone(),
                    },
                )
                .await
        };
        if let Err(e) = outcome {
            tracing::warn!(error = %e, "could not record the idempotent response");
        }
        respond(status, body, false)
    }
}

pub fn respond(status: StatusCode, body: Vec<u8>, replayed: bool) -> Response {
    let mut res = (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response();
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
