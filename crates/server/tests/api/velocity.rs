//! Payment velocity and buyer signals over HTTP: a card-testing script is stopped at the
//! event's limit before the provider sees its next call while honest buyers in the same
//! run all buy; a limit per client network reads the address trusted proxies name; the
//! operator reads the clusters a checkout joined; a network full of buyers is refused at
//! the join and the hold; declines that arrive by 3-D Secure webhook count once each and
//! lock the buyer out.

use boxoffice_domain::velocity::{
    SignalThreshold, SignalThresholds, VelocityLimits, VelocityRules,
};
use boxoffice_domain::{EventId, EventSpec};
use boxoffice_engine::ports::{PaymentGateway, ProviderState};
use boxoffice_payment_fake::FakeGateway;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::books::provider_book;
use crate::common::{TestApp, spawn, spawn_with, spec, uuid};
use crate::payments::post_webhook;

/// Every limit off: each test turns on the ones it shows.
pub(crate) fn no_limits() -> VelocityRules {
    let off = VelocityLimits {
        attempts: None,
        declines: None,
    };
    VelocityRules {
        per_buyer: off,
        per_card: off,
        per_network: off,
        lockout_declines: None,
        signals: SignalThresholds {
            per_device: SignalThreshold::default(),
            per_network: SignalThreshold::default(),
            per_card: SignalThreshold::default(),
        },
        ..VelocityRules::default()
    }
}

/// At most `n` checkouts in the window; declines are not limited.
fn attempts_only(n: u32) -> VelocityLimits {
    VelocityLimits {
        attempts: Some(n),
        declines: None,
    }
}

/// Only `n` checkouts per buyer in a one-minute window, every other limit off.
pub(crate) fn attempts_per_buyer(n: u32) -> VelocityRules {
    VelocityRules {
        window_s: 60,
        per_buyer: attempts_only(n),
        ..no_limits()
    }
}

/// A buyer's `n`th decline locks them out, every other limit off.
pub(crate) fn lockout_after(n: u32) -> VelocityRules {
    VelocityRules {
        lockout_declines: Some(n),
        ..no_limits()
    }
}

async fn event_with(app: &TestApp, rules: VelocityRules) -> EventId {
    let mut s: EventSpec = spec(10, 10, 0, 4);
    s.sale.velocity = Some(rules);
    app.create_event(&s).await
}

pub(crate) async fn hold_one(app: &TestApp, event: EventId, admission: &str) -> String {
    let body = json!({"best_available": {"section": "A", "quantity": 1}});
    let res = app.hold(event, admission, body).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let v: Value = res.json().await.unwrap();
    v["hold_id"].as_str().unwrap().to_string()
}

