//! localstripe on a free loopback port, started per test and killed on drop, plus a
//! webhook receiver it can deliver to.
#![allow(dead_code)]

use axum::Router;
use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::routing::post;
use boxoffice_payment_stripe::{StripeConfig, StripeGateway};
use tokio::sync::mpsc;

pub const WEBHOOK_SECRET: &str = "whsec_boxoffice_test";

/// localstripe (`boxoffice_testkit::harness::localstripe`) and what these tests do with it.
pub struct LocalStripe {
    pub base: String,
    _server: boxoffice_testkit::harness::localstripe::LocalStripe,
}

/// Starts localstripe, installing it first if missing.
pub fn start() -> LocalStripe {
    let server = boxoffice_testkit::harness::localstripe::LocalStripe::start();
    LocalStripe {
        base: server.base.clone(),
        _server: server,
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
