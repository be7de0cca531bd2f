//! localstripe on a free loopback port, started per test and killed on drop, plus a
//! webhook receiver it can deliver to. localstripe's own CLI binds every interface, so
//! it is started from Python bound to 127.0.0.1.
#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::routing::post;
use boxoffice_payment_stripe::{StripeConfig, StripeGateway};
use tokio::sync::mpsc;

pub const WEBHOOK_SECRET: &str = "whsec_boxoffice_test";

pub struct LocalStripe {
    pub base: String,
    child: Child,
}

impl Drop for LocalStripe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Starts localstripe, installing it first (scripts/test-payments-setup.sh) if missing.
pub fn start() -> LocalStripe {
    let setup = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/test-payments-setup.sh"
    );
    let ok = Command::new("sh").arg(setup).status().expect("sh runs");
    assert!(ok.success(), "localstripe could not be installed");
    let port = free_port();
    let code = format!(
        "from aiohttp import web; import localstripe.server as s; \
         web.run_app(s.app, host='127.0.0.1', port={port}, print=None)"
    );
    let child = Command::new("python3")
        .args(["-c", &code])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "localstripe did not accept connections on port {port} within 20 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    LocalStripe {
        base: format!("http://127.0.0.1:{port}"),
        child,
    }
}

impl LocalStripe {
    pub fn gateway(&self) -> StripeGateway {
        StripeGateway::new(StripeConfig {
            base_url: self.base.clone(),
            secret_key: "sk_test_boxoffice".into(),
            webhook_secret: WEBHOOK_SECRET.into(),
            ..StripeConfig::default()
        })
        .unwrap()
    }

    /// Registers `url` for every webhook, signed with [`WEBHOOK_SECRET`].
    pub async fn register_webhook(&self, url: &str) {
        let res = reqwest::Client::new()
            .post(format!("{}/_config/webhooks/boxoffice", self.base))
            .form(&[("url", url), ("secret", WEBHOOK_SECRET)])
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success());
    }

    /// Creates a card PaymentMethod from a test card number; returns its id.
    pub async fn card(&self, number: &str) -> String {
        let res: serde_json::Value = reqwest::Client::new()
            .post(format!("{}/v1/payment_methods", self.base))
            .bearer_auth("sk_test_boxoffice")
            .form(&[
                ("type", "card"),
                ("card[number]", number),
                ("card[exp_month]", "12"),
                ("card[exp_year]", "2030"),
                ("card[cvc]", "123"),
            ])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        res["id"].as_str().unwrap().to_owned()
    }

    /// The buyer passes (or fails) 3-D Secure: localstripe's private endpoint.
    pub async fn authenticate(&self, reference: &str, success: bool) {
        let pi: serde_json::Value = reqwest::Client::new()
            .get(format!("{}/v1/payment_intents/{reference}", self.base))
            .bearer_auth("sk_test_boxoffice")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let secret = pi["client_secret"].as_str().unwrap();
        let res = reqwest::Client::new()
            .post(format!(
                "{}/v1/payment_intents/{reference}/_authenticate",
                self.base
            ))
            .bearer_auth("sk_test_boxoffice")
            .form(&[("client_secret", secret), ("success", &success.to_string())])
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "{}", res.text().await.unwrap());
    }
}

/// A webhook as received: (Stripe-Signature header, body).
pub type Received = (String, Bytes);

/// Listens on a free loopback port; returns its URL and the stream of webhooks.
pub async fn webhook_receiver() -> (String, mpsc::UnboundedReceiver<Received>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let app = Router::new().route(
        "/hook",
        post(move |headers: HeaderMap, body: Bytes| {
            let tx = tx.clone();
            async move {
                let sig = headers
                    .get("stripe-signature")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                let _ = tx.send((sig, body));
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}