/// The seconds a refusal asks the client to wait before it tries again (Retry-After).
pub(crate) fn retry_after(res: &reqwest::Response) -> u64 {
    res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// How many authorizations reached the provider, and how many of them it declined.
pub(crate) async fn provider_calls(app: &TestApp) -> (usize, usize) {
    let all = provider_book(app.dir.path()).all_payments().await.unwrap();
    let declined = all
        .iter()
        .filter(|p| p.state == ProviderState::Declined)
        .count();
    (all.len(), declined)
}

/// Every waiting webhook, each delivered `times` times at once.
pub(crate) async fn deliver_each(app: &TestApp, fake: &FakeGateway, times: usize) {
    let webhooks = fake.undelivered_webhooks(100).await.unwrap();
    assert!(!webhooks.is_empty());
    let deliveries =
        (webhooks.iter()).flat_map(|w| (0..times).map(|_| post_webhook(app, fake, &w.payload)));
    let answers = futures::future::join_all(deliveries).await;
    assert!(answers.iter().all(|(s, _)| *s == 200), "{answers:?}");
    for w in &webhooks {
        fake.mark_delivered(w.seq).await.unwrap();
    }
}

async fn error_code(res: reqwest::Response) -> String {
    let v: Value = res.json().await.unwrap();
    v["error"].as_str().unwrap_or_default().to_string()
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 4, timeout_s = 120)]
async fn a_card_tester_is_stopped_before_the_provider_while_honest_buyers_buy() {
    let app = spawn().await;
    let rules = VelocityRules {
        lockout_declines: Some(3),
        per_buyer: VelocityLimits::new(50, 10),
        ..no_limits()
    };
    let event = event_with(&app, rules).await;
    let mut honest = Vec::new();
    for _ in 0..12 {
        honest.push(app.admitted_buyer(event).await);
    }
    let (tester, tester_admission) = app.admitted_buyer(event).await;
    let app = std::sync::Arc::new(app);

    let buyers = honest.into_iter().map(|(token, admission)| {
        let app = app.clone();
        tokio::spawn(async move {
            let hold = hold_one(&app, event, &admission).await;
            app.checkout(&hold, &token, "pm_card_visa").await.status()
        })
    });
    let script = {
        let app = app.clone();
        tokio::spawn(async move {
            let mut answers = Vec::new();
            let mut kept = None;
            for card in 0..8 {
                let hold = match kept.take() {
                    Some(h) => h,
                    None => hold_one(&app, event, &tester_admission).await,
                };
                let method = format!("pm_card_declined_400000000000{card:04}");
                let res = app.checkout(&hold, &tester, &method).await;
                let status = res.status();
                let code = error_code(res).await;
                if status == StatusCode::FORBIDDEN {
                    // A refused checkout left the hold as it was: the script tries it again.
                    kept = Some(hold);
                }
                answers.push((status, code));
            }
            answers
        })
    };
    let honest: Vec<StatusCode> = futures::future::join_all(buyers)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    let answers = script.await.unwrap();

    assert!(
        honest.iter().all(|s| *s == StatusCode::CREATED),
        "every honest buyer buys: {honest:?}"
    );
    let declined = (StatusCode::PAYMENT_REQUIRED, "payment_declined".to_string());
    let locked = (StatusCode::FORBIDDEN, "buyer_locked".to_string());
    assert_eq!(answers[..3], [declined.clone(), declined.clone(), declined]);
    assert!(answers[3..].iter().all(|a| *a == locked), "{answers:?}");
    // The provider saw the three declined cards and the honest buyers' payments, and
    // not one call of the script after the lockout.
    assert_eq!(provider_calls(&app).await, (12 + 3, 3));
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 60)]
async fn attempts_past_the_limit_wait_for_the_window_without_calling_the_provider() {
    let app = spawn().await;
    let rules = attempts_per_buyer(2);
    let event = event_with(&app, rules).await;
    let (token, admission) = app.admitted_buyer(event).await;
    for card in 0..2 {
        let hold = hold_one(&app, event, &admission).await;
        let res = app
            .checkout(&hold, &token, &format!("pm_card_declined_{card}"))
            .await;
        assert_eq!(res.status(), StatusCode::PAYMENT_REQUIRED);
    }
    let hold = hold_one(&app, event, &admission).await;
    let key = uuid();
    let path = format!("/v1/holds/{hold}/checkout");
    let body = json!({"payment_method": "pm_card_visa"});
    let res = app.post(&path, &token, &key, body.clone()).await;
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    let wait = retry_after(&res);
    assert!((1..=60).contains(&wait), "Retry-After {wait}");
    assert_eq!(error_code(res).await, "payment_velocity");
    assert_eq!(provider_calls(&app).await, (2, 2));
    // Once the window has moved on, the same request (same key) runs and is paid.
    app.clock.advance_secs(wait as i64);
    let res = app.post(&path, &token, &key, body).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(provider_calls(&app).await, (3, 2));
}

