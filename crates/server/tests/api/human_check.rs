//! The hosted human check at joining, against a siteverify stand-in this test starts
//! over HTTPS on loopback: a "no" is a coded 403 that queues nothing, a check used
//! once cannot be used by another buyer, a verifier that is down or slow fails open or
//! closed as the event says, and every outcome is counted in /metrics.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::common::*;
use boxoffice_domain::EventId;
use boxoffice_server::Config;
use boxoffice_server::human_check::{HumanCheckConfig, VerifierAccount};
use boxoffice_testkit::siteverify_stub::{SITEVERIFY_SECRET, SiteverifyStub};
use boxoffice_testkit::tls::TestCa;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// A stand-in verifier and the CA file the server trusts it with.
struct Verifier {
    stub: SiteverifyStub,
    ca_file: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

async fn verifier() -> Verifier {
    let ca = TestCa::new("siteverify test CA");
    let stub = SiteverifyStub::start(&ca).await;
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.cert_pem()).unwrap();
    Verifier {
        stub,
        ca_file,
        _dir: dir,
    }
}

fn account(site_key: &str, url: &str) -> Option<VerifierAccount> {
    Some(VerifierAccount {
        site_key: site_key.into(),
        secret: SITEVERIFY_SECRET.into(),
        verify_url: Some(url.into()),
    })
}

/// A node with a Turnstile account at the stand-in `v`, set up further by `tweak`.
async fn with_turnstile(v: &Verifier, tweak: impl FnOnce(&mut Config)) -> TestApp {
    let (url, ca) = (v.stub.url.clone(), v.ca_file.clone());
    spawn_with(move |c| {
        c.human_check = HumanCheckConfig {
            turnstile: account("site-key-turnstile", &url),
            ca_file: Some(ca),
            ..HumanCheckConfig::default()
        };
        tweak(c);
    })
    .await
}

async fn set_rules(app: &TestApp, event: EventId, rules: Value) -> reqwest::Response {
    app.client
        .put(app.url(&format!("/v1/events/{event}/waiting-room")))
        .bearer_auth(&app.operator_key)
        .json(&rules)
        .send()
        .await
        .unwrap()
}

async fn join(app: &TestApp, event: EventId, token: &str, body: Value) -> reqwest::Response {
    app.post(&format!("/v1/events/{event}/queue"), token, &uuid(), body)
        .await
}

async fn error_of(res: reqwest::Response) -> (StatusCode, String) {
    let status = res.status();
    let body: Value = res.json().await.unwrap();
    (
        status,
        body["error"].as_str().unwrap_or_default().to_owned(),
    )
}

async fn line_length(app: &TestApp, event: EventId) -> u64 {
    app.engine.queue_state(event).await.unwrap().queue_length
}

