//! Identities that cost something: anonymous sign-up only when the operator allows it,
//! rate-limited per address, with replays that answer only to the client's own secret
//! key; and buyers signing in with an OpenID Connect provider's access tokens, through
//! every route that takes a buyer token.

use std::time::Duration;

use crate::common::*;
use boxoffice_domain::admission::Limit;
use boxoffice_engine::ports::Clock;
use boxoffice_oidc::testing::TestProvider;
use jsonwebtoken::Algorithm;
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn within<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(120), f)
        .await
        .expect("the test finished in time");
}

async fn sign_up(client: &reqwest::Client, app: &TestApp, key: &str) -> (StatusCode, Value) {
    let res = client
        .post(app.url("/v1/buyers"))
        .header("Idempotency-Key", key)
        .send()
        .await
        .unwrap();
    (res.status(), res.json().await.unwrap_or(Value::Null))
}

/// A client of its own (its own connections), from `ip` on the loopback network.
fn client_from(ip: [u8; 4]) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(std::net::IpAddr::from(ip))
        .build()
        .unwrap()
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn self_signup_is_refused_with_a_code_that_says_what_to_set_unless_the_operator_allows_it() {
    within(async {
        let app = spawn_with(|c| c.buyers.self_signup = None).await;
        let (status, body) = sign_up(&app.client, &app, &uuid()).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(body["error"], "self_signup_disabled");
        let message = body["message"].as_str().unwrap();
        assert!(message.contains("self_signup = true"), "{message}");
        app.stop().await;
        let demo = boxoffice_server::Config::default().for_demo(true);
        assert_eq!(demo.buyers.self_signup, Some(true), "on with --demo");
        let plain = boxoffice_server::Config::default().for_demo(false);
        assert_ne!(plain.buyers.self_signup, Some(true), "off without it");
        let mut said_no = boxoffice_server::Config::default();
        said_no.buyers.self_signup = Some(false);
        assert_eq!(said_no.for_demo(true).buyers.self_signup, Some(false));
    })
    .await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn self_signup_is_rate_limited_per_client_address() {
    within(async {
        let app = spawn_with(|c| c.buyers.signup_per_address = Limit { per_s: 1, burst: 2 }).await;
        let (a, b) = (client_from([127, 0, 0, 1]), client_from([127, 0, 0, 2]));
        assert_eq!(sign_up(&a, &app, &uuid()).await.0, StatusCode::CREATED);
        assert_eq!(sign_up(&a, &app, &uuid()).await.0, StatusCode::CREATED);
        let res = a
            .post(app.url("/v1/buyers"))
            .header("Idempotency-Key", uuid())
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(res.headers()["retry-after"], "1");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"], "rate_limited");
        assert!(body.get("token").is_none());
        let (status, _) = sign_up(&b, &app, &uuid()).await;
        assert_eq!(
            status,
            StatusCode::CREATED,
            "another address has its own allowance"
        );
        app.clock.advance_secs(1);
        assert_eq!(sign_up(&a, &app, &uuid()).await.0, StatusCode::CREATED);
        app.stop().await;
    })
    .await;
}

/// A sign-up is kept with its claim in the same ledger write as the buyer's row: a retry
/// with the same key is the first answer again, marked as a replay, and its token is a
/// working session of that one buyer.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_sign_up_gets_the_first_buyer_and_token_again() {
    within(async {
        let app = spawn().await;
        let key = uuid();
        let post = || {
            let req = app.client.post(app.url("/v1/buyers"));
            req.header("Idempotency-Key", &key).send()
        };
        let first = post().await.unwrap();
        assert_eq!(first.status(), StatusCode::CREATED);
        assert!(first.headers().get("idempotent-replayed").is_none());
        let first = first.bytes().await.unwrap();
        let again = post().await.unwrap();
        assert_eq!(again.status(), StatusCode::CREATED);
        assert_eq!(again.headers()["idempotent-replayed"], "true");
        assert_eq!(
            again.bytes().await.unwrap(),
            first,
            "the first answer, byte for byte"
        );
        let body: Value = serde_json::from_slice(&first).unwrap();
        let token = body["token"].as_str().unwrap();
        let me = app.get("/v1/me/orders", token).await;
        assert_eq!(me.status(), StatusCode::OK, "the kept token is a session");
        app.stop().await;
    })
    .await;
}

