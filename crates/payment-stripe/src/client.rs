//! A thin Stripe API client: form-encoded POSTs with an `Idempotency-Key`, GETs, and one
//! mapping of transport and HTTP failures onto the port's `PaymentError`, so the
//! gateway reads as a list of Stripe calls. Only what the gateway needs.
//!
//! TLS is rustls (ring), trusting the system's certificate store plus, when set, the
//! CA certificates of `ca_file`.

use std::path::Path;
use std::time::Duration;

use boxoffice_domain::Secret;
use boxoffice_engine::ports::PaymentError;
use reqwest::{Certificate, Client, RequestBuilder, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// An answer Stripe refused, kept whole so callers can tell a card decline (402) from
/// a bad request (4xx) and read Stripe's error code.
#[derive(Debug)]
pub enum Failure {
    /// Not found (a payment we asked about by id does not exist).
    NotFound,
    /// Our secret key was refused (401) or lacks a permission (403): nothing about the
    /// payment is decided.
    Unauthorized(u16),
    /// The card was declined: Stripe's `error.code` (or `decline_code`).
    Card(String),
    /// Any other 4xx: the request itself was refused.
    Refused(String),
    /// A 5xx or 429: the provider may or may not have acted.
    Status(StatusCode),
    /// Timeout, connection failure, an unreadable answer: the provider may or may not
    /// have acted.
    Port(PaymentError),
}

impl From<Failure> for PaymentError {
    fn from(f: Failure) -> PaymentError {
        match f {
            Failure::NotFound => PaymentError::Rejected("no such payment".into()),
            Failure::Unauthorized(status) => {
                PaymentError::Unavailable(format!("the Stripe secret key was refused ({status})"))
            }
            Failure::Card(c) | Failure::Refused(c) => PaymentError::Rejected(c),
            Failure::Status(s) => PaymentError::Unavailable(format!("stripe answered {s}")),
            Failure::Port(p) => p,
        }
    }
}

/// Why the client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("reading stripe.ca_file {path}: {source}")]
    CaFile {
        path: String,
        source: std::io::Error,
    },
    #[error("stripe.ca_file {path} holds no PEM certificate{why}")]
    CaPem { path: String, why: String },
    #[error("building the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

pub struct StripeClient {
    http: Client,
    base: String,
    secret_key: Secret,
}

impl StripeClient {
    pub fn new(
        base: &str,
        secret_key: &Secret,
        timeout: Duration,
        ca_file: Option<&Path>,
    ) -> Result<Self, BuildError> {
        let mut builder = Client::builder().timeout(timeout).use_rustls_tls();
        for cert in ca_file.map(extra_roots).transpose()?.unwrap_or_default() {
            builder = builder.add_root_certificate(cert);
        }
        Ok(StripeClient {
            http: builder.build()?,
            base: base.trim_end_matches('/').to_owned(),
            secret_key: secret_key.clone(),
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub async fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        form: &[(&str, String)],
        idempotency_key: Option<&str>,
    ) -> Result<T, Failure> {
        let mut req = self.http.post(self.url(path)).form(form);
        if let Some(key) = idempotency_key {
            req = req.header("Idempotency-Key", key);
        }
        self.send(req).await
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, Failure> {
        self.send(self.http.get(self.url(path))).await
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn send<T: DeserializeOwned>(&self, req: RequestBuilder) -> Result<T, Failure> {
        let res = req
            .bearer_auth(self.secret_key.expose())
            .send()
            .await
            .map_err(transport)?;
        let status = res.status();
        let body = res.bytes().await.map_err(transport)?;
        if status.is_success() {
            return serde_json::from_slice(&body).map_err(|e| {
                Failure::Port(PaymentError::Unavailable(format!("unreadable answer: {e}")))
            });
        }
        Err(refusal(status, &body))
    }
}

/// The CA certificates of a PEM file, at least one.
fn extra_roots(path: &Path) -> Result<Vec<Certificate>, BuildError> {
    let shown = path.display().to_string();
    let pem = std::fs::read(path).map_err(|source| BuildError::CaFile {
        path: shown.clone(),
        source,
    })?;
    match Certificate::from_pem_bundle(&pem) {
        Ok(certs) if !certs.is_empty() => Ok(certs),
        Ok(_) => Err(BuildError::CaPem {
            path: shown,
            why: String::new(),
        }),
        Err(e) => Err(BuildError::CaPem {
            path: shown,
            why: format!(": {e}"),
        }),
    }
}

fn refusal(status: StatusCode, body: &[u8]) -> Failure {
    let error: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let code = error["error"]["decline_code"]
        .as_str()
        .or(error["error"]["code"].as_str())
        .or(error["error"]["message"].as_str())
        .unwrap_or("unknown")
        .to_owned();
    match status {
        StatusCode::NOT_FOUND => Failure::NotFound,
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Failure::Unauthorized(status.as_u16()),
        StatusCode::PAYMENT_REQUIRED => Failure::Card(code),
        s if s.is_server_error() || s == StatusCode::TOO_MANY_REQUESTS => Failure::Status(s),
        _ => Failure::Refused(code),
    }
}

fn transport(e: reqwest::Error) -> Failure {
    if e.is_timeout() {
        Failure::Port(PaymentError::Timeout)
    } else {
        Failure::Port(PaymentError::Unavailable(with_causes(&e)))
    }
}

/// An error and its causes on one line: reqwest's own message ("error sending
/// request") hides the one that says what went wrong (a refused certificate, a
/// refused connection).
pub fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}
