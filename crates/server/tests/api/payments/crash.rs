//! kill -9 at the payment's weak points, then restart: between authorize and commit,
//! between commit and capture, and while webhooks are being handled. After restart
//! the recovery sweep (and the provider delivering its webhooks again) converge to P2
//! with no human action: the audit is clean and every order ends where its money is.

use crate::common::BOXOFFICE;
use boxoffice_testkit::harness::buyers::holders;
use boxoffice_testkit::harness::http;
use boxoffice_testkit::harness::path_str;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::books::{assert_confirmed_and_captured, assert_orders_in_flight, provider_book};
use crate::common::uuid;
use boxoffice_domain::Millis;
use boxoffice_domain::OrderId;
use boxoffice_engine::ports::{Inquiry, PaymentGateway, ProviderState};
use boxoffice_payment_fake::methods;
use futures::future::join_all;
use serde_json::{Value, json};
use tokio::process::Child;

const OPERATOR: &str = "payments-crash-operator-key-01";

fn config(dir: &Path, recovery_after_s: u64, extra: &str) -> PathBuf {
    let file = dir.join(format!("boxoffice-{}.toml", uuid()));
    let text = format!(
        "operator_key = \"{OPERATOR}\"\npayments = \"fake\"\n[engine]\nrecovery_after_s = {recovery_after_s}\nadmission_interval_ms = 50\n\
         [workers]\nrecovery_interval_ms = 200\nexpiry_interval_ms = 200\n[fake_payments]\n{extra}\n"
    );
    std::fs::write(&file, text).unwrap();
    file
}

async fn start(dir: &Path, config: &Path) -> (Child, String) {
    let (dir, config) = (
        dir.to_str().expect("a UTF-8 path"),
        config.to_str().expect("a UTF-8 path"),
    );
    BOXOFFICE
        .start(&["--data-dir", dir, "--config", config])
        .await
}

async fn call(
    base: &str,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Value,
) -> (u16, Value) {
    let url = format!("{base}{path}");
    http::call(&http::client(), method, url, token, body).await
}

async fn checkout(base: &str, token: &str, hold: &str, method: &str) -> (u16, Value) {
    let path = format!("/v1/holds/{hold}/checkout");
    call(
        base,
        reqwest::Method::POST,
        &path,
        token,
        json!({"payment_method": method}),
    )
    .await
}

/// Runs `boxoffice audit` until no order is in flight; returns the clean report.
async fn settled_audit(dir: &Path, config: &Path) -> Value {
    let args = ["--data-dir", path_str(dir), "--config", path_str(config)];
    let (clean, report) = BOXOFFICE.settled_audit(&args).await;
    assert!(clean, "audit after recovery: {report}");
    report
}

