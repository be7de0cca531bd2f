//! The crowd's sockets are bounded: a rehearsal of 1,000 buyers through a counting TCP
//! proxy, told to keep to 8 connections, never has more open at once, reuses them,
//! sells every seat and leaves a clean audit.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use boxoffice_rehearse::rehearse;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use crate::rehearse::{audited_server, every_card_approves, settings};

/// Connections through the proxy: open now, the most open at once, accepted in all.
#[derive(Default)]
struct Counts {
    open: AtomicUsize,
    most: AtomicUsize,
    accepted: AtomicUsize,
}

/// A TCP proxy to `to` that counts the connections made through it; its base URL.
async fn counting_proxy(to: SocketAddr) -> (String, Arc<Counts>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let counts = Arc::new(Counts::default());
    let c = counts.clone();
    tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            c.accepted.fetch_add(1, SeqCst);
            let now = c.open.fetch_add(1, SeqCst) + 1;
            c.most.fetch_max(now, SeqCst);
            tokio::spawn(pipe(inbound, to, c.clone()));
        }
    });
    (base, counts)
}

/// Relays one connection; it stops counting as open the moment the generator closes
/// its end.
async fn pipe(inbound: TcpStream, to: SocketAddr, c: Arc<Counts>) {
    let Ok(outbound) = TcpStream::connect(to).await else {
        c.open.fetch_sub(1, SeqCst);
        return;
    };
    let (mut from_client, mut to_client) = inbound.into_split();
    let (mut from_server, mut to_server) = outbound.into_split();
    let back = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
    });
    let _ = tokio::io::copy(&mut from_client, &mut to_server).await;
    c.open.fetch_sub(1, SeqCst);
    let _ = to_server.shutdown().await;
    let _ = back.await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_crowd_told_to_keep_to_eight_connections_never_opens_more_and_still_sells_out() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, base, said, hook) = audited_server(dir.path()).await;
    let server: SocketAddr = base.trim_start_matches("http://").parse().unwrap();
    let (proxied, counts) = counting_proxy(server).await;
    let mut s = settings(proxied, 1_000);
    s.max_connections = 8;
    // Eight connections carry the crowd more slowly than a pool without a bound: the
    // time limit leaves room for a loaded machine.
    s.max_duration = Duration::from_secs(200);
    s.mix = every_card_approves(s.mix);
    let report = rehearse::run(&s, Some(hook), std::future::pending())
        .await
        .unwrap();
    let (most, accepted) = (counts.most.load(SeqCst), counts.accepted.load(SeqCst));
    eprintln!(
        "{} requests over {accepted} connections, at most {most} at once; slots {:?}; \
         sold {:?}; errors {:?}",
        report.requests, report.generator_slots, report.sold, report.errors
    );

    assert!(most <= 8, "{most} connections open at once");
    assert!(
        accepted * 50 < report.requests as usize,
        "connections are kept alive and reused: {accepted} for {} requests",
        report.requests
    );
    let slots = &report.generator_slots;
    assert_eq!(slots.max_connections, 8);
    assert!(
        slots.waited_share > 0.0,
        "1,000 buyers waited for 8 slots: {slots:?}"
    );
    assert_eq!(
        report.stopped, None,
        "every buyer finished within the bounds"
    );
    let sold = &report.sold;
    assert_eq!(sold.hot_store, sold.capacity, "sold out: {sold:?}");
    assert_eq!(sold.ledger, Some(sold.hot_store));
    let audit = report.audit.as_ref().expect("the audit ran");
    assert!(
        audit.clean,
        "the audit after the rehearsal: {}",
        audit.report
    );
    let failed: Vec<_> = (report.errors.iter())
        .filter(|(k, _)| k.contains(" 5") || k.contains("no answer"))
        .collect();
    assert!(
        failed.is_empty(),
        "answers no buyer should meet: {failed:?}; the server said:\n{}",
        said.lock()
    );
}
