//! A `boxoffice` process on a data directory of the test's own, for the tests that kill
//! it (kill -9) and start it again: its config file, its start, and a sale written
//! straight into the directory's ledger and provider book (through their ports, as a
//! checkout writes them), so that thousands of orders take seconds to set up.

use std::path::{Path, PathBuf};

use boxoffice_domain::{BuyerId, Event, EventSpec, Millis, OrderEvent, OrderId, SaleStatus};
use boxoffice_engine::ports::{
    AuthorizeOutcome, AuthorizeRequest, Commit, CommitOutcome, InsertOrder, Ledger, PaymentGateway,
};
use boxoffice_payment_fake::{FakeGateway, methods};
use boxoffice_testkit::harness::path_str;
use boxoffice_testkit::ledger::fixtures;
use serde_json::Value;
use tokio::process::Child;

use super::{BOXOFFICE, uuid};

/// A config file in `dir` with `operator`'s key and the stand-in provider, then `extra`
/// (TOML, tables allowed).
pub fn config(dir: &Path, operator: &str, extra: &str) -> PathBuf {
    let file = dir.join(format!("boxoffice-{}.toml", uuid()));
    let text = format!("operator_key = \"{operator}\"\npayments = \"fake\"\n{extra}");
    std::fs::write(&file, text).unwrap();
    file
}

/// `boxoffice serve` on `dir` with `config`: the process and its base URL.
pub async fn start(dir: &Path, config: &Path) -> (Child, String) {
    BOXOFFICE
        .start(&["--data-dir", path_str(dir), "--config", path_str(config)])
        .await
}

/// The audit of the data directory `dir` (with `config`) once the recovery sweep
/// settled every order, asserted clean: its report.
pub async fn clean_audit(dir: &Path, config: &Path) -> Value {
    let args = ["--data-dir", path_str(dir), "--config", path_str(config)];
    let (clean, report) = BOXOFFICE.settled_audit(&args).await;
    assert!(clean, "audit: {report}");
    report
}

/// An event of `spec` created in `ledger` and open for sale.
pub async fn open_event(ledger: &dyn Ledger, spec: &EventSpec, now: Millis) -> Event {
    let event = ledger.create_event(spec, now).await.unwrap();
    ledger
        .set_sale_status(event.id, SaleStatus::Open)
        .await
        .unwrap();
    event
}

/// A buyer of their own who bought `seats` of `event` in one order, written as a
/// checkout writes it: the order row, the provider's authorization, the ledger's
/// commit, the capture (which issues the tickets).
pub async fn sell(
    ledger: &dyn Ledger,
    book: &FakeGateway,
    event: &Event,
    seats: &[usize],
    now: Millis,
) -> OrderId {
    let order = fixtures::order(event, BuyerId::random(), seats, now);
    assert_eq!(
        ledger.insert_order(&order).await.unwrap(),
        InsertOrder::Inserted
    );
    let req = AuthorizeRequest {
        order: order.id,
        amount: order.total,
        currency: order.currency.clone(),
        payment_method: methods::VISA.into(),
    };
    let AuthorizeOutcome::Approved { reference } = book.authorize(&req).await.unwrap() else {
        panic!("the stand-in approves a visa card");
    };
    ledger
        .apply(order.id, OrderEvent::Authorized, Some(&reference), now)
        .await
        .unwrap();
    let commit = Commit {
        order: order.id,
        max_per_buyer: 4,
        now,
    };
    assert_eq!(
        ledger.commit(&commit).await.unwrap(),
        CommitOutcome::Committed
    );
    book.capture(order.id, &reference).await.unwrap();
    ledger
        .apply(order.id, OrderEvent::Captured, None, now)
        .await
        .unwrap();
    order.id
}

/// Now by the wall clock, as the server reads it.
pub fn wall_clock() -> Millis {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    Millis(i64::try_from(since.as_millis()).unwrap())
}
