//! The world the fuzzed requests hit: the router the server serves, in-process, over a
//! fresh data directory with a frozen clock, and a few of everything to aim at — open,
//! other and draft events, buyers with tickets, admissions (one expired) and holds, a
//! confirmed order, and the Idempotency-Keys used to make them.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;

use std::convert::Infallible;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use axum::response::Response;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use boxoffice_domain::{EventId, HoldId, Millis, OrderId};
use boxoffice_engine::Engine;
use boxoffice_engine::ports::ManualClock;
use boxoffice_server::Application;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tower::ServiceExt;
use tower::util::BoxCloneSyncService;

use crate::common::{spec, test_config, uuid};
use crate::contract::Contract;

pub struct World {
    pub router: BoxCloneSyncService<Request<Body>, Response, Infallible>,
    pub engine: Arc<Engine>,
    pub clock: Arc<ManualClock>,
    pub operator: String,
    /// An open event, another open event, a draft (never opened).
    pub events: Vec<EventId>,
    /// Tokens by name: every kind the API takes, and forged and expired ones.
    pub tokens: Vec<(&'static str, String)>,
    /// Holds and orders to aim at; successful requests add theirs.
    pub known: Mutex<Known>,
    /// Idempotency-Keys already used (replays, and the same key with another body).
    pub keys: Vec<String>,
    /// The state after the last request, which is the state before the next.
    pub last_digest: Mutex<Option<super::digest::Digest>>,
    /// The schemas the answers of `call` were checked against.
    pub matched: BTreeSet<String>,
    _dir: tempfile::TempDir,
}

/// Holds and orders with the name of the token of the buyer who owns them.
#[derive(Default)]
pub struct Known {
    pub holds: Vec<(HoldId, &'static str)>,
    pub orders: Vec<(OrderId, &'static str)>,
    pub events: Vec<EventId>,
    /// Tokens of buyers made by the fuzz itself, latest first.
    pub buyers: Vec<String>,
}

impl World {
    pub async fn build() -> World {
        let dir = tempfile::tempdir().expect("a temp dir");
        let clock = Arc::new(ManualClock::new(Millis(1_800_000_000_000)));
        let app = Application::build_with_clock(test_config(dir.path()), clock.clone())
            .await
            .expect("the app builds");
        let mut w = World {
            router: BoxCloneSyncService::new(app.router()),
            engine: app.engine(),
            clock,
            operator: app.operator_key.expose().clone(),
            events: Vec::new(),
            tokens: Vec::new(),
            known: Mutex::default(),
            keys: Vec::new(),
            last_digest: Mutex::default(),
            matched: BTreeSet::new(),
            _dir: dir,
        };
        w.populate().await;
        w
    }

    async fn populate(&mut self) {
        let (open, other) = (self.event(true).await, self.event(true).await);
        let draft = self.event(false).await;
        self.events = vec![open, other, draft];
        // Admitted first, then the clock moves past the admission's lifetime.
        let (_, stale) = self.admitted(other).await;
        self.clock.advance_secs(1_000);
        let (buyer, admission) = self.admitted(open).await;
        let (other_buyer, other_admission) = self.admitted(other).await;
        let ticket = self.ticket(open, &buyer).await;
        let hold = self.hold(open, &admission).await;
        let paid = self.hold(open, &admission).await;
        let (s, o) = self
            .call(
                "POST",
                &format!("/v1/holds/{paid}/checkout"),
                &buyer,
                json!({"payment_method": "pm_card_visa"}),
            )
            .await;
        assert_eq!(s, 201, "the set-up purchase: {o}");
        let other_hold = self.hold(other, &other_admission).await;
        let mut known = self.known.lock();
        known.holds = vec![
            (hold, "buyer"),
            (paid, "buyer"),
            (other_hold, "other buyer"),
        ];
        let order = o["order_id"]
            .as_str()
            .expect("an order")
            .parse()
            .expect("an id");
        known.orders = vec![(order, "buyer")];
        drop(known);
        self.tokens = vec![
            ("buyer", buyer.clone()),
            ("other buyer", other_buyer),
            ("queue ticket", ticket),
            ("admission", admission.clone()),
            ("other event's admission", other_admission),
            ("expired admission", stale),
            ("operator", self.operator.clone()),
            ("admission with a flipped signature", flip_last(&admission)),
            ("admission with forged claims", forged_claims(&admission)),
            ("buyer token with a flipped signature", flip_last(&buyer)),
        ];
    }

    /// An event of 40 seats in section A and 20 GA units, 20 a buyer, opened or left a
    /// draft: room for many holds before limits and sell-outs refuse them all.
    async fn event(&mut self, open: bool) -> EventId {
        let spec = serde_json::to_value(spec(4, 10, 20, 20)).expect("a spec");
        let op = self.operator.clone();
        let (s, e) = self.call("POST", "/v1/events", &op, spec).await;
        assert_eq!(s, 201, "{e}");
        let id = EventId(e["event_id"].as_i64().expect("an event id"));
        if open {
            let (s, o) = self
                .call("POST", &format!("/v1/events/{id}/open"), &op, json!({}))
                .await;
            assert_eq!(s, 200, "{o}");
        }
        id
    }

    async fn ticket(&mut self, event: EventId, buyer: &str) -> String {
        let (s, j) = self
            .call(
                "POST",
                &format!("/v1/events/{event}/queue"),
                buyer,
                json!({}),
            )
            .await;
        assert_eq!(s, 200, "{j}");
        j["queue_ticket"].as_str().expect("a ticket").to_string()
    }

    /// A new buyer admitted to `event`: (buyer token, admission token).
    async fn admitted(&mut self, event: EventId) -> (String, String) {
        let (s, b) = self.call("POST", "/v1/buyers", "", json!({})).await;
        assert_eq!(s, 201, "{b}");
        let buyer = b["token"].as_str().expect("a buyer token").to_string();
        let ticket = self.ticket(event, &buyer).await;
        self.engine.admit_batch(event).await.expect("admission");
        let (s, st) = self
            .call("GET", "/v1/queue/status", &ticket, Value::Null)
            .await;
        let admission = st["admission_token"].as_str();
        let admission = admission.unwrap_or_else(|| panic!("not admitted ({s}): {st}"));
        (buyer, admission.to_string())
    }

    async fn hold(&mut self, event: EventId, admission: &str) -> HoldId {
        let body = json!({"best_available": {"section": "A", "quantity": 1}});
        let (s, h) = self
            .call(
                "POST",
                &format!("/v1/events/{event}/holds"),
                admission,
                body,
            )
            .await;
        assert_eq!(s, 201, "{h}");
        h["hold_id"]
            .as_str()
            .expect("a hold")
            .parse()
            .expect("a hold id")
    }

    /// A request with a fresh Idempotency-Key (kept for the fuzz to reuse); an answer of
    /// success must match the schema the API document gives it.
    pub async fn call(
        &mut self,
        method: &str,
        path: &str,
        token: &str,
        body: Value,
    ) -> (u16, Value) {
        let key = uuid();
        self.keys.push(key.clone());
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", format!("Bearer {token}"))
            .header("idempotency-key", key)
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .expect("a set-up request");
        let res = self.send(req, 1).await;
        let status = res.status();
        let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
            .await
            .expect("a body");
        let (status, body) = (
            status.as_u16(),
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        );
        if (200..300).contains(&status) {
            match Contract::get().check(method, path, status, &body) {
                Ok(checked) => self.matched.extend(checked),
                Err(e) => panic!("{e}"),
            }
        }
        (status, body)
    }

    /// The token of that name.
    pub fn token(&self, name: &str) -> &str {
        let found = self.tokens.iter().find(|(n, _)| *n == name);
        &found.expect("a token of the world").1
    }

    /// One request through the router, from client address 10.0.0.`peer`.
    pub async fn send(&self, mut req: Request<Body>, peer: u8) -> axum::response::Response {
        let addr = SocketAddr::from(([10, 0, 0, peer], 40_000));
        req.extensions_mut().insert(ConnectInfo(addr));
        match self.router.clone().oneshot(req).await {
            Ok(res) => res,
            Err(never) => match never {},
        }
    }
}

/// The token with its last character changed: a signature that does not verify.
fn flip_last(token: &str) -> String {
    let mut t = token.to_string();
    let last = t.pop().unwrap_or('A');
    t.push(if last == 'A' { 'B' } else { 'A' });
    t
}

/// The token's claims rewritten to live for ever, under the original signature: the
/// payload of a compact JWS (`header.claims.signature`), or the first part of a token
/// with two.
fn forged_claims(token: &str) -> String {
    let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
    let at = usize::from(parts.len() == 3);
    let claims = B64.decode(&parts[at]).expect("base64 claims");
    let mut c: Value = serde_json::from_slice(&claims).expect("JSON claims");
    c["exp"] = json!(i64::MAX / 2);
    parts[at] = B64.encode(c.to_string());
    parts.join(".")
}
