//! The public API as the crowd calls it: one pooled HTTP client per target within the
//! run's bound on sockets (see `client`), every request counted against the run's
//! budget, timed from when it had its slot and recorded, sent only to the run's own
//! targets.

use std::sync::Arc;
use std::time::{Duration, Instant};

use boxoffice_domain::possession::ProofKey;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, header, http};
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::client::{self, Lane};
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

    /// No answer came (refused, reset, timed out).
    fn none() -> Answer {
        Answer {
            status: 0,
            body: Value::Null,
            retry_after_s: None,
        }
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

    /// Signs a fresh proof with `key` into the request, when there is a key (the
    /// buyer has one only when the event asks for proofs).
    pub fn proving(mut self, key: Option<&'a ProofKey>) -> Call<'a> {
        self.proof = key;
        self
    }
}

#[derive(Clone)]
pub struct Api {
    lanes: Arc<Vec<Lane>>,
    /// The slot kept for the operator's own reads and set-up.
    operator: Arc<Semaphore>,
    timeout: Duration,
    pub targets: Arc<Vec<String>>,
    pub rec: Arc<Recorder>,
    pub max_requests: u64,
    pub cancel: CancellationToken,
}

/// The run's bounds as the client keeps them.
pub struct Bounds {
    pub max_requests: u64,
    /// Connections (and requests in flight) at once, over every target.
    pub max_connections: u32,
    /// How long a request may take once it has its slot.
    pub timeout: Duration,
}

impl Api {
    pub fn new(
        targets: Vec<String>,
        rec: Arc<Recorder>,
        bounds: &Bounds,
        cancel: CancellationToken,
    ) -> anyhow::Result<Api> {
        Ok(Api {
            lanes: Arc::new(client::lanes(&targets, bounds.max_connections)?),
            operator: Arc::new(Semaphore::new(1)),
            timeout: bounds.timeout,
            targets: Arc::new(targets),
            rec,
            max_requests: bounds.max_requests,
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
        let lane = self.lane(base);
        tokio::select! {
            a = self.exchange(lane, &lane.slots, &call) => Ok(a),
            () = self.cancel.cancelled() => Err(Stop::Cancelled),
        }
    }

    /// Sends `call` whatever the budget or cancellation (the operator's own reads and
    /// set-up), in the operator's slot; still recorded.
    pub async fn send_unbounded(&self, base: &str, call: Call<'_>) -> Answer {
        self.exchange(self.lane(base), &self.operator, &call).await
    }

    fn lane(&self, base: &str) -> &Lane {
        let found = self.lanes.iter().find(|l| l.base == base);
        found.unwrap_or(&self.lanes[0])
    }

    /// Waits for a slot, then sends; the latency recorded starts at the slot, the wait
    /// for it is recorded apart.
    async fn exchange(&self, lane: &Lane, slots: &Semaphore, call: &Call<'_>) -> Answer {
        let asked = Instant::now();
        let Ok(_slot) = slots.acquire().await else {
            return Answer::none();
        };
        let start = Instant::now();
        let a = match self.request(&lane.base, call) {
            Ok(req) => timed(self.timeout, answer(&lane.client, req)).await,
            Err(_) => Answer::none(),
        };
        let (waited, took) = (start - asked, start.elapsed());
        self.rec.record(call.step, start, took, waited, a.status);
        a
    }

    fn request(&self, base: &str, call: &Call<'_>) -> Result<Request<Full<Bytes>>, http::Error> {
        let mut req = Request::builder()
            .method(call.method.clone())
            .uri(format!("{base}{}", call.path));
        if let Some(t) = call.token {
            req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        if let Some(k) = call.key {
            req = req.header("idempotency-key", k);
        }
        if let Some(ip) = call.client_ip {
            req = req.header("x-forwarded-for", ip);
        }
        if let Some(key) = call.proof {
            req = req.header("dpop", proof(key, call));
        }
        let body = match &call.body {
            Some(b) => {
                req = req.header(header::CONTENT_TYPE, "application/json");
                Bytes::from(serde_json::to_vec(b).unwrap_or_default())
            }
            None => Bytes::new(),
        };
        req.body(Full::new(body))
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

/// The answer, or none when it did not come within `timeout`.
async fn timed(timeout: Duration, a: impl Future<Output = Answer>) -> Answer {
    tokio::time::timeout(timeout, a)
        .await
        .unwrap_or_else(|_| Answer::none())
}

async fn answer(client: &client::Http, req: Request<Full<Bytes>>) -> Answer {
    let Ok(res) = client.request(req).await else {
        return Answer::none();
    };
    let status = res.status().as_u16();
    let retry_after_s = res
        .headers()
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<f64>().ok());
    let body = match res.into_body().collect().await {
        Ok(b) => serde_json::from_slice(&b.to_bytes()).unwrap_or(Value::Null),
        Err(_) => Value::Null,
    };
    Answer {
        status,
        body,
        retry_after_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api() -> Api {
        let bounds = Bounds {
            max_requests: 10,
            max_connections: 4,
            timeout: Duration::from_secs(1),
        };
        let targets = vec!["http://127.0.0.1:9".to_owned()];
        Api::new(
            targets,
            Arc::new(Recorder::new()),
            &bounds,
            CancellationToken::new(),
        )
        .expect("a client for one target")
    }

    /// A buyer without a key (the event asks for no proofs) sends no `DPoP` header
    /// and signs nothing; with one, each request carries a proof for its method and path.
    #[tokio::test]
    async fn a_request_carries_a_proof_only_when_the_buyer_has_a_key() {
        let api = api();
        let body = serde_json::json!({});
        let unproved =
            Call::post(Step::Hold, "/v1/events/1/holds", body.clone(), "k").proving(None);
        let req = api
            .request("http://127.0.0.1:9", &unproved)
            .expect("a request");
        assert!(req.headers().get("dpop").is_none());

        let key = ProofKey::ed25519_from_seed(&[7; 32]);
        let proved = Call::post(Step::Hold, "/v1/events/1/holds", body, "k").proving(Some(&key));
        let req = api
            .request("http://127.0.0.1:9", &proved)
            .expect("a request");
        let proof = req
            .headers()
            .get("dpop")
            .expect("a proof")
            .to_str()
            .expect("ascii");
        assert_eq!(proof.split('.').count(), 3, "a compact JWS: {proof}");
    }
}
