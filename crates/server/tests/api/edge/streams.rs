//! Event streams against a real process: a flood of idle viewers is capped per node
//! while holds go on being served, and a stop ends open streams so the process exits
//! within its shutdown grace.

use std::time::{Duration, Instant};

use super::{Node, next_event};
use crate::common::spec;
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const CLIENTS: usize = 10_000;
const CAP: usize = 1_000;

/// Opens a stream on a raw connection; returns the response's status and the
/// connection, left open and unread.
async fn open_stream(addr: &str, path: &str) -> (u16, TcpStream) {
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n");
    tcp.write_all(request.as_bytes()).await.expect("send");
    let mut head = Vec::new();
    let mut chunk = [0u8; 256];
    while !head.windows(2).any(|w| w == b"\r\n") {
        let n = tcp.read(&mut chunk).await.expect("read");
        assert!(n > 0, "the server closed before answering");
        head.extend_from_slice(&chunk[..n]);
    }
    let line = String::from_utf8_lossy(&head);
    let status = line.split(' ').nth(1).and_then(|s| s.parse().ok());
    (status.expect("a status line"), tcp)
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn ten_thousand_idle_stream_clients_against_a_cap_of_a_thousand_get_503_while_holds_go_on() {
    // Each client is a file descriptor here (and one in the server, which raises its
    // own limit the same way).
    let limit = rlimit::increase_nofile_limit(u64::MAX).unwrap();
    assert!(
        limit as usize > CLIENTS + 500,
        "RLIMIT_NOFILE hard limit {limit} is too low for {CLIENTS} clients"
    );
    let config = format!("[http]\nmax_streams = {CAP}\nmax_streams_per_address = {CLIENTS}\n");
    let node = Node::start(&config).await;
    let event = node.open_event(&spec(0, 0, 1_000, 4)).await;
    let addr = node.base.strip_prefix("http://").unwrap().to_string();
    let path = format!("/v1/events/{event}/availability/stream");

    let run = async {
        let started = Instant::now();
        let opened: Vec<(u16, TcpStream)> = futures::stream::iter(0..CLIENTS)
            .map(|_| open_stream(&addr, &path))
            .buffer_unordered(200)
            .collect()
            .await;
        let count = |s: u16| opened.iter().filter(|(status, _)| *status == s).count();
        assert_eq!(
            (count(200), count(503)),
            (CAP, CLIENTS - CAP),
            "streams open vs refused"
        );
        println!(
            "{CLIENTS} stream clients answered in {:?}",
            started.elapsed()
        );

        // With every one of them still connected, a buyer is admitted and holds.
        let started = Instant::now();
        let (_, admission) = node.admitted(event).await;
        let (status, hold) = node.hold(event, &admission, "GA", 2).await;
        assert_eq!(status, 201, "{hold}");
        println!("admitted and held in {:?} beside them", started.elapsed());

        let res = node.client.get(node.url(&path)).send().await.unwrap();
        assert_eq!(res.status(), 503);
        assert!(res.headers().contains_key("retry-after"));
        let body: serde_json::Value = res.json().await.unwrap();
        assert_eq!(body["error"], "too_many_streams");
        let refused = node
            .metric("boxoffice_sse_refused_total{reason=\"node\"}")
            .await;
        assert_eq!(refused, Some((CLIENTS - CAP + 1) as f64));
        assert_eq!(
            node.metric("boxoffice_sse_streams_open").await,
            Some(CAP as f64)
        );
        drop(opened);
    };
    tokio::time::timeout(Duration::from_secs(240), run)
        .await
        .expect("the flood test finished within 240 s");
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_signal_ends_open_availability_streams_and_the_process_exits_within_its_grace() {
    let mut node = Node::start("[http]\nshutdown_grace_ms = 3000\n").await;
    let event = node.open_event(&spec(1, 10, 0, 4)).await;
    let streaming = reqwest::Client::new();
    let url = node.url(&format!("/v1/events/{event}/availability/stream"));
    let res = streaming.get(url).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let (mut body, mut buf) = (res.bytes_stream(), String::new());
    next_event(&mut body, &mut buf, "snapshot").await;

    let stopped = Instant::now();
    node.terminate();
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(_)) = body.next().await {}
    })
    .await;
    assert!(ended.is_ok(), "the stream was still open 5 s after SIGTERM");
    let exit = tokio::time::timeout(Duration::from_secs(5), node.child.wait()).await;
    let status = exit
        .expect("the server was still running 5 s after SIGTERM (grace 3 s)")
        .unwrap();
    assert!(status.success(), "the server exited with {status}");
    println!("exited {:?} after SIGTERM", stopped.elapsed());
}