async fn checkout_via_proxy(
    app: &TestApp,
    hold: &str,
    token: &str,
    forwarded_for: &str,
) -> StatusCode {
    app.client
        .post(app.url(&format!("/v1/holds/{hold}/checkout")))
        .bearer_auth(token)
        .header("Idempotency-Key", uuid())
        .header("X-Forwarded-For", forwarded_for)
        .json(&json!({"payment_method": "pm_card_visa"}))
        .send()
        .await
        .unwrap()
        .status()
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 60)]
async fn a_network_limit_counts_the_client_the_trusted_proxy_names() {
    let app = spawn_with(|c| c.http.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()]).await;
    let rules = VelocityRules {
        per_network: attempts_only(2),
        ..no_limits()
    };
    let event = event_with(&app, rules).await;
    let attempt = async |forwarded_for: &str| {
        let (token, admission) = app.admitted_buyer(event).await;
        let hold = hold_one(&app, event, &admission).await;
        checkout_via_proxy(&app, &hold, &token, forwarded_for).await
    };
    assert_eq!(attempt("203.0.113.5").await, StatusCode::CREATED);
    assert_eq!(attempt("203.0.113.77").await, StatusCode::CREATED);
    // A third buyer of the same /24 is over the limit...
    assert_eq!(
        attempt("203.0.113.200").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    // ...whatever the client wrote to the left of what the proxy appended.
    let forged = "198.51.100.1, 203.0.113.9";
    assert_eq!(attempt(forged).await, StatusCode::TOO_MANY_REQUESTS);
    // Another network is not, even when it forges an address of the full one.
    let other = "203.0.113.5, 198.51.100.20";
    assert_eq!(attempt(other).await, StatusCode::CREATED);
    assert_eq!(provider_calls(&app).await, (3, 0));
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 60)]
async fn buyers_sharing_a_card_form_a_cluster_the_operator_reads() {
    let app = spawn().await;
    let mut rules = no_limits();
    rules.signals.per_card = SignalThreshold::new(Some(2), Some(3));
    rules.signals.per_network = SignalThreshold::new(Some(100), None);
    let event = event_with(&app, rules).await;
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let (token, admission) = app.admitted_buyer(event).await;
        let hold = hold_one(&app, event, &admission).await;
        let res = app.checkout(&hold, &token, "pm_card_visa").await;
        statuses.push((res.status(), error_code(res).await));
    }
    assert_eq!(statuses[0].0, StatusCode::CREATED);
    assert_eq!(statuses[1].0, StatusCode::CREATED);
    let refused = (StatusCode::FORBIDDEN, "too_many_buyers".to_string());
    assert_eq!(statuses[2], refused);

    let path = format!("/v1/events/{event}/signals");
    let res = app.get(&path, &app.operator_key).await;
    assert_eq!(res.status(), StatusCode::OK);
    let v: Value = res.json().await.unwrap();
    let clusters = v["clusters"].as_array().unwrap();
    let card = clusters.iter().find(|c| c["dimension"] == "card").unwrap();
    assert_eq!(card["buyers"], 2);
    assert_eq!(
        (card["flagged"].as_bool(), card["refusing"].as_bool()),
        (Some(true), Some(true))
    );
    // The three buyers came from the test's loopback network.
    let net = clusters
        .iter()
        .find(|c| c["dimension"] == "network")
        .unwrap();
    assert_eq!(
        (net["key"].as_str(), net["buyers"].as_u64()),
        (Some("127.0.0.0/24"), Some(3))
    );
    assert_eq!(net["flagged"], false);
    assert_eq!(provider_calls(&app).await, (2, 0));

    let (_, buyer) = app.buyer().await;
    let res = app.get(&path, &buyer).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let res = app.get(&format!("{path}?limit=0"), &app.operator_key).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
}

/// A hold through the trusted proxy, as the client at `forwarded_for`.
async fn hold_via_proxy(
    app: &TestApp,
    event: EventId,
    admission: &str,
    forwarded_for: &str,
) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/v1/events/{event}/holds")))
        .bearer_auth(admission)
        .header("Idempotency-Key", uuid())
        .header("X-Forwarded-For", forwarded_for)
        .json(&json!({"best_available": {"section": "A", "quantity": 1}}))
        .send()
        .await
        .unwrap()
}

/// Joins through the trusted proxy as the client at `forwarded_for`: (buyer token,
/// the answer).
async fn join_via_proxy(
    app: &TestApp,
    event: EventId,
    forwarded_for: &str,
) -> (String, reqwest::Response) {
    let (_, token) = app.buyer().await;
    let res = app
        .client
        .post(app.url(&format!("/v1/events/{event}/queue")))
        .bearer_auth(&token)
        .header("Idempotency-Key", uuid())
        .header("X-Forwarded-For", forwarded_for)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    (token, res)
}