/// Replays used to be scoped by address: two people behind one NAT who copied the same
/// key from an example got the same buyer and token.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_behind_one_address_reusing_a_key_never_get_each_others_buyer() {
    within(async {
        let app = spawn().await;
        let (first, second) = (client_from([127, 0, 0, 1]), client_from([127, 0, 0, 1]));
        let shared = "7d3c0f0e-buyer";
        let (s1, b1) = sign_up(&first, &app, shared).await;
        let (s2, b2) = sign_up(&second, &app, shared).await;
        assert_eq!(
            s2,
            StatusCode::BAD_REQUEST,
            "first: {s1} {b1}; second: {b2}"
        );
        assert_eq!(b2["error"], "idempotency_key_weak");
        assert_eq!(
            s1,
            StatusCode::BAD_REQUEST,
            "a guessable key is refused up front"
        );
        assert!(b1.get("token").is_none() && b2.get("token").is_none());
        let (k1, k2) = (uuid(), uuid());
        let (_, mine) = sign_up(&first, &app, &k1).await;
        let (_, theirs) = sign_up(&second, &app, &k2).await;
        assert_ne!(mine["buyer_id"], theirs["buyer_id"]);
        app.stop().await;
    })
    .await;
}

/// The replay answers to the key, not the address: a phone that moved networks
/// between the lost answer and its retry gets its own buyer back.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_retrying_with_its_key_gets_its_own_buyer_back_from_any_address() {
    within(async {
        let app = spawn().await;
        let key = uuid();
        let (status, first) = sign_up(&client_from([127, 0, 0, 1]), &app, &key).await;
        assert_eq!(status, StatusCode::CREATED);
        let res = client_from([127, 0, 0, 3])
            .post(app.url("/v1/buyers"))
            .header("Idempotency-Key", &key)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
        assert_eq!(res.headers()["idempotent-replayed"], "true");
        let again: Value = res.json().await.unwrap();
        assert_eq!(again["buyer_id"], first["buyer_id"]);
        assert_eq!(again["token"], first["token"]);
        app.stop().await;
    })
    .await;
}