/// Every order of the provider's book is where the ledger says: charged ⇔ confirmed.
async fn every_order_matches_its_money(base: &str, dir: &Path, buyers: &[(String, String)]) {
    let book = provider_book(dir);
    for (token, _) in buyers {
        let (_, v) = call(
            base,
            reqwest::Method::GET,
            "/v1/me/orders",
            token,
            Value::Null,
        )
        .await;
        for o in v["orders"].as_array().unwrap() {
            let id = o["order_id"].as_str().unwrap().parse().unwrap();
            let paid = book
                .inquire(&Inquiry::by_order(id))
                .await
                .unwrap()
                .map(|p| p.state);
            let ok = match o["status"].as_str().unwrap() {
                "confirmed" => paid == Some(ProviderState::Captured),
                "voided" | "declined" | "lost" => {
                    paid != Some(ProviderState::Captured) && paid != Some(ProviderState::Authorized)
                }
                "refunded" => paid == Some(ProviderState::Refunded),
                _ => false,
            };
            assert!(ok, "order {o} but the provider says {paid:?}");
        }
    }
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_between_authorize_and_commit_the_authorization_is_voided_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    // The sweep waits an hour, so the orders are still uncommitted at the kill.
    let slow = config(dir.path(), 3_600, "");
    let (mut server, base) = start(dir.path(), &slow).await;
    let buyers = holders(&http::client(), &base, OPERATOR, 20).await;
    for (token, hold) in &buyers {
        let (s, b) = checkout(&base, token, hold, methods::TIMEOUT_AFTER_CHARGE).await;
        assert_eq!(s, 202, "{b}");
    }
    let book = provider_book(dir.path());
    let open = book.all_payments().await.unwrap();
    assert!(open.iter().all(|p| p.state == ProviderState::Authorized) && open.len() == 20);
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    assert_eq!(assert_orders_in_flight(dir.path()).await, 20);

    let normal = config(dir.path(), 1, "");
    let (_server, base) = start(dir.path(), &normal).await;
    let report = settled_audit(dir.path(), &normal).await;
    assert_eq!(
        report["seats_sold"],
        json!(0),
        "the holds died with the hot store"
    );
    every_order_matches_its_money(&base, dir.path(), &buyers).await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_between_commit_and_capture_the_sale_is_captured_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let outage = config(dir.path(), 1, "capture_failures = 1000");
    let (mut server, base) = start(dir.path(), &outage).await;
    let buyers = holders(&http::client(), &base, OPERATOR, 20).await;
    let mut told_201: Vec<OrderId> = Vec::new();
    for (token, hold) in &buyers {
        let (s, b) = checkout(&base, token, hold, methods::VISA).await;
        assert_eq!(
            (s, b["status"].as_str()),
            (201, Some("pending_capture")),
            "{b}"
        );
        told_201.push(b["order_id"].as_str().unwrap().parse().unwrap());
    }
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    assert_eq!(assert_orders_in_flight(dir.path()).await, 20);

    let normal = config(dir.path(), 1, "");
    let (_server, base) = start(dir.path(), &normal).await;
    let report = settled_audit(dir.path(), &normal).await;
    assert_eq!(report["seats_sold"], json!(20));
    assert_confirmed_and_captured(dir.path(), &told_201).await;
    every_order_matches_its_money(&base, dir.path(), &buyers).await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_handling_webhooks_the_orders_converge_after_redelivery() {
    let dir = tempfile::tempdir().unwrap();
    // The sweep waits an hour, so only the webhooks settle orders before the kill (a
    // sweep could settle them all first, from the provider's state, and leave the kill
    // nothing to interrupt).
    let slow = config(dir.path(), 3_600, "latency_ms = 40");
    let (mut server, base) = start(dir.path(), &slow).await;
    let buyers = holders(&http::client(), &base, OPERATOR, 60).await;
    let book = provider_book(dir.path());
    for (token, hold) in &buyers {
        let (s, b) = checkout(&base, token, hold, methods::THREE_D_SECURE).await;
        assert_eq!(s, 202, "{b}");
        book.complete_action(
            b["order"]["order_id"].as_str().unwrap().parse().unwrap(),
            true,
        )
        .await
        .unwrap();
    }
    let hooks = book.undelivered_webhooks(1_000).await.unwrap();
    let deliver = |base: String, payload: String| async move {
        let now = Millis(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as i64,
        );
        let sig = provider_sig(&payload, now);
        http::client()
            .post(format!("{base}/v1/payments/webhook"))
            .header("Stripe-Signature", sig)
            .body(payload)
            .send()
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or(0)
    };
    // The server dies as soon as the first webhook is answered: the others are mid-way.
    let handled = Arc::new(AtomicUsize::new(0));
    let load = tokio::spawn(join_all(hooks.iter().map(|w| {
        let (base, payload, handled) = (base.clone(), w.payload.clone(), handled.clone());
        async move {
            let status = deliver(base, payload).await;
            handled.fetch_add(1, Ordering::SeqCst);
            status
        }
    })));
    let what = "the first webhook answer";
    let every = Duration::from_millis(5);
    boxoffice_testkit::eventually(what, Duration::from_secs(60), every, || async {
        match handled.load(Ordering::SeqCst) {
            0 => Err("no answer yet"),
            _ => Ok(()),
        }
    })
    .await;
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    let in_flight = assert_orders_in_flight(dir.path()).await;
    let answered = load.await.unwrap();
    let ok = answered.iter().filter(|s| **s == 200).count();
    assert!(
        ok < hooks.len(),
        "the kill landed after every webhook was handled"
    );
    for (w, status) in hooks.iter().zip(&answered) {
        if *status == 200 {
            book.mark_delivered(w.seq).await.unwrap();
        }
    }

    // The provider delivers what was not acknowledged again, after the restart.
    let normal = config(dir.path(), 1, "");
    let (_server, base) = start(dir.path(), &normal).await;
    for w in book.undelivered_webhooks(1_000).await.unwrap() {
        assert_eq!(deliver(base.clone(), w.payload.clone()).await, 200);
        book.mark_delivered(w.seq).await.unwrap();
    }
    let report = settled_audit(dir.path(), &normal).await;
    eprintln!(
        "{ok} of {} webhooks answered before the kill, {in_flight} orders in flight; after: {report}",
        hooks.len()
    );
    every_order_matches_its_money(&base, dir.path(), &buyers).await;
}

fn provider_sig(payload: &str, now: Millis) -> String {
    boxoffice_payment_fake::signature::sign(
        "whsec_fake_boxoffice",
        payload.as_bytes(),
        now.0 / 1000,
    )
}
