//! The edge: limits, shedding, expensive reads and streams, mostly against a real
//! `boxoffice` process with settings of the test's choosing, and the HTTP steps these
//! tests share (an open event, an admitted buyer, a metric). A process of its own gives
//! each test its own metrics registry and file-descriptor table.
#![allow(dead_code)]

mod overload;
mod reads;
mod requests;
mod streams;

use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::Child;

use boxoffice_testkit::harness::http::{admission_token, call};
use boxoffice_testkit::harness::path_str;
use boxoffice_testkit::harness::process::terminate;

use crate::common::{BOXOFFICE, uuid};

pub const OPERATOR: &str = "edge-test-operator-key-0123456789";
/// Buyers sign themselves up, as many from one address as the tests need.
const SIGN_UP: &str =
    "[buyers]\nself_signup = true\n[buyers.signup_per_address]\nper_s = 0\nburst = 0\n";

pub struct Node {
    pub child: Child,
    pub base: String,
    pub client: reqwest::Client,
    pub dir: tempfile::TempDir,
}

impl Node {
    /// Starts a server whose config file is `config` (TOML, tables allowed) plus the
    /// operator key and a fast admission tick.
    pub async fn start(config: &str) -> Node {
        Node::start_env(config, &[]).await
    }

    /// As `start`, with `env` (`BOXOFFICE_*` settings, over the file's and the
    /// harness's).
    pub async fn start_env(config: &str, env: &[(&str, &str)]) -> Node {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("boxoffice.toml");
        let text = format!(
            "operator_key = \"{OPERATOR}\"\npayments = \"fake\"\n{config}\n[engine]\nadmission_interval_ms = 50\n{SIGN_UP}"
        );
        std::fs::write(&file, text).unwrap();
        let data = path_str(dir.path()).to_string();
        let config = path_str(&file).to_string();
        let (child, base) = BOXOFFICE
            .start_env(&["--data-dir", &data, "--config", &config], env)
            .await;
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        Node {
            child,
            base,
            client,
            dir,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> (u16, Value) {
        call(
            &self.client,
            reqwest::Method::POST,
            self.url(path),
            token,
            body,
        )
        .await
    }

    /// Creates and opens an event from `spec`; returns its id.
    pub async fn open_event(&self, spec: &boxoffice_domain::EventSpec) -> i64 {
        let spec = serde_json::to_value(spec).unwrap();
        let (status, created) = self.post("/v1/events", OPERATOR, spec).await;
        assert_eq!(status, 201, "{created}");
        let id = created["event_id"].as_i64().unwrap();
        let (status, _) = self
            .post(&format!("/v1/events/{id}/open"), OPERATOR, json!({}))
            .await;
        assert_eq!(status, 200);
        id
    }

    /// A new buyer admitted to `event`: (buyer token, admission token).
    pub async fn admitted(&self, event: i64) -> (String, String) {
        let (status, buyer) = self.post("/v1/buyers", "", json!({})).await;
        assert_eq!(status, 201, "{buyer}");
        let token = buyer["token"].as_str().unwrap().to_string();
        let (status, joined) = self
            .post(&format!("/v1/events/{event}/queue"), &token, json!({}))
            .await;
        assert_eq!(status, 200, "{joined}");
        let ticket = joined["queue_ticket"].as_str().unwrap().to_string();
        let admission = admission_token(&self.client, &self.base, &ticket).await;
        (token, admission)
    }

    /// Holds `quantity` units of section `section`: (status, body).
    pub async fn hold(&self, event: i64, admission: &str, section: &str, n: u32) -> (u16, Value) {
        let body = json!({"best_available": {"section": section, "quantity": n}});
        self.post(&format!("/v1/events/{event}/holds"), admission, body)
            .await
    }

    /// The value of a metric line (`name` with its labels, as /metrics prints it).
    pub async fn metric(&self, name: &str) -> Option<f64> {
        let text = self
            .client
            .get(self.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        terminate(&self.child);
    }
}

/// A fresh Idempotency-Key.
pub fn key() -> String {
    uuid()
}

pub use boxoffice_testkit::harness::http::next_event;
