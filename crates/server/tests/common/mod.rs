//! What the server's tests share: the real application in-process on port 0 with a
//! fresh data directory, a client and the steps of a purchase as helpers (each test gets
//! its own app), the `boxoffice` binary for tests of real processes, the books an
//! embedded node keeps, and what the tests that kill one start it again on. The rest of
//! the harness (databases, Redis, buyers over HTTP) is `boxoffice_testkit::harness`.
#![allow(dead_code)]

pub mod books;
pub mod on_disk;

use std::sync::Arc;

use boxoffice_domain::admission::Limit;
use boxoffice_domain::{EventId, EventSpec, Millis};
use boxoffice_engine::Engine;
use boxoffice_engine::ports::ManualClock;
use boxoffice_engine::{BuyersConfig, EngineConfig};
use boxoffice_http::HttpConfig;
use boxoffice_server::config::{PaymentsChoice, WorkerConfig};
use boxoffice_server::{Application, Config};
use boxoffice_testkit::harness::process::Boxoffice;
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use tokio::sync::oneshot;

pub use boxoffice_testkit::harness::{spec, uuid};

/// The server binary this crate builds, for tests that start real processes.
pub const BOXOFFICE: Boxoffice = Boxoffice(env!("CARGO_BIN_EXE_boxoffice"));

/// The server a benchmark runs: `BOXOFFICE_BENCH_BIN` names another build (a release
/// one, say), else the one this crate builds.
#[allow(dead_code)] // Not every test binary has a benchmark.
pub fn bench_boxoffice() -> Boxoffice {
    match std::env::var("BOXOFFICE_BENCH_BIN") {
        Ok(bin) => Boxoffice(Box::leak(bin.into_boxed_str())),
        Err(_) => BOXOFFICE,
    }
}

pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub operator_key: String,
    pub engine: Arc<Engine>,
    pub clock: Arc<ManualClock>,
    pub dir: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
}

/// A config for tests: port 0, data in a temp dir, the stand-in payment provider (chosen
/// explicitly, as outside `--demo` it must be), workers slow enough that tests drive
/// time themselves, and self sign-up on without a rate (tests make many buyers from one
/// address; the sign-up rules have tests of their own).
pub fn test_config(dir: &std::path::Path) -> Config {
    let hour = 3_600_000;
    Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.to_path_buf(),
        operator_key: Some("test-operator-key-0123456789".into()),
        payments: Some(PaymentsChoice::Fake),
        workers: WorkerConfig {
            expiry_interval_ms: hour,
            recovery_interval_ms: hour,
            drift_repair_interval_ms: hour,
            event_cancel_interval_ms: hour,
            ..WorkerConfig::default()
        },
        engine: EngineConfig {
            admission_interval_ms: hour,
            ..EngineConfig::default()
        },
        buyers: BuyersConfig {
            self_signup: Some(true),
            signup_per_address: Limit { per_s: 0, burst: 0 },
            ..BuyersConfig::default()
        },
        // Every request of a test comes from this machine: one address.
        http: HttpConfig {
            max_in_flight_per_address: HttpConfig::default().max_in_flight,
            ..HttpConfig::default()
        },
        ..Config::default()
    }
}

pub async fn spawn() -> TestApp {
    spawn_with(|_| {}).await
}

pub async fn spawn_with(tweak: impl FnOnce(&mut Config)) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    tweak(&mut config);
    let clock = Arc::new(ManualClock::new(Millis(1_800_000_000_000)));
    let app = Application::build_with_clock(config, clock.clone())
        .await
        .expect("the app builds");
    let base = format!("http://{}", app.local_addr());
    let engine = app.engine();
    let operator_key = app.operator_key.expose().clone();
    let (tx, rx) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        app.run_until_stopped(async {
            let _ = rx.await;
        })
        .await
        .unwrap();
    });
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(4096)
        .build()
        .unwrap();
    TestApp {
        base,
        client,
        operator_key,
        engine,
        clock,
        dir,
        stop: Some(tx),
        server: Some(server),
    }
}