/// `boxoffice_human_checks_total` for one provider and outcome (0 when never counted).
async fn counted(app: &TestApp, provider: &str, outcome: &str) -> u64 {
    let text = app.get("/metrics", "").await.text().await.unwrap();
    let (p, o) = (
        format!("provider=\"{provider}\""),
        format!("outcome=\"{outcome}\""),
    );
    text.lines()
        .filter(|l| l.starts_with("boxoffice_human_checks_total{"))
        .find(|l| l.contains(&p) && l.contains(&o))
        .and_then(|l| l.rsplit(' ').next())
        .map(|v| v.parse::<f64>().unwrap() as u64)
        .unwrap_or(0)
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_is_refused_and_queues_nothing_and_a_passed_check_lets_one_buyer_in() {
    let v = verifier().await;
    let app = with_turnstile(&v, |_| {}).await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let res = set_rules(
        &app,
        event,
        json!({"human_check": {"kind": "hosted", "provider": "turnstile"}}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let rules = res.text().await.unwrap();
    assert!(
        !rules.contains(SITEVERIFY_SECRET),
        "the secret never leaves"
    );
    // The public document tells the client which widget to draw, and with what key.
    let doc = crate::waiting_room::public_queue(&app, event).await;
    assert_eq!(
        doc["human_check"],
        json!({"kind": "hosted", "provider": "turnstile", "site_key": "site-key-turnstile"})
    );

    let (buyer_a, a) = app.buyer().await;
    let (_, b) = app.buyer().await;
    assert_eq!(
        error_of(join(&app, event, &a, json!({})).await).await,
        (StatusCode::FORBIDDEN, "human_check_required".into())
    );
    assert_eq!(
        error_of(join(&app, event, &a, json!({"human_check_token": "forged"})).await).await,
        (StatusCode::FORBIDDEN, "human_check_failed".into())
    );
    assert_eq!(
        line_length(&app, event).await,
        0,
        "a refused join queues nothing"
    );

    let res = join(&app, event, &a, json!({"human_check_token": "pass-1"})).await;
    assert_eq!(res.status(), StatusCode::OK);
    let joined: Value = res.json().await.unwrap();
    assert_eq!(joined["position"], 1);
    assert_eq!(line_length(&app, event).await, 1);
    let calls = v.stub.state.calls();
    assert_eq!(
        calls.len(),
        2,
        "the forged and the good token were each asked once"
    );
    assert_eq!(calls[1].secret, SITEVERIFY_SECRET);
    assert_eq!(calls[1].response, "pass-1");
    assert_eq!(calls[1].remoteip.as_deref(), Some("127.0.0.1"));

    // Another buyer with the same token: refused before the verifier is asked.
    assert_eq!(
        error_of(join(&app, event, &b, json!({"human_check_token": "pass-1"})).await).await,
        (StatusCode::FORBIDDEN, "human_check_reused".into())
    );
    assert_eq!(v.stub.state.calls().len(), 2);
    assert_eq!(line_length(&app, event).await, 1);
    // The buyer it let in, retrying their join, keeps their place.
    let res = join(&app, event, &a, json!({"human_check_token": "pass-1"})).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.json::<Value>().await.unwrap()["position"], 1);
    assert_eq!(line_length(&app, event).await, 1);
    assert!(!buyer_a.is_empty());

    // Twenty buyers racing with one fresh token: exactly one gets in.
    let mut racers = Vec::new();
    for _ in 0..20 {
        racers.push(app.buyer().await.1);
    }
    let joins = racers
        .iter()
        .map(|t| join(&app, event, t, json!({"human_check_token": "pass-race"})));
    let answers = futures::future::join_all(joins).await;
    let mut ok = 0;
    for res in answers {
        match res.status() {
            StatusCode::OK => ok += 1,
            _ => assert_eq!(error_of(res).await.1, "human_check_reused"),
        }
    }
    assert_eq!(ok, 1, "one token, one buyer");
    assert_eq!(line_length(&app, event).await, 2);

    assert_eq!(counted(&app, "turnstile", "missing").await, 1);
    assert_eq!(counted(&app, "turnstile", "failed").await, 1);
    assert_eq!(counted(&app, "turnstile", "passed").await, 2);
    assert_eq!(counted(&app, "turnstile", "retried").await, 1);
    assert_eq!(counted(&app, "turnstile", "reused").await, 20);
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verifier_that_is_down_fails_closed_or_open_as_each_event_says() {
    let v = verifier().await;
    let (url, ca) = (v.stub.url.clone(), v.ca_file.clone());
    let app = spawn_with(move |c| {
        c.human_check = HumanCheckConfig {
            hcaptcha: account("site-key-hcaptcha", &url),
            ca_file: Some(ca),
            ..HumanCheckConfig::default()
        }
    })
    .await;
    let closed = app.create_event(&spec(1, 10, 0, 4)).await;
    let open = app.create_event(&spec(1, 10, 0, 4)).await;
    let hosted = |when_down: &str| json!({"human_check": {"kind": "hosted", "provider": "hcaptcha", "when_down": when_down}});
    assert_eq!(
        set_rules(&app, closed, hosted("closed")).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        set_rules(&app, open, hosted("open")).await.status(),
        StatusCode::OK
    );
    v.stub.state.unavailable.store(true, Ordering::Relaxed);
    let (_, a) = app.buyer().await;
    let (_, b) = app.buyer().await;

    let res = join(&app, closed, &a, json!({"human_check_token": "pass-a"})).await;
    assert!(res.headers().contains_key("retry-after"));
    assert_eq!(
        error_of(res).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "human_check_unavailable".into()
        )
    );
    assert_eq!(
        line_length(&app, closed).await,
        0,
        "fail-closed queues nothing"
    );

    let res = join(&app, open, &a, json!({"human_check_token": "pass-b"})).await;
    assert_eq!(res.status(), StatusCode::OK, "fail-open lets the buyer in");
    assert_eq!(line_length(&app, open).await, 1);
    // Unchecked, but still single-use: nobody else gets in on it.
    assert_eq!(
        error_of(join(&app, open, &b, json!({"human_check_token": "pass-b"})).await).await,
        (StatusCode::FORBIDDEN, "human_check_reused".into())
    );
    // A missing check is refused whatever the verifier's state.
    assert_eq!(
        error_of(join(&app, open, &b, json!({})).await).await,
        (StatusCode::FORBIDDEN, "human_check_required".into())
    );
    let calls = v.stub.state.calls();
    assert!(
        calls
            .iter()
            .all(|c| c.sitekey.as_deref() == Some("site-key-hcaptcha")),
        "hCaptcha is told the site key: {calls:?}"
    );

    // The verifier back: the closed event lets a checked buyer in again.
    v.stub.state.unavailable.store(false, Ordering::Relaxed);
    let res = join(&app, closed, &a, json!({"human_check_token": "pass-a2"})).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(line_length(&app, closed).await, 1);

    assert_eq!(counted(&app, "hcaptcha", "verifier_error").await, 2);
    assert_eq!(counted(&app, "hcaptcha", "fail_open_admit").await, 1);
    assert_eq!(counted(&app, "hcaptcha", "passed").await, 1);
    assert_eq!(counted(&app, "hcaptcha", "reused").await, 1);
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_or_unreachable_verifier_is_given_up_on_within_the_timeout() {
    let v = verifier().await;
    v.stub.state.delay_ms.store(10_000, Ordering::Relaxed);
    // A port nobody listens on.
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let unreachable = format!("https://{}/siteverify", closed_port.local_addr().unwrap());
    drop(closed_port);
    let (url, ca) = (v.stub.url.clone(), v.ca_file.clone());
    let app = spawn_with(move |c| {
        c.human_check = HumanCheckConfig {
            timeout_ms: 300,
            recaptcha: account("site-key-recaptcha", &url),
            turnstile: account("site-key-turnstile", &unreachable),
            ca_file: Some(ca),
            ..HumanCheckConfig::default()
        }
    })
    .await;
    for provider in ["recaptcha", "turnstile"] {
        let event = app.create_event(&spec(1, 10, 0, 4)).await;
        let rules = json!({"human_check": {"kind": "hosted", "provider": provider}});
        assert_eq!(set_rules(&app, event, rules).await.status(), StatusCode::OK);
        let (_, a) = app.buyer().await;
        let started = Instant::now();
        let res = join(&app, event, &a, json!({"human_check_token": "pass-slow"})).await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{provider}: answered after {:?}",
            started.elapsed()
        );
        assert_eq!(
            error_of(res).await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "human_check_unavailable".into()
            ),
            "{provider}"
        );
        assert_eq!(line_length(&app, event).await, 0);
    }
    app.stop().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_asking_a_check_the_server_cannot_make_are_refused() {
    let v = verifier().await;
    let (url, ca) = (v.stub.url.clone(), v.ca_file.clone());
    let app = spawn_with(move |c| {
        c.human_check = HumanCheckConfig {
            turnstile: account("site-key-turnstile", &url),
            ca_file: Some(ca),
            ..HumanCheckConfig::default()
        }
    })
    .await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    for rules in [
        json!({"human_check": {"kind": "hosted", "provider": "hcaptcha"}}),
        json!({"human_check": {"kind": "hosted", "provider": "turnstile"}, "pow_difficulty": 8}),
        json!({"human_check": {"kind": "proof_of_work"}}),
        json!({"human_check": {"kind": "hosted", "provider": "turnstile", "when_down": "maybe"}}),
    ] {
        let res = set_rules(&app, event, rules.clone()).await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{rules}");
    }
    // Nothing changed: the event still asks no check.
    let (_, a) = app.buyer().await;
    assert_eq!(
        join(&app, event, &a, json!({})).await.status(),
        StatusCode::OK
    );
    // The self-hosted challenge named explicitly is the proof of work.
    let other = app.create_event(&spec(1, 10, 0, 4)).await;
    let rules = json!({"human_check": {"kind": "proof_of_work"}, "pow_difficulty": 4});
    assert_eq!(set_rules(&app, other, rules).await.status(), StatusCode::OK);
    let (_, b) = app.buyer().await;
    assert_eq!(
        error_of(join(&app, other, &b, json!({})).await).await,
        (StatusCode::FORBIDDEN, "pow_required".into())
    );
    app.stop().await;
}

/// A join's proof of possession is remembered only once its human check passed: joins
/// refused there with fresh proofs leave no room used in the event's proof memory,
/// whose cap (once full of unexpired ids) refuses every proof of the event.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_refused_at_the_human_check_fill_no_proof_memory() {
    use boxoffice_domain::possession::PopMode;
    use boxoffice_engine::ports::Clock;
    use boxoffice_testkit::harness::{proof, proof_key};

    let v = verifier().await;
    let app = with_turnstile(&v, |c| c.engine.proofs.max_remembered = 2).await;
    let mut spec = spec(1, 10, 0, 4);
    spec.sale.proof_of_possession = PopMode::Required;
    let event = app.create_event(&spec).await;
    let rules = json!({"human_check": {"kind": "hosted", "provider": "turnstile"}});
    assert_eq!(set_rules(&app, event, rules).await.status(), StatusCode::OK);
    let path = format!("/v1/events/{event}/queue");
    let join_proved = |token: String, human: &'static str| {
        let dpop = proof(&proof_key(), "POST", &path, app.clock.now().0 / 1000);
        let req = app.client.post(app.url(&path)).bearer_auth(token);
        let req = req.header("Idempotency-Key", uuid()).header("DPoP", dpop);
        req.json(&json!({"human_check_token": human})).send()
    };
    for n in 0..3 {
        let (_, token) = app.buyer().await;
        let res = join_proved(token, "forged").await.unwrap();
        assert_eq!(
            error_of(res).await,
            (StatusCode::FORBIDDEN, "human_check_failed".into()),
            "forged join {n}"
        );
    }
    let (_, token) = app.buyer().await;
    let res = join_proved(token, "pass-1").await.unwrap();
    assert_eq!(res.status(), StatusCode::OK, "{:?}", res.text().await);
    assert_eq!(line_length(&app, event).await, 1);
    app.stop().await;
}
