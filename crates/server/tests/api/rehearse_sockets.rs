//! The crowd's sockets are bounded: a rehearsal of 1,000 buyers through a counting TCP
//! proxy, told to keep to 8 connections, never has more open at once, reuses them,
//! sells every seat and leaves a clean audit.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
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
    /// The client sockets counted open, by the number the proxy gave them. A relay takes
    /// its own out before its socket closes, so every descriptor here is live.
    live: Mutex<HashMap<usize, Live>>,
}

/// A client socket counted open, and whether it has been counted closed.
struct Live {
    fd: RawFd,
    closed: Arc<AtomicBool>,
}

impl Counts {
    /// Counts a connection closed once: by its relay, or by a sweep that saw its end.
    fn close(&self, closed: &AtomicBool) {
        if !closed.swap(true, SeqCst) {
            self.open.fetch_sub(1, SeqCst);
        }
    }

    /// Counts closed every connection whose client has closed its end, whether or not its
    /// relay has run since. The generator opens a connection only once it has closed the
    /// one it replaces, and on loopback that end has reached this side by then, but the
    /// relay that reads it may not have been scheduled yet.
    fn sweep(&self) {
        let mut live = self.live.lock().unwrap();
        live.retain(|_, l| {
            let ended = peer_has_closed(l.fd);
            if ended {
                self.close(&l.closed);
            }
            !ended
        });
    }
}

/// Whether the peer of the TCP socket `fd` has sent its end (the socket has left
/// ESTABLISHED for CLOSE_WAIT or later).
fn peer_has_closed(fd: RawFd) -> bool {
    // SAFETY: tcp_info is plain data; getsockopt writes at most `len` bytes into it, and
    // `fd` is a live socket (see `Counts::live`).
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let got = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&raw mut info).cast(),
            &mut len,
        )
    };
    const TCP_ESTABLISHED: u8 = 1;
    got == 0 && info.tcpi_state != TCP_ESTABLISHED
}

/// A TCP proxy to `to` that counts the connections made through it; its base URL.
async fn counting_proxy(to: SocketAddr) -> (String, Arc<Counts>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let counts = Arc::new(Counts::default());
    let c = counts.clone();
    tokio::spawn(async move {
        let mut number = 0;
        while let Ok((inbound, _)) = listener.accept().await {
            c.sweep();
            c.accepted.fetch_add(1, SeqCst);
            let now = c.open.fetch_add(1, SeqCst) + 1;
            c.most.fetch_max(now, SeqCst);
            number += 1;
            let closed = Arc::new(AtomicBool::new(false));
            let live = Live {
                fd: inbound.as_raw_fd(),
                closed: closed.clone(),
            };
            c.live.lock().unwrap().insert(number, live);
            tokio::spawn(pipe(inbound, to, c.clone(), number, closed));
        }
    });
    (base, counts)
}

/// Relays one connection; it stops counting as open the moment the generator closes
/// its end.
async fn pipe(
    inbound: TcpStream,
    to: SocketAddr,
    c: Arc<Counts>,
    n: usize,
    closed: Arc<AtomicBool>,
) {
    let ended = |c: &Counts| {
        c.live.lock().unwrap().remove(&n);
        c.close(&closed);
    };
    let Ok(outbound) = TcpStream::connect(to).await else {
        ended(&c);
        return;
    };
    let (mut from_client, mut to_client) = inbound.into_split();
    let (mut from_server, mut to_server) = outbound.into_split();
    let back = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
    });
    let _ = tokio::io::copy(&mut from_client, &mut to_server).await;
    ended(&c);
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
