//! The public API as the crowd calls it: one shared HTTP client, every request counted
//! against the run's bound, timed and recorded, sent only to the run's own targets.

use std::sync::Arc;
use std::time::{Duration, Instant};

use boxoffice_domain::possession::ProofKey;
use reqwest::Method;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::record::{Recorder, Step};

/// Why a buyer stops before the journey's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Ctrl-C, or the run's time limit.
    Cancelled,
    /// The run's request budget is spent.
    Budget,
}

/// An answer: status (0 when none came), body as JSON (Null when not JSON) and the
/// Retry-After it asked for.
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub retry_after_s: Option<f64>,
}

impl Answer {
    pub fn code(&self) -> &str {
        match self.status {
            0 => "transport",
            _ => self.body["error"].as_str().unwrap_or("-"),
        }
    }

    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// An answer no buyer should meet: the server failed or did not answer.
    pub fn failed(&self) -> bool {
        self.status == 0 || self.status >= 500
    }
}

/// One request to make.
#[derive(Clone)]
pub struct Call<'a> {
    pub step: Step,
    pub method: Method,
    pub path: &'a str,
    pub token: Option<&'a str>,
    pub body: Option<Value>,
    pub key: Option<&'a str>,
    /// The client address the request is made for (sent as X-Forwarded-For, which a
    /// server trusts only from proxies it was told to trust).
    pub client_ip: Option<&'a str>,
    /// The buyer's key: the request carries a fresh proof of possession (`DPoP`).
    pub proof: Option<&'a ProofKey>,
}

impl<'a> Call<'a> {
    pub fn get(step: Step, path: &'a str) -> Call<'a> {
        Call {
            step,
            method: Method::GET,
            path,
            token: None,
            body: None,
            key: None,
            client_ip: None,
            proof: None,
        }
    }

    pub fn post(step: Step, path: &'a str, body: Value, key: &'a str) -> Call<'a> {
        Call {
            method: Method::POST,
            body: Some(body),
            key: Some(key),
            ..Call::get(step, path)
        }
    }

    pub fn token(mut self, token: &'a str) -> Call<'a> {
        self.token = Some(token);
        self
    }

    pub fn from(mut self, ip: &'a str) -> Call<'a> {
        self.client_ip = Some(ip);
        self
    }

    pub fn proving(mut self, key: &'a ProofKey) -> Call<'a> {
        self.proof = Some(key);
        self
    }
}

#[derive(Clone)]
pub struct Api {
    client: reqwest::Client,
    pub targets: Arc<Vec<String>>,
    pub rec: Arc<Recorder>,
    pub max_requests: u64,
    pub cancel: CancellationToken,
}

impl Api {
    pub fn new(
        targets: Vec<String>,
        rec: Arc<Recorder>,
        max_requests: u64,
        cancel: CancellationToken,
        timeout: Duration,
    ) -> anyhow::Result<Api> {
        let client = reqwest::Client::builder()
            // Never follow a server elsewhere: only the given targets are called.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .pool_max_idle_per_host(4_096)
            .build()?;
        Ok(Api {
            client,
            targets: Arc::new(targets),
            rec,
            max_requests,
            cancel,
        })
    }

    /// The target a buyer sticks to (a load balancer's affinity, or none).
    pub fn base(&self, buyer: usize) -> &str {
        &self.targets[buyer % self.targets.len()]
    }

    /// Sends `call` to target `base`, unless the run is over.
    pub async fn send(&self, base: &str, call: Call<'_>) -> Result<Answer, Stop> {
        if self.cancel.is_cancelled() {
            return Err(Stop::Cancelled);
        }
        if !self.rec.admit_request(self.max_requests) {
            return Err(Stop::Budget);
        }
        // Counted against the person whose journey sends it (none for the operator).
        let _ = super::buyer::SPENT.try_with(|s| s.requests.set(s.requests.get() + 1));
        let req = self.request(base, &call);
        let start = Instant::now();
        let answer = tokio::select! {
            a = answer(req) => a,
            () = self.cancel.cancelled() => return Err(Stop::Cancelled),
        };
        self.rec
            .record(call.step, start, start.elapsed(), answer.status);
        Ok(answer)
    }

    /// Sends `call` whatever the budget or cancellation (the operator's own reads and
    /// set-up); still recorded.
    pub async fn send_unbounded(&self, base: &str, call: Call<'_>) -> Answer {
        let req = self.request(base, &call);
        let start = Instant::now();
        let a = answer(req).await;
        self.rec.record(call.step, start, start.elapsed(), a.status);
        a
    }

    fn request(&self, base: &str, call: &Call<'_>) -> reqwest::RequestBuilder {
        let url = format!("{base}{}", call.path);
        let mut req = self.client.request(call.method.clone(), url);
        if let Some(t) = call.token {
            req = req.bearer_auth(t);
        }
        if let Some(k) = call.key {
            req = req.header("Idempotency-Key", k);
        }
        if let Some(ip) = call.client_ip {
            req = req.header("X-Forwarded-For", ip);
        }
        if let Some(b) = &call.body {
            req = req.json(b);
        }
        if let Some(key) = call.proof {
            req = req.header("DPoP", proof(key, call));
        }
        req
    }

    /// Sleeps `d` unless the run ends first.
    pub async fn pause(&self, d: Duration) -> Result<(), Stop> {
        tokio::select! {
            () = tokio::time::sleep(d) => Ok(()),
            () = self.cancel.cancelled() => Err(Stop::Cancelled),
        }
    }
}

/// A proof for this request, made as it is sent (so every retry has its own): the
/// recipe of docs/ARCHITECTURE.md for clients that are not a browser.
fn proof(key: &ProofKey, call: &Call<'_>) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let iat = now.map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let path = call.path.split('?').next().unwrap_or(call.path);
    let jti = uuid::Uuid::new_v4().simple().to_string();
    key.proof(call.method.as_str(), path, iat, &jti)
}

async fn answer(req: reqwest::RequestBuilder) -> Answer {
    match req.send().await {
        Ok(res) => {
            let status = res.status().as_u16();
            let retry_after_s = res
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<f64>().ok());
            let body = match res.bytes().await {
                Ok(b) => serde_json::from_slice(&b).unwrap_or(Value::Null),
                Err(_) => Value::Null,
            };
            Answer {
                status,
                body,
                retry_after_s,
            }
        }
        Err(_) => Answer {
            status: 0,
            body: Value::Null,
            retry_after_s: None,
        },
    }
}