/// `POST /v1/me/token` with `token`: the status and the answer.
async fn renew(app: &TestApp, token: &str, key: &str) -> (StatusCode, Value, bool) {
    let res = app.post("/v1/me/token", token, key, json!({})).await;
    let replayed = res.headers().contains_key("idempotent-replayed");
    (
        res.status(),
        res.json().await.unwrap_or(Value::Null),
        replayed,
    )
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buyer_who_renews_their_token_keeps_their_orders_past_its_first_expiry() {
    within(async {
        let app = spawn().await;
        let event = app.create_event(&spec(1, 10, 0, 4)).await;
        let (status, first) = sign_up(&app.client, &app, &uuid()).await;
        assert_eq!(status, StatusCode::CREATED, "{first}");
        let token = first["token"].as_str().unwrap().to_owned();
        let admission = app.admit(event, &token).await;
        let res = app
            .hold(event, &admission, json!({"seat_ids": ["A-1-1"]}))
            .await;
        let hold: Value = res.json().await.unwrap();
        let res = app
            .checkout(hold["hold_id"].as_str().unwrap(), &token, "pm_card_visa")
            .await;
        assert_eq!(res.status(), StatusCode::CREATED);
        let order: Value = res.json().await.unwrap();
        let lapses = first["expires_at"].as_i64().unwrap();
        let now = app.clock.now().0;
        assert!(lapses > now + 29 * 86_400_000, "{first}");
        assert_eq!(lapses % 1000, 0, "a whole second, as the token carries it");

        // Twenty days on, the app renews: the same buyer and session, a later expiry.
        app.clock.advance_secs(20 * 86_400);
        let key = uuid();
        let (status, renewed, replayed) = renew(&app, &token, &key).await;
        assert_eq!(status, StatusCode::CREATED, "{renewed}");
        assert!(!replayed);
        assert_eq!(renewed["buyer_id"], first["buyer_id"]);
        let fresh = renewed["token"].as_str().unwrap().to_owned();
        assert_ne!(fresh, token);
        assert!(renewed["expires_at"].as_i64().unwrap() > lapses + 19 * 86_400_000);
        let (old, new) = (
            app.engine.identify(&token).await,
            app.engine.identify(&fresh).await,
        );
        assert_eq!(
            old.unwrap(),
            new.unwrap(),
            "same buyer, session and attestations"
        );
        // A lost answer's retry gets the same token back.
        let (status, again, replayed) = renew(&app, &token, &key).await;
        assert_eq!((status, replayed), (StatusCode::CREATED, true));
        assert_eq!(again, renewed);

        // Past the first token's expiry: it proves nothing and cannot be renewed; the
        // renewed one still reaches the buyer's order.
        app.clock.advance_secs(15 * 86_400);
        let res = app.get("/v1/me/orders", &token).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
        let (status, refused, _) = renew(&app, &token, &uuid()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(refused["error"], "token_expired", "{refused}");
        assert!(refused.get("token").is_none());
        let mine: Value = app.get("/v1/me/orders", &fresh).await.json().await.unwrap();
        assert_eq!(mine["orders"][0]["order_id"], order["order_id"], "{mine}");
        app.stop().await;
    })
    .await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_are_limited_per_buyer_and_a_refused_one_changes_nothing() {
    within(async {
        let app = spawn_with(|c| c.buyers.renew_per_buyer = Limit { per_s: 1, burst: 2 }).await;
        let (_, token) = app.buyer().await;
        for _ in 0..2 {
            assert_eq!(renew(&app, &token, &uuid()).await.0, StatusCode::CREATED);
        }
        let key = uuid();
        let res = app.post("/v1/me/token", &token, &key, json!({})).await;
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(res.headers()["retry-after"], "1");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"], "rate_limited");
        assert!(body.get("token").is_none());
        // Another buyer's allowance is their own; and the refused key was not kept.
        let (_, other) = app.buyer().await;
        assert_eq!(renew(&app, &other, &uuid()).await.0, StatusCode::CREATED);
        app.clock.advance_secs(1);
        let (status, renewed, replayed) = renew(&app, &token, &key).await;
        assert_eq!(
            (status, replayed),
            (StatusCode::CREATED, false),
            "{renewed}"
        );
        // Without a token, or with a forged one: 401, nothing minted.
        let (status, body, _) = renew(&app, "", &uuid()).await;
        assert_eq!(
            (status, &body["error"]),
            (StatusCode::UNAUTHORIZED, &json!("missing_token"))
        );
        let forged = format!("{}x", token);
        let (status, body, _) = renew(&app, &forged, &uuid()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        app.stop().await;
    })
    .await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_identity_providers_token_is_renewed_by_the_provider_not_here() {
    within(async {
        let (app, idp, kid) = with_provider(false).await;
        let token = idp.sign(&kid, &idp.claims("auth0|ada", app.clock.now()));
        assert_eq!(
            app.get("/v1/me/orders", &token).await.status(),
            StatusCode::OK
        );
        let (status, body, _) = renew(&app, &token, &uuid()).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(body["error"], "token_not_renewable");
        assert!(body.get("token").is_none());
        // The box office's own tokens are renewed beside a provider.
        let (_, own) = app.buyer().await;
        assert_eq!(renew(&app, &own, &uuid()).await.0, StatusCode::CREATED);
        app.stop().await;
    })
    .await;
}

async fn with_provider(require_session: bool) -> (TestApp, TestProvider, String) {
    let idp = TestProvider::start().await;
    let kid = idp.add_key(Algorithm::RS256);
    let oidc = idp.config();
    let app = spawn_with(move |c| {
        c.oidc = Some(oidc);
        c.engine.waiting.require_session_on_hold = require_session;
    })
    .await;
    (app, idp, kid)
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oidc_access_token_works_wherever_a_buyer_token_does() {
    within(async {
        let (app, idp, kid) = with_provider(true).await;
        let event = app.create_event(&spec(1, 10, 0, 4)).await;
        let token = idp.sign(&kid, &idp.claims("auth0|ada", app.clock.now()));
        let admission = app.admit(event, &token).await;
        let res = app
            .client
            .post(app.url(&format!("/v1/events/{event}/holds")))
            .bearer_auth(&admission)
            .header("X-Buyer-Session", &token)
            .header("Idempotency-Key", uuid())
            .json(&json!({"seat_ids": ["A-1-1"]}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
        let hold: Value = res.json().await.unwrap();
        let res = app
            .checkout(hold["hold_id"].as_str().unwrap(), &token, "pm_card_visa")
            .await;
        assert_eq!(res.status(), StatusCode::CREATED);
        let order: Value = res.json().await.unwrap();
        // A refreshed token of the same login is the same buyer.
        let mut later = idp.claims("auth0|ada", app.clock.now());
        later["iat"] = json!(app.clock.now().0 / 1000 + 60);
        let refreshed = idp.sign(&kid, &later);
        let mine: Value = app
            .get("/v1/me/orders", &refreshed)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(mine["orders"][0]["order_id"], order["order_id"]);
        // Recorded under the provider's subject, mapped to a buyer id; no buyer row needed.
        let id: boxoffice_domain::OrderId = order["order_id"].as_str().unwrap().parse().unwrap();
        let stored = app.engine.ports().ledger.order(id).await.unwrap().unwrap();
        assert_eq!(
            stored.buyer,
            boxoffice_oidc::buyer_id(&idp.issuer, "auth0|ada")
        );
        app.stop().await;
    })
    .await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oidc_token_from_the_wrong_issuer_is_refused_and_changes_nothing() {
    within(async {
        let (app, idp, kid) = with_provider(false).await;
        let event = app.create_event(&spec(1, 10, 0, 4)).await;
        let mut claims = idp.claims("mallory", app.clock.now());
        claims["iss"] = json!("https://attacker.example/");
        let foreign = idp.sign(&kid, &claims);
        let path = format!("/v1/events/{event}/queue");
        let res = app.post(&path, &foreign, &uuid(), json!({})).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            res.json::<Value>().await.unwrap()["error"],
            "token_wrong_issuer"
        );
        let state: Value = app.get(&path, "").await.json().await.unwrap();
        assert_eq!(state["queue_length"], 0, "nobody joined: {state}");
        let res = app.get("/v1/me/orders", &foreign).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
        app.stop().await;
    })
    .await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn oidc_tokens_refused_for_audience_expiry_key_or_signature_carry_their_own_401_code() {
    within(async {
        let (app, idp, kid) = with_provider(false).await;
        let now = app.clock.now();
        let good = idp.claims("oscar", now);
        let with = |k: &str, v: Value| {
            let mut c = good.clone();
            c[k] = v;
            idp.sign(&kid, &c)
        };
        let (stranger, _) = idp.add_unpublished_key(Algorithm::ES256);
        let token = idp.sign(&kid, &good);
        let (signed, _) = token.rsplit_once('.').unwrap();
        let cases = [
            (with("aud", json!("someone-else")), "token_wrong_audience"),
            (with("exp", json!(now.0 / 1000 - 3600)), "token_expired"),
            (idp.sign(&stranger, &good), "token_unknown_key"),
            (format!("{signed}.{}", "A".repeat(342)), "invalid_token"),
        ];
        for (token, code) in cases {
            let res = app.get("/v1/me/orders", &token).await;
            assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{code}");
            assert_eq!(res.json::<Value>().await.unwrap()["error"], code);
        }
        assert_eq!(
            app.get("/v1/me/orders", &token).await.status(),
            StatusCode::OK
        );
        app.stop().await;
    })
    .await;
}
