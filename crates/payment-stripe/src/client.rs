//! A thin Stripe API client: form-encoded POSTs with an `Idempotency-Key`, GETs, and one
//! mapping of transport and HTTP failures onto the port's `PaymentError`, so the
//! gateway reads as a list of Stripe calls. Only what the gateway needs.

use std::time::Duration;

use boxoffice_engine::ports::PaymentError;
use reqwest::{Client, RequestBuilder, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// An answer Stripe refused, kept whole so callers can tell a card decline (402) from
/// a bad request (4xx) and read Stripe's error code.
#[derive(Debug)]
pub enum Failure {
    /// Not found (a payment we asked about by id does not exist).
    NotFound,
    /// The card was declined: Stripe's `error.code` (or `decline_code`).
    Card(String),
    /// Any other 4xx: the request itself was refused.
    Refused(String),
    /// Timeout, connection failure, 5xx: the provider may or may not have acted.
    Port(PaymentError),
}

impl From<Failure> for PaymentError {
    fn from(f: Failure) -> PaymentError {
        match f {
            Failure::NotFound => PaymentError::Rejected("no such payment".into()),
            Failure::Card(c) | Failure::Refused(c) => PaymentError::Rejected(c),
            Failure::Port(p) => p,
        }
    }
}

pub struct StripeClient {
    http: Client,
    base: String,
    secret_key: String,
}

impl StripeClient {
    pub fn new(base: &str, secret_key: &str, timeout: Duration) -> Result<Self, reqwest::Error> {
        let http = Client::builder().timeout(timeout).build()?;
        Ok(StripeClient {
            http,
            base: base.trim_end_matches('/').to_owned(),
            secret_key: secret_key.to_owned(),
        })
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
            .bearer_auth(&self.secret_key)
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
        let error: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let code = error["error"]["decline_code"]
            .as_str()
            .or(error["error"]["code"].as_str())
            .or(error["error"]["message"].as_str())
            .unwrap_or("unknown")
            .to_owned();
        Err(match status {
            StatusCode::NOT_FOUND => Failure::NotFound,
            StatusCode::PAYMENT_REQUIRED => Failure::Card(code),
            s if s.is_server_error() || s == StatusCode::TOO_MANY_REQUESTS => {
                Failure::Port(PaymentError::Unavailable(format!("stripe answered {s}")))
            }
            _ => Failure::Refused(code),
        })
    }
}

fn transport(e: reqwest::Error) -> Failure {
    if e.is_timeout() {
        Failure::Port(PaymentError::Timeout)
    } else {
        Failure::Port(PaymentError::Unavailable(e.to_string()))
    }
}
