//! Hostile requests at the edge, in process: a slow-loris client is cut off by the
//! header timeout, as is a kept-alive connection left idle, while a connection busy with
//! requests or an event stream is not; behind a trusted proxy every client has its own rate-limit bucket
//! and a forwarding header from an untrusted peer is ignored; fairness pages are
//! bounded; and adaptive admission samples only what the engine did.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::common::{TestApp, spawn, spawn_with, spec, uuid};
use boxoffice_domain::admission::Limit;
use boxoffice_engine::Joiner;
use boxoffice_testkit::harness::http::next_event;
use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[boxoffice_testkit::test]
async fn a_client_sending_its_headers_a_byte_at_a_time_is_cut_off_by_the_header_timeout() {
    let app = spawn_with(|c| c.http.header_read_timeout_ms = 1_000).await;
    let addr = app.base.strip_prefix("http://").unwrap();
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut rd, mut wr) = tcp.into_split();
    // About 9 s of headers at one byte per 100 ms.
    let request = format!(
        "GET /healthz HTTP/1.1\r\nHost: test\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(50)
    );
    let started = Instant::now();
    let trickle = tokio::spawn(async move {
        for b in request.into_bytes() {
            if wr.write_all(&[b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let mut answer = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(8), rd.read_to_end(&mut answer)).await;
    trickle.abort();
    assert!(
        closed.is_ok(),
        "the slow client was still connected after 8 s"
    );
    assert!(answer.is_empty(), "an unfinished request got an answer");
    let after = started.elapsed();
    assert!(
        after < Duration::from_secs(4),
        "cut off only after {after:?}"
    );
    // A client that sends its request at once is served as before.
    let res = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}

/// Reads one answer with a Content-Length body off `rd`; returns its status line.
async fn read_answer(rd: &mut (impl AsyncReadExt + Unpin)) -> String {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        assert_eq!(rd.read(&mut b).await.unwrap(), 1, "closed mid-answer");
        head.push(b[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(str::to_owned)
        })
        .expect("a Content-Length")
        .trim()
        .parse()
        .unwrap();
    let mut body = vec![0u8; length];
    rd.read_exact(&mut body).await.unwrap();
    head.lines().next().unwrap().to_owned()
}

#[boxoffice_testkit::test]
async fn a_kept_alive_connection_that_sends_no_next_request_is_closed_after_the_header_timeout() {
    let app = spawn_with(|c| c.http.header_read_timeout_ms = 1_000).await;
    let addr = app.base.strip_prefix("http://").unwrap();
    let (mut rd, mut wr) = TcpStream::connect(addr).await.unwrap().into_split();
    wr.write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    assert_eq!(read_answer(&mut rd).await, "HTTP/1.1 200 OK");
    let answered = Instant::now();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(8), rd.read_to_end(&mut rest)).await;
    assert!(
        closed.is_ok(),
        "the idle connection was still open after 8 s"
    );
    let idle = answered.elapsed();
    assert!(
        idle >= Duration::from_millis(900) && idle < Duration::from_secs(4),
        "closed {idle:?} after its answer, not after the 1 s header timeout"
    );
    assert!(rest.is_empty());
}

#[boxoffice_testkit::test]
async fn the_header_timeout_counts_from_each_request_not_from_the_connection() {
    let app = spawn_with(|c| c.http.header_read_timeout_ms = 1_000).await;
    let addr = app.base.strip_prefix("http://").unwrap();
    let (mut rd, mut wr) = TcpStream::connect(addr).await.unwrap().into_split();
    // Six requests 600 ms apart: the connection lives 3 s, three times the timeout.
    for _ in 0..6 {
        wr.write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
            .await
            .unwrap();
        let status = tokio::time::timeout(Duration::from_secs(5), read_answer(&mut rd))
            .await
            .expect("an answer within 5 s");
        assert_eq!(status, "HTTP/1.1 200 OK");
        tokio::time::sleep(Duration::from_millis(600)).await;
    }
}

#[boxoffice_testkit::test]
async fn an_event_stream_outlives_the_header_timeout() {
    let app = spawn_with(|c| c.http.header_read_timeout_ms = 1_000).await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let path = format!("/v1/events/{event}/availability/stream");
    let (mut body, mut buf) = (app.get(&path, "").await.bytes_stream(), String::new());
    next_event(&mut body, &mut buf, "snapshot").await;
    // Well past the header timeout: the stream's connection awaits no request head.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let (_, admission) = app.admitted_buyer(event).await;
    let res = app
        .hold(event, &admission, json!({"seat_ids": ["A-1-1"]}))
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    app.clock.advance_secs(2);
    let delta = next_event(&mut body, &mut buf, "delta").await;
    assert_eq!(delta["taken"], json!([0]));
}

/// Joins `event` as a new buyer through `client`, naming `forwarded` as the client in
/// X-Forwarded-For; returns the status.
async fn join(app: &TestApp, client: &reqwest::Client, event: i64, forwarded: &str) -> u16 {
    let (_, token) = app.buyer().await;
    let res = client
        .post(app.url(&format!("/v1/events/{event}/queue")))
        .bearer_auth(token)
        .header("Idempotency-Key", uuid())
        .header("X-Forwarded-For", forwarded)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    res.status().as_u16()
}

fn client_from(local: &str) -> reqwest::Client {
    let local: IpAddr = local.parse().unwrap();
    reqwest::Client::builder()
        .local_address(local)
        .build()
        .unwrap()
}

/// A node that trusts 127.0.0.1 as its proxy and lets three joins a client through
/// at once, and a general-admission event.
async fn behind_a_proxy() -> (TestApp, i64) {
    let app = spawn_with(|c| {
        c.http.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
        c.engine.waiting.join_per_ip = Limit { per_s: 1, burst: 3 };
    })
    .await;
    let event = app.create_event(&spec(0, 0, 100, 4)).await.0;
    (app, event)
}

#[boxoffice_testkit::test]
async fn behind_a_trusted_proxy_clients_have_their_own_buckets_and_a_spoofed_header_is_ignored() {
    let (app, event) = behind_a_proxy().await;
    // The proxy (127.0.0.1) forwards two clients; the first uses up its own bucket.
    let proxy = client_from("127.0.0.1");
    for _ in 0..3 {
        assert_eq!(join(&app, &proxy, event, "203.0.113.1").await, 200);
    }
    assert_eq!(join(&app, &proxy, event, "203.0.113.1").await, 429);
    assert_eq!(
        join(&app, &proxy, event, "198.51.100.7, 203.0.113.2").await,
        200,
        "a second client behind the proxy has a bucket of its own"
    );
    // 127.0.0.2 is no proxy of ours: what it forwards is not believed.
    let direct = client_from("127.0.0.2");
    for i in 0..3 {
        assert_eq!(
            join(&app, &direct, event, &format!("192.0.2.{i}")).await,
            200
        );
    }
    assert_eq!(join(&app, &direct, event, "192.0.2.99").await, 429);
}

/// An IPv6 client is its /64: addresses rotated within one network share its bucket,
/// and another network has its own.
#[boxoffice_testkit::test]
async fn ipv6_addresses_of_one_network_share_a_bucket() {
    let (app, event) = behind_a_proxy().await;
    let proxy = client_from("127.0.0.1");
    for addr in [
        "2001:db8:7:7::1",
        "2001:db8:7:7::2",
        "2001:db8:7:7:ffff:ffff:ffff:ffff",
    ] {
        assert_eq!(join(&app, &proxy, event, addr).await, 200, "{addr}");
    }
    assert_eq!(
        join(&app, &proxy, event, "2001:db8:7:7::4").await,
        429,
        "a fourth address of the same /64 finds the bucket empty"
    );
    assert_eq!(
        join(&app, &proxy, event, "2001:db8:7:8::1").await,
        200,
        "the next /64 is another client"
    );
}

#[boxoffice_testkit::test]
async fn a_fairness_page_is_bounded_however_large_a_page_is_asked_for() {
    let app = spawn().await;
    let spec = serde_json::to_value(spec(1, 10, 0, 4)).unwrap();
    let res = app
        .post("/v1/events", &app.operator_key, &uuid(), spec)
        .await;
    let event: boxoffice_domain::EventId =
        serde_json::from_value(res.json::<Value>().await.unwrap()["event_id"].clone()).unwrap();
    for _ in 0..1_200 {
        let (_, token) = app.engine.create_buyer().await.unwrap();
        let who = app.engine.identify(&token).await.unwrap();
        let joiner = Joiner {
            who: &who,
            ip: None,
            pow: None,
            proof: None,
            human_token: None,
        };
        app.engine.join_queue(event, joiner).await.unwrap();
    }
    let path = format!("/v1/events/{event}/open");
    let res = app.post(&path, &app.operator_key, &uuid(), json!({})).await;
    assert_eq!(res.status(), StatusCode::OK);
    app.engine.admit_batch(event).await.unwrap();

    let page = |q: &str| {
        let url = app.url(&format!("/v1/events/{event}/queue/fairness?{q}"));
        app.client.get(url).send()
    };
    let first: Value = page("limit=100000").await.unwrap().json().await.unwrap();
    assert_eq!(first["pool_size"], 1_200);
    assert_eq!(first["pool"].as_array().unwrap().len(), 1_000);
    let rest: Value = page("offset=1000&limit=100000")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(rest["pool"].as_array().unwrap().len(), 200);
    let past: Value = page("offset=18446744073709551615")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(past["pool"], json!([]));
    let bad = page("limit=lots").await.unwrap();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    assert_eq!(bad.json::<Value>().await.unwrap()["error"], "invalid_query");
}

/// The health the adaptive admission mode reads, from the operator's stats.
async fn health(app: &TestApp, event: i64) -> Value {
    let stats: Value = app
        .get(&format!("/v1/events/{event}/stats"), &app.operator_key)
        .await
        .json()
        .await
        .unwrap();
    stats["waiting_room"]["health"].clone()
}

#[boxoffice_testkit::test]
async fn refused_hold_requests_with_slow_bodies_do_not_steer_adaptive_admission() {
    let app = spawn().await;
    let event = app.create_event(&spec(0, 0, 100, 4)).await;
    let slow_holds = (0..20).map(|_| {
        let parts = [
            (0, "{\"best_available\":"),
            (400, r#"{"section":"GA","quantity":1}}"#),
        ];
        let chunks = futures::stream::iter(parts).then(|(ms, part)| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<_, std::io::Error>(part)
        });
        app.client
            .post(app.url(&format!("/v1/events/{event}/holds")))
            .bearer_auth("forged-admission-token")
            .header("Idempotency-Key", uuid())
            .body(reqwest::Body::wrap_stream(chunks))
            .send()
    });
    for res in futures::future::join_all(slow_holds).await {
        assert_eq!(res.unwrap().status(), StatusCode::UNAUTHORIZED);
    }
    let h = health(&app, event.0).await;
    assert_eq!(
        h["hold_p99_ms"],
        Value::Null,
        "refused holds were sampled: {h}"
    );

    // A hold the engine handled is sampled, at the engine's pace.
    let (_, admission) = app.admitted_buyer(event).await;
    let body = json!({"best_available": {"section": "GA", "quantity": 1}});
    assert_eq!(
        app.hold(event, &admission, body).await.status(),
        StatusCode::CREATED
    );
    let p99 = health(&app, event.0).await["hold_p99_ms"].as_f64();
    assert!(p99.is_some_and(|ms| ms < 400.0), "hold p99 {p99:?}");
}

#[boxoffice_testkit::test]
async fn a_payment_awaiting_3d_secure_and_its_replay_are_not_payment_errors() {
    let app = spawn().await;
    let event = app.create_event(&spec(0, 0, 100, 4)).await;
    let body = json!({"best_available": {"section": "GA", "quantity": 1}});
    let (token, admission) = app.admitted_buyer(event).await;
    let hold: Value = app
        .hold(event, &admission, body.clone())
        .await
        .json()
        .await
        .unwrap();
    let path = format!("/v1/holds/{}/checkout", hold["hold_id"].as_str().unwrap());
    let pay = json!({"payment_method": "pm_card_threeDSecure"});
    let key = uuid();
    for replayed in [false, true] {
        let res = app.post(&path, &token, &key, pay.clone()).await;
        assert_eq!(res.status(), StatusCode::ACCEPTED);
        assert_eq!(res.headers().contains_key("idempotent-replayed"), replayed);
        assert!(res.json::<Value>().await.unwrap()["next_action"].is_object());
    }
    let h = health(&app, event.0).await;
    assert_eq!(h["payment_error_rate"], json!(0.0), "{h}");

    // A provider that does not answer is an error, and counts as one.
    let (token, admission) = app.admitted_buyer(event).await;
    let hold: Value = app
        .hold(event, &admission, body)
        .await
        .json()
        .await
        .unwrap();
    let hold_id = hold["hold_id"].as_str().unwrap();
    let res = app
        .checkout(hold_id, &token, "pm_timeout_after_charge")
        .await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let h = health(&app, event.0).await;
    assert_eq!(h["payment_error_rate"], json!(0.5), "{h}");
}

#[boxoffice_testkit::test]
async fn an_address_with_its_share_of_open_streams_is_refused_another_until_one_closes() {
    let app = spawn_with(|c| c.http.max_streams_per_address = 2).await;
    let event = app.create_event(&spec(1, 10, 0, 4)).await;
    let url = app.url(&format!("/v1/events/{event}/queue/stream"));
    let (here, there) = (client_from("127.0.0.1"), client_from("127.0.0.2"));
    let first = here.get(&url).send().await.unwrap();
    let second = here.get(&url).send().await.unwrap();
    assert_eq!(
        (first.status(), second.status()),
        (StatusCode::OK, StatusCode::OK)
    );
    let refused = here.get(&url).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(refused.headers().contains_key("retry-after"));
    assert_eq!(
        refused.json::<Value>().await.unwrap()["error"],
        "too_many_streams"
    );
    let elsewhere = there.get(&url).send().await.unwrap();
    assert_eq!(
        elsewhere.status(),
        StatusCode::OK,
        "another address has its own share"
    );

    drop(first);
    let what = "the closed stream's place to come back (a new stream answered 200)";
    let every = Duration::from_millis(50);
    boxoffice_testkit::eventually(what, Duration::from_secs(10), every, || async {
        match here
            .get(&url)
            .send()
            .await
            .expect("the node answers")
            .status()
        {
            StatusCode::OK => Ok(()),
            other => Err(other),
        }
    })
    .await;
    drop(second);
}

/// The readiness probe answers `ready` once the node started, and a crowd of probes at
/// once is answered from one ask of the ledger (`Engine::ledger_answers`).
#[boxoffice_testkit::test]
async fn a_crowd_of_readiness_probes_is_answered_ready() {
    let app = spawn().await;
    let probes = (0..300).map(|_| app.client.get(app.url("/readyz")).send());
    for res in futures::future::join_all(probes).await {
        let res = res.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.text().await.unwrap(), "ready");
    }
}
