//! Admission that cannot change hands (proof of possession, RFC 9449 DPoP) through
//! HTTP: each client binds its admission to a key at join and proves it at every hold,
//! checkout and release. A token copied to a client with another key, a replayed
//! proof, a stale one and one made for another request are refused with a coded 401
//! that changes nothing; the race of many buyers for few seats holds with proofs
//! required (`race.rs`).

mod ed25519;
mod exchange;
mod race;
mod retry;

use boxoffice_domain::EventSpec;
use boxoffice_domain::possession::{PopMode, ProofKey};
use boxoffice_domain::token::{Claims, KeyRing, TokenKind};
use boxoffice_domain::{BuyerId, EventId};
use boxoffice_engine::ports::Clock;
use boxoffice_testkit::harness::{proof, proof_key};
use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};

use crate::common::*;

/// The usual test event (two rows of five, four per buyer) with proofs in `mode`.
fn event_spec(mode: PopMode) -> EventSpec {
    let mut spec = spec(2, 5, 0, 4);
    spec.sale.proof_of_possession = mode;
    spec
}

/// A buyer's client: its session token, its key and, once admitted, its admission.
struct Client {
    token: String,
    key: ProofKey,
    admission: String,
}

fn now_s(app: &TestApp) -> i64 {
    app.clock.now().0 / 1000
}

/// A request with an Idempotency-Key and, when given, a `DPoP` proof.
async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    dpop: Option<String>,
    body: Value,
) -> Response {
    let mut req = app
        .client
        .request(method, app.url(path))
        .bearer_auth(token)
        .header("Idempotency-Key", uuid())
        .json(&body);
    if let Some(p) = dpop {
        req = req.header("DPoP", p);
    }
    req.send().await.unwrap()
}

/// (status, error code) of a refusal.
async fn refusal(res: Response) -> (StatusCode, String) {
    let status = res.status();
    let body: Value = res.json().await.unwrap();
    (
        status,
        body["error"].as_str().unwrap_or_default().to_string(),
    )
}

/// Joins with a proof of `key` (or none), is admitted, and returns the admission token.
async fn join(app: &TestApp, event: EventId, token: &str, key: Option<&ProofKey>) -> Response {
    let path = format!("/v1/events/{event}/queue");
    let dpop = key.map(|k| proof(k, "POST", &path, now_s(app)));
    send(app, Method::POST, &path, token, dpop, json!({})).await
}

async fn admitted(app: &TestApp, event: EventId, key: Option<&ProofKey>) -> Client {
    let (_, token) = app.buyer().await;
    let res = join(app, event, &token, key).await;
    assert_eq!(res.status(), StatusCode::OK);
    let ticket = res.json::<Value>().await.unwrap()["queue_ticket"]
        .as_str()
        .unwrap()
        .to_string();
    app.engine.admit_batch(event).await.unwrap();
    let status: Value = app
        .get("/v1/queue/status", &ticket)
        .await
        .json()
        .await
        .unwrap();
    let admission = status["admission_token"]
        .as_str()
        .unwrap_or_else(|| panic!("not admitted: {status}"))
        .to_string();
    Client {
        token,
        key: key.cloned().unwrap_or_else(proof_key),
        admission,
    }
}

/// A fresh app with an event that requires proofs, and a client admitted to it with
/// `key` bound at its join: the set-up of the tests of each algorithm's proofs.
async fn admitted_with(key: ProofKey) -> (TestApp, EventId, Client) {
    let app = spawn().await;
    let event = app.create_event(&event_spec(PopMode::Required)).await;
    let client = admitted(&app, event, Some(&key)).await;
    (app, event, client)
}

/// `client`'s proofs for a hold made 61 s ago (the window is 60 s,
/// engine.proofs.max_age_s) or 6 s ahead (5 s of skew allowed) are refused as stale.
async fn refuses_stale_proofs(app: &TestApp, event: EventId, client: &Client) {
    let path = holds_path(event);
    for iat in [now_s(app) - 61, now_s(app) + 6] {
        let p = client.key.proof("POST", &path, iat, &uuid());
        let refused = refusal(hold(app, event, &client.admission, Some(p)).await).await;
        assert_eq!(refused, (StatusCode::UNAUTHORIZED, "proof_stale".into()));
    }
}

fn holds_path(event: EventId) -> String {
    format!("/v1/events/{event}/holds")
}