async fn admission_of(app: &TestApp, event: EventId, joined: reqwest::Response) -> String {
    assert_eq!(joined.status(), StatusCode::OK);
    let v: Value = joined.json().await.unwrap();
    app.engine.admit_batch(event).await.unwrap();
    let ticket = v["queue_ticket"].as_str().unwrap();
    let status: Value = app
        .get("/v1/queue/status", ticket)
        .await
        .json()
        .await
        .unwrap();
    status["admission_token"].as_str().unwrap().to_string()
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 90)]
async fn a_network_full_of_buyers_is_refused_at_the_join_and_at_the_hold() {
    let app = spawn_with(|c| c.http.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()]).await;
    let mut rules = no_limits();
    // A third buyer on one /24 is refused.
    rules.signals.per_network = SignalThreshold::new(Some(2), Some(3));
    let event = event_with(&app, rules).await;
    let mut farm = Vec::new();
    for host in 1..=2 {
        let (_, res) = join_via_proxy(&app, event, &format!("198.51.100.{host}")).await;
        farm.push(admission_of(&app, event, res).await);
    }
    let (_, third) = join_via_proxy(&app, event, "198.51.100.3").await;
    assert_eq!(third.status(), StatusCode::FORBIDDEN);
    assert_eq!(error_code(third).await, "too_many_buyers");
    // The farm's own buyers still hold from it.
    let res = hold_via_proxy(&app, event, &farm[0], "198.51.100.1").await;
    assert_eq!(res.status(), StatusCode::CREATED);

    // A buyer who joined elsewhere is refused a hold from the full network, and the
    // refusal holds nothing and joins no cluster.
    let (_, res) = join_via_proxy(&app, event, "203.0.113.7").await;
    let roamer = admission_of(&app, event, res).await;
    let before = app.counts(event).await;
    let res = hold_via_proxy(&app, event, &roamer, "198.51.100.9").await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(error_code(res).await, "too_many_buyers");
    assert_eq!(app.counts(event).await, before);
    let res = hold_via_proxy(&app, event, &roamer, "203.0.113.8").await;
    assert_eq!(res.status(), StatusCode::CREATED);

    assert_eq!(
        network_clusters(&app, event).await,
        [
            ("198.51.100.0/24".to_string(), 2, true),
            ("203.0.113.0/24".to_string(), 1, false),
        ]
    );
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 4, timeout_s = 120)]
async fn declines_by_3ds_webhook_count_once_each_and_lock_the_buyer_out() {
    use boxoffice_payment_fake::methods;
    let app = spawn().await;
    let fake = crate::payments::provider(&app);
    let rules = lockout_after(2);
    let event = event_with(&app, rules).await;
    let (token, admission) = app.admitted_buyer(event).await;
    for attempt in 0..2 {
        let hold = hold_one(&app, event, &admission).await;
        let res = app.checkout(&hold, &token, methods::THREE_D_SECURE).await;
        assert_eq!(res.status(), StatusCode::ACCEPTED, "attempt {attempt}");
        let body: Value = res.json().await.unwrap();
        let order = crate::payments::order_id(&body);
        assert_eq!(
            fake.complete_action(order, false).await.unwrap(),
            ProviderState::Declined
        );
        // Every webhook of the order, each delivered three times at once.
        deliver_each(&app, &fake, 3).await;
        let settled = crate::payments::order(&app, &token, order).await;
        assert_eq!(settled["status"], "declined", "{settled}");
    }
    // Two declines, each counted once: the second reached the lockout.
    let hold = hold_one(&app, event, &admission).await;
    let res = app.checkout(&hold, &token, "pm_card_visa").await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(error_code(res).await, "buyer_locked");
    // The provider saw the two 3-D Secure payments and nothing after.
    assert_eq!(provider_calls(&app).await, (2, 2));
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 120)]
async fn one_decline_by_webhook_delivered_many_times_is_counted_once() {
    use boxoffice_payment_fake::methods;
    let app = spawn().await;
    let fake = crate::payments::provider(&app);
    let rules = lockout_after(2);
    let event = event_with(&app, rules).await;
    let (token, admission) = app.admitted_buyer(event).await;
    let hold = hold_one(&app, event, &admission).await;
    let res = app.checkout(&hold, &token, methods::THREE_D_SECURE).await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let order = crate::payments::order_id(&res.json().await.unwrap());
    fake.complete_action(order, false).await.unwrap();
    let webhooks = fake.undelivered_webhooks(100).await.unwrap();
    let deliveries = (0..5).flat_map(|_| {
        webhooks
            .iter()
            .map(|w| crate::payments::post_webhook(&app, &fake, &w.payload))
    });
    let answers = futures::future::join_all(deliveries).await;
    assert!(answers.iter().all(|(s, _)| *s == 200), "{answers:?}");
    assert_eq!(
        crate::payments::order(&app, &token, order).await["status"],
        "declined"
    );
    // One decline counted: the buyer may still pay (a second would lock them out).
    let hold = hold_one(&app, event, &admission).await;
    let res = app.checkout(&hold, &token, "pm_card_visa").await;
    assert_eq!(res.status(), StatusCode::CREATED);
}

