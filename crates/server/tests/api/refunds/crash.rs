//! A whole event cancelled while the server is killed (kill -9) twice during its refund
//! job, and started again each time: the job resumes from the cursor it kept in the
//! ledger, and in the end every order was refunded exactly once (the provider's own
//! book made one refund per order, no more), every seat is back, the audit is clean.
//!
//! The sale is written straight into the data directory (ledger and provider book,
//! through their ports, as the checkout writes them) so that thousands of orders take
//! seconds to set up; what is under test, the cancellation, runs in the server. Each
//! kill is checked to have landed mid-job (sales still unclaimed).
//! The size is a parameter; the test runs 10,000 orders.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use boxoffice_domain::{EventId, OrderId, OrderState};
use boxoffice_engine::ports::{Ledger, PaymentGateway, ProviderState};
use boxoffice_testkit::harness::http;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::process::Child;

use super::refunds_made;
use crate::common::books::{by_state, ledger, ledger_orders, provider_book};
use crate::common::on_disk::{self, clean_audit, open_event, sell, start, wall_clock};
use crate::common::spec;

pub(super) const OPERATOR: &str = "refunds-crash-operator-key-01";

/// The size: about a minute and a half on a 2-core machine, the sale's set-up
/// (some 35 s) included.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 900)]
async fn a_cancelled_event_refunds_10000_orders_exactly_once_across_two_kills() {
    cancelled_event_killed_twice(10_000).await;
}

async fn cancelled_event_killed_twice(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let started = Instant::now();
    let (event, sold) = seed(dir.path(), n).await;
    eprintln!("{n} orders sold in {:?}", started.elapsed());

    let (server, base) = start(dir.path(), &config).await;
    let cancel = format!("{base}/v1/events/{event}/cancel");
    let (status, job) = post(&cancel).await;
    assert_eq!(status, 202, "{job}");
    let started = Instant::now();
    let server = kill_when_seen(server, &base, event, n / 4).await;
    assert_interrupted(dir.path(), "first").await;
    drop(server);

    let (server, base) = start(dir.path(), &config).await;
    let server = kill_when_seen(server, &base, event, n * 3 / 5).await;
    assert_interrupted(dir.path(), "second").await;
    drop(server);

    let (_server, base) = start(dir.path(), &config).await;
    let done = finished(&base, event, n).await;
    eprintln!(
        "{n} orders refunded in {:?} (two kills and restarts included): {done}",
        started.elapsed()
    );
    assert_eq!(
        done["counts"],
        json!({"seen": n, "returned": n, "unsold": 0, "pending": 0})
    );

    let orders = ledger_orders(dir.path()).await;
    let not_refunded: Vec<_> = sold
        .iter()
        .filter(|id| orders.get(id) != Some(&OrderState::Refunded))
        .collect();
    assert!(
        not_refunded.is_empty(),
        "{} not refunded: {:?}",
        not_refunded.len(),
        by_state(&orders)
    );
    let book = provider_book(dir.path());
    let made = refunds_made(&book).await;
    let wrong: BTreeMap<_, _> = sold
        .iter()
        .map(|id| (id, made.get(id).copied().unwrap_or(0)))
        .filter(|(_, k)| *k != 1)
        .collect();
    assert!(
        wrong.is_empty(),
        "orders not refunded exactly once: {wrong:?}"
    );
    assert_eq!(made.len(), n, "no refund for anything else");
    let payments = book.all_payments().await.unwrap();
    assert!(payments.iter().all(|p| p.state == ProviderState::Refunded));
    assert!(
        ledger(dir.path())
            .sold_seats(event)
            .await
            .unwrap()
            .is_empty(),
        "every seat is back"
    );
    let report = clean_audit(dir.path(), &config).await;
    assert_eq!(report["seats_sold"], json!(0));
}

fn config(dir: &Path) -> PathBuf {
    on_disk::config(
        dir,
        OPERATOR,
        "[engine]\nrecovery_after_s = 1\nrecovery_page = 100\nrecovery_calls_per_s = 0\n\
         [workers]\nrecovery_interval_ms = 200\nevent_cancel_interval_ms = 50\n",
    )
}

pub(super) async fn post(url: &str) -> (u16, Value) {
    let c = boxoffice_testkit::harness::http::client();
    http::call(
        &c,
        reqwest::Method::POST,
        url.to_string(),
        OPERATOR,
        Value::Null,
    )
    .await
}

pub(super) async fn progress(base: &str, event: EventId) -> Value {
    let url = format!("{base}/v1/events/{event}/cancellation");
    let c = boxoffice_testkit::harness::http::client();
    let (status, v) = http::call(&c, reqwest::Method::GET, url, OPERATOR, Value::Null).await;
    assert_eq!(status, 200, "{v}");
    v
}

/// Kills the server (SIGKILL) as soon as the job has been through `seen` orders.
async fn kill_when_seen(mut server: Child, base: &str, event: EventId, seen: usize) -> Child {
    let what = format!("the refund job to pass {seen} orders");
    let every = Duration::from_millis(10);
    boxoffice_testkit::eventually(what, Duration::from_secs(600), every, || async {
        let p = progress(base, event).await;
        match p["counts"]["seen"].as_u64().unwrap_or(0) >= seen as u64 || p["pass"] != json!(1) {
            true => Ok(()),
            false => Err(p),
        }
    })
    .await;
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    server
}

/// The kill caught the job half-way: sales not yet claimed are still confirmed.
async fn assert_interrupted(dir: &Path, which: &str) {
    let orders = ledger_orders(dir).await;
    let waiting = orders
        .values()
        .filter(|s| **s == OrderState::Confirmed)
        .count();
    eprintln!("after the {which} kill: {:?}", by_state(&orders));
    assert!(
        waiting > 0,
        "the {which} kill landed after the job was done; nothing was tested"
    );
}

pub(super) async fn finished(base: &str, event: EventId, n: usize) -> Value {
    let what = format!("the refund job to finish {n} orders");
    let every = Duration::from_millis(200);
    boxoffice_testkit::eventually(what, Duration::from_secs(900), every, || async {
        let p = progress(base, event).await;
        match p["finished_at"].is_i64() {
            true => Ok(p),
            false => Err(p),
        }
    })
    .await
}

/// `n` buyers who bought one seat each, written as a checkout writes them: the order
/// row, the provider's authorization, the ledger's commit, the capture.
pub(super) async fn seed(dir: &Path, n: usize) -> (EventId, Vec<OrderId>) {
    let ledger: Arc<dyn Ledger> = Arc::new(ledger(dir));
    let book = Arc::new(provider_book(dir));
    let now = wall_clock();
    let rows = u32::try_from(n.div_ceil(50)).unwrap();
    let event = Arc::new(open_event(&*ledger, &spec(rows, 50, 0, 4), now).await);
    let ids: Vec<OrderId> = futures::stream::iter(0..n)
        .map(|i| {
            let (ledger, book, event) = (ledger.clone(), book.clone(), event.clone());
            async move { sell(&*ledger, &book, &event, &[i], now).await }
        })
        .buffer_unordered(64)
        .collect()
        .await;
    (event.id, ids)
}