impl TestApp {
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(s) = self.server.take() {
            let _ = s.await;
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn post(&self, path: &str, token: &str, key: &str, body: Value) -> Response {
        self.client
            .post(self.url(path))
            .bearer_auth(token)
            .header("Idempotency-Key", key)
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    pub async fn get(&self, path: &str, token: &str) -> Response {
        self.client
            .get(self.url(path))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
    }

    pub async fn create_event(&self, spec: &EventSpec) -> EventId {
        let res = self
            .post(
                "/v1/events",
                &self.operator_key,
                &uuid(),
                serde_json::to_value(spec).unwrap(),
            )
            .await;
        assert_eq!(res.status(), StatusCode::CREATED);
        let id = res.json::<Value>().await.unwrap()["event_id"]
            .as_i64()
            .unwrap();
        let res = self
            .post(
                &format!("/v1/events/{id}/open"),
                &self.operator_key,
                &uuid(),
                json!({}),
            )
            .await;
        assert_eq!(res.status(), StatusCode::OK);
        EventId(id)
    }

    /// A new buyer: (buyer id, token).
    pub async fn buyer(&self) -> (String, String) {
        let res = self
            .client
            .post(self.url("/v1/buyers"))
            .header("Idempotency-Key", uuid())
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
        let v: Value = res.json().await.unwrap();
        (
            v["buyer_id"].as_str().unwrap().into(),
            v["token"].as_str().unwrap().into(),
        )
    }

    /// Joins the queue, lets admission run, and returns the admission token.
    pub async fn admit(&self, event: EventId, buyer_token: &str) -> String {
        let res = self
            .post(
                &format!("/v1/events/{event}/queue"),
                buyer_token,
                &uuid(),
                json!({}),
            )
            .await;
        assert_eq!(res.status(), StatusCode::OK);
        let ticket = res.json::<Value>().await.unwrap()["queue_ticket"]
            .as_str()
            .unwrap()
            .to_string();
        self.engine.admit_batch(event).await.unwrap();
        let v: Value = self
            .get("/v1/queue/status", &ticket)
            .await
            .json()
            .await
            .unwrap();
        v["admission_token"]
            .as_str()
            .unwrap_or_else(|| panic!("not admitted: {v}"))
            .to_string()
    }

    /// A buyer already admitted to `event`: (buyer token, admission token).
    pub async fn admitted_buyer(&self, event: EventId) -> (String, String) {
        let (_, token) = self.buyer().await;
        let admission = self.admit(event, &token).await;
        (token, admission)
    }

    /// A buyer admitted to `event` holding `quantity` of section A's best seats: (buyer
    /// token, hold id).
    pub async fn holding(&self, event: EventId, quantity: u32) -> (String, String) {
        let (token, admission) = self.admitted_buyer(event).await;
        let body = json!({"best_available": {"section": "A", "quantity": quantity}});
        let res = self.hold(event, &admission, body).await;
        let hold: Value = res.json().await.expect("a hold");
        let id = hold["hold_id"]
            .as_str()
            .unwrap_or_else(|| panic!("no hold: {hold}"));
        (token, id.to_string())
    }

    pub async fn hold(&self, event: EventId, admission: &str, body: Value) -> Response {
        self.post(
            &format!("/v1/events/{event}/holds"),
            admission,
            &uuid(),
            body,
        )
        .await
    }

    pub async fn checkout(&self, hold_id: &str, buyer_token: &str, method: &str) -> Response {
        self.post(
            &format!("/v1/holds/{hold_id}/checkout"),
            buyer_token,
            &uuid(),
            json!({"payment_method": method}),
        )
        .await
    }

    pub async fn counts(&self, event: EventId) -> Value {
        let v: Value = self
            .get(&format!("/v1/events/{event}"), "")
            .await
            .json()
            .await
            .unwrap();
        v["counts"].clone()
    }
}