async fn hold(app: &TestApp, event: EventId, admission: &str, dpop: Option<String>) -> Response {
    let body = json!({"best_available": {"section": "A", "quantity": 1}});
    send(app, Method::POST, &holds_path(event), admission, dpop, body).await
}

/// A hold made with `client`'s own proof: its id.
async fn held(app: &TestApp, event: EventId, client: &Client) -> String {
    let dpop = proof(&client.key, "POST", &holds_path(event), now_s(app));
    let res = hold(app, event, &client.admission, Some(dpop)).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    res.json::<Value>().await.unwrap()["hold_id"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn checkout(app: &TestApp, hold: &str, token: &str, dpop: Option<String>) -> Response {
    let path = format!("/v1/holds/{hold}/checkout");
    let body = json!({"payment_method": "pm_card_visa"});
    send(app, Method::POST, &path, token, dpop, body).await
}

/// Held and sold seats, which no refusal may change.
async fn counts(app: &TestApp, event: EventId) -> (Value, Value) {
    let c = app.counts(event).await;
    (c["held"].clone(), c["sold"].clone())
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_copied_to_a_client_with_another_key_is_refused() {
    let (app, event, owner) = admitted_with(proof_key()).await;
    let thief = proof_key();
    let before = counts(&app, event).await;
    // The copied admission token, with the thief's own proof or with none.
    let stolen = proof(&thief, "POST", &holds_path(event), now_s(&app));
    let refused = refusal(hold(&app, event, &owner.admission, Some(stolen)).await).await;
    assert_eq!(
        refused,
        (StatusCode::UNAUTHORIZED, "proof_key_mismatch".into())
    );
    let refused = refusal(hold(&app, event, &owner.admission, None).await).await;
    assert_eq!(refused, (StatusCode::UNAUTHORIZED, "proof_required".into()));
    assert_eq!(
        counts(&app, event).await,
        before,
        "the refusals changed nothing"
    );
    // The owner holds; a copy of the owner's buyer token cannot pay or release it.
    let hold_id = held(&app, event, &owner).await;
    let path = format!("/v1/holds/{hold_id}/checkout");
    let stolen = proof(&thief, "POST", &path, now_s(&app));
    let refused = refusal(checkout(&app, &hold_id, &owner.token, Some(stolen)).await).await;
    assert_eq!(
        refused,
        (StatusCode::UNAUTHORIZED, "proof_key_mismatch".into())
    );
    let release = format!("/v1/holds/{hold_id}");
    let stolen = proof(&thief, "DELETE", &release, now_s(&app));
    let res = send(
        &app,
        Method::DELETE,
        &release,
        &owner.token,
        Some(stolen),
        json!({}),
    )
    .await;
    assert_eq!(refusal(res).await.1, "proof_key_mismatch");
    let refused = refusal(checkout(&app, &hold_id, &owner.token, None).await).await;
    assert_eq!(refused, (StatusCode::UNAUTHORIZED, "proof_required".into()));
    assert_eq!(counts(&app, event).await, (json!(1), json!(0)));
    // The owner's own proof pays.
    let own = proof(&owner.key, "POST", &path, now_s(&app));
    let res = checkout(&app, &hold_id, &owner.token, Some(own)).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(counts(&app, event).await, (json!(0), json!(1)));
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_proof_is_refused_and_changes_nothing() {
    let (app, event, client) = admitted_with(proof_key()).await;
    let once = proof(&client.key, "POST", &holds_path(event), now_s(&app));
    let res = hold(&app, event, &client.admission, Some(once.clone())).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let before = counts(&app, event).await;
    let again = refusal(hold(&app, event, &client.admission, Some(once)).await).await;
    assert_eq!(again, (StatusCode::UNAUTHORIZED, "proof_replayed".into()));
    assert_eq!(counts(&app, event).await, before);
    // A join's proof is one use too.
    let (_, token) = app.buyer().await;
    let path = format!("/v1/events/{event}/queue");
    let p = proof(&client.key, "POST", &path, now_s(&app));
    let first = send(
        &app,
        Method::POST,
        &path,
        &token,
        Some(p.clone()),
        json!({}),
    )
    .await;
    assert_eq!(first.status(), StatusCode::OK);
    let second = send(&app, Method::POST, &path, &token, Some(p), json!({})).await;
    assert_eq!(refusal(second).await.1, "proof_replayed");
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proof_older_than_the_window_or_ahead_of_the_clock_is_stale() {
    let (app, event, client) = admitted_with(proof_key()).await;
    let path = holds_path(event);
    let before = counts(&app, event).await;
    refuses_stale_proofs(&app, event, &client).await;
    assert_eq!(counts(&app, event).await, before);
    // A proof made now goes stale while it waits: the clock moves past the window.
    let p = proof(&client.key, "POST", &path, now_s(&app));
    app.clock.advance_secs(61);
    let refused = refusal(hold(&app, event, &client.admission, Some(p)).await).await;
    assert_eq!(refused.1, "proof_stale");
    let p = client.key.proof("POST", &path, now_s(&app) - 59, &uuid());
    let res = hold(&app, event, &client.admission, Some(p)).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proof_for_another_path_or_method_is_refused() {
    let (app, event, client) = admitted_with(proof_key()).await;
    let before = counts(&app, event).await;
    let other_event = format!("/v1/events/{}/holds", event.0 + 1);
    let wrong = [
        proof(&client.key, "POST", &other_event, now_s(&app)),
        proof(&client.key, "PUT", &holds_path(event), now_s(&app)),
        proof(
            &client.key,
            "POST",
            &format!("/v1/events/{event}/queue"),
            now_s(&app),
        ),
    ];
    for p in wrong {
        let refused = refusal(hold(&app, event, &client.admission, Some(p)).await).await;
        assert_eq!(refused, (StatusCode::UNAUTHORIZED, "proof_invalid".into()));
    }
    // A hold's proof does not pay for it either.
    let hold_id = held(&app, event, &client).await;
    let p = proof(&client.key, "POST", &holds_path(event), now_s(&app));
    let refused = refusal(checkout(&app, &hold_id, &client.token, Some(p)).await).await;
    assert_eq!(refused.1, "proof_invalid");
    let garbage = refusal(checkout(&app, &hold_id, &client.token, Some("x.y.z".into())).await);
    assert_eq!(garbage.await.1, "proof_invalid");
    assert_eq!(counts(&app, event).await.1, before.1, "nothing sold");
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_proofs_refuse_a_join_without_a_key_and_a_token_bound_to_none() {
    let app = spawn().await;
    let event = app.create_event(&event_spec(PopMode::Required)).await;
    let (_, token) = app.buyer().await;
    let refused = refusal(join(&app, event, &token, None).await).await;
    assert_eq!(refused, (StatusCode::UNAUTHORIZED, "proof_required".into()));
    // An admission token the server signed without `cnf` (as before the event asked
    // for proofs) is refused even with a proof.
    let keys = boxoffice_server::secrets::signing_keys(app.dir.path()).unwrap();
    let ring = KeyRing::new(keys).unwrap();
    let claims = Claims {
        event: Some(event),
        position: Some(1),
        ..Claims::new(
            TokenKind::Admission,
            BuyerId::random(),
            "s".into(),
            app.clock.now().plus_secs(600),
        )
    };
    let unbound = ring.sign(claims);
    let p = proof(&proof_key(), "POST", &holds_path(event), now_s(&app));
    let refused = refusal(hold(&app, event, &unbound, Some(p)).await).await;
    assert_eq!(refused, (StatusCode::UNAUTHORIZED, "proof_required".into()));
    assert_eq!(counts(&app, event).await, (json!(0), json!(0)));
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn optional_proofs_bind_only_the_clients_that_send_a_key() {
    let app = spawn().await;
    let event = app.create_event(&event_spec(PopMode::Optional)).await;
    // No key at join: nothing is asked later.
    let plain = admitted(&app, event, None).await;
    let res = hold(&app, event, &plain.admission, None).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let hold_id = res.json::<Value>().await.unwrap()["hold_id"]
        .as_str()
        .unwrap()
        .to_string();
    let res = checkout(&app, &hold_id, &plain.token, None).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    // A key at join: the admission needs its proof from then on, and its holds too.
    let bound = admitted(&app, event, Some(&proof_key())).await;
    let refused = refusal(hold(&app, event, &bound.admission, None).await).await;
    assert_eq!(refused, (StatusCode::UNAUTHORIZED, "proof_required".into()));
    let hold_id = held(&app, event, &bound).await;
    let release = format!("/v1/holds/{hold_id}");
    let res = send(
        &app,
        Method::DELETE,
        &release,
        &bound.token,
        None,
        json!({}),
    )
    .await;
    assert_eq!(refusal(res).await.1, "proof_required");
    let p = proof(&bound.key, "DELETE", &release, now_s(&app));
    let res = send(
        &app,
        Method::DELETE,
        &release,
        &bound.token,
        Some(p),
        json!({}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.json::<Value>().await.unwrap()["status"], "released");
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_proofs_a_dpop_header_is_ignored() {
    let app = spawn().await;
    let event = app.create_event(&event_spec(PopMode::Off)).await;
    let key = proof_key();
    let client = admitted(&app, event, Some(&key)).await;
    // Off: the join bound nothing, so the token moves freely (as before this setting).
    let res = hold(&app, event, &client.admission, None).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    app.stop().await;
}

/// A device key is what the checkout's proof proved: buyers sharing one key (one bot's
/// device) form one cluster, and the event's threshold refuses the buyer that would
/// pass it before the provider is called.
/// The event's device and network clusters as the operator reads them.
async fn clusters(app: &TestApp, event: EventId) -> Vec<Value> {
    let res = app
        .get(&format!("/v1/events/{event}/signals"), &app.operator_key)
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let v = res.json::<Value>().await.unwrap();
    v["clusters"].as_array().unwrap().clone()
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 90)]
async fn ten_accounts_proving_one_key_are_refused_at_the_join_past_the_threshold() {
    use boxoffice_domain::velocity::{SignalThreshold, VelocityRules};
    let app = spawn().await;
    let mut spec = event_spec(PopMode::Required);
    let mut rules = VelocityRules::default();
    // A fourth buyer on one device is refused; the network only counts (flag at 50).
    rules.signals.per_device = SignalThreshold::new(Some(2), Some(4));
    rules.signals.per_card = SignalThreshold::default();
    spec.sale.velocity = Some(rules);
    let event = app.create_event(&spec).await;
    let shared = proof_key();
    let mut answers = Vec::new();
    let mut joined = Vec::new();
    for _ in 0..10 {
        let (_, token) = app.buyer().await;
        let res = join(&app, event, &token, Some(&shared)).await;
        if res.status() == StatusCode::OK {
            let v = res.json::<Value>().await.unwrap();
            joined.push((token, v["queue_ticket"].as_str().unwrap().to_string()));
            answers.push((StatusCode::OK, String::new()));
        } else {
            answers.push(refusal(res).await);
        }
    }
    let refused = (StatusCode::FORBIDDEN, "too_many_buyers".to_string());
    assert!(
        answers[..3].iter().all(|a| a.0 == StatusCode::OK),
        "{answers:?}"
    );
    assert!(answers[3..].iter().all(|a| *a == refused), "{answers:?}");
    // A refused join took no place: the line holds the three who joined.
    let queue = app.engine.waiting_stats(event).await.unwrap().queue;
    assert_eq!(queue.queue_length, 3, "{queue:?}");

    let clusters = clusters(&app, event).await;
    let of = |d: &str| {
        clusters
            .iter()
            .find(|c| c["dimension"] == d)
            .unwrap_or_else(|| panic!("no {d} cluster: {clusters:?}"))
            .clone()
    };
    let device = of("device");
    assert_eq!(
        (&device["buyers"], &device["flagged"], &device["refusing"]),
        (&json!(3), &json!(true), &json!(true))
    );
    // A refused join joined no cluster: the network saw the same three buyers.
    assert_eq!(of("network")["buyers"], json!(3));
    // The key's own buyers go on: a hold and a checkout with the shared key.
    app.engine.admit_batch(event).await.unwrap();
    let (token, ticket) = joined.swap_remove(0);
    let status: Value = app
        .get("/v1/queue/status", &ticket)
        .await
        .json()
        .await
        .unwrap();
    let client = Client {
        token,
        key: shared.clone(),
        admission: status["admission_token"].as_str().unwrap().to_string(),
    };
    let hold = held(&app, event, &client).await;
    let path = format!("/v1/holds/{hold}/checkout");
    let dpop = proof(&client.key, "POST", &path, now_s(&app));
    let res = checkout(&app, &hold, &client.token, Some(dpop)).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(of("device")["buyers"], json!(3));
}