/// The event's network clusters as the operator reads them: (network, buyers,
/// refusing).
async fn network_clusters(app: &TestApp, event: EventId) -> Vec<(String, u64, bool)> {
    let v: Value = app
        .get(&format!("/v1/events/{event}/signals"), &app.operator_key)
        .await
        .json()
        .await
        .unwrap();
    v["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["dimension"] == "network")
        .map(|c| {
            let key = c["key"].as_str().unwrap().to_string();
            (key, c["buyers"].as_u64().unwrap(), c["refusing"] == true)
        })
        .collect()
}

/// A node behind a trusted proxy, an event whose network cluster refuses a third
/// buyer, and one buyer admitted from 203.0.113.7: (the node, the event, the buyer's
/// admission token).
async fn admitted_behind_a_proxy() -> (TestApp, EventId, String) {
    let app = spawn_with(|c| c.http.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()]).await;
    let mut rules = no_limits();
    rules.signals.per_network = SignalThreshold::new(Some(2), Some(3));
    let event = event_with(&app, rules).await;
    let (_, res) = join_via_proxy(&app, event, "203.0.113.7").await;
    let admission = admission_of(&app, event, res).await;
    (app, event, admission)
}

/// A hold the event refuses (a seat it does not have) joined the buyer to their
/// network's cluster all the same, the signals being taken before the hold's own
/// checks: refused attempts could push a shared network towards `too_many_buyers`.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 90)]
async fn a_hold_refused_for_an_unknown_seat_joins_no_cluster() {
    let (app, event, admission) = admitted_behind_a_proxy().await;
    let before = network_clusters(&app, event).await;
    let res = app
        .client
        .post(app.url(&format!("/v1/events/{event}/holds")))
        .bearer_auth(&admission)
        .header("Idempotency-Key", uuid())
        .header("X-Forwarded-For", "198.51.100.9")
        .json(&json!({"seat_ids": ["NOPE"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert_eq!(error_code(res).await, "seat_not_found");
    assert_eq!(
        network_clusters(&app, event).await,
        before,
        "the refused hold joined a cluster"
    );
    // A hold the event takes joins the network's cluster.
    let res = hold_via_proxy(&app, event, &admission, "198.51.100.9").await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let after = network_clusters(&app, event).await;
    let joined = ("198.51.100.0/24".to_string(), 1, false);
    assert!(after.contains(&joined), "{after:?}");
}

/// On an event with velocity rules, a retried hold (the same Idempotency-Key) after the
/// sale closed is answered with the hold it took, as on any event: the hold's own
/// checks run in the claimed step, behind the replay store, not ahead of it.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 90)]
async fn a_retried_hold_is_replayed_after_the_sale_closed() {
    let (app, event, admission) = admitted_behind_a_proxy().await;
    let key = uuid();
    let hold = || async {
        app.client
            .post(app.url(&format!("/v1/events/{event}/holds")))
            .bearer_auth(&admission)
            .header("Idempotency-Key", &key)
            .header("X-Forwarded-For", "203.0.113.7")
            .json(&json!({"best_available": {"section": "A", "quantity": 1}}))
            .send()
            .await
            .unwrap()
    };
    let first = hold().await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.unwrap();
    let path = format!("/v1/events/{event}/close");
    let closed = app.post(&path, &app.operator_key, &uuid(), json!({})).await;
    assert!(closed.status().is_success(), "{}", closed.status());
    let again = hold().await;
    assert_eq!(again.status(), StatusCode::CREATED);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["hold_id"], first["hold_id"]);
}
