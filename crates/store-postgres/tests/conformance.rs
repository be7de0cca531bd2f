//! The shared ledger and idempotency suites against the machine's PostgreSQL, on a
//! throw-away database (see `common`).

mod common;

use std::sync::Arc;

use boxoffice_engine::ports::{IdempotencyStore, Ledger};

async fn fresh_ledger() -> Arc<dyn Ledger> {
    Arc::new(common::ledger(true).await)
}

async fn fresh_idempotency() -> Arc<dyn IdempotencyStore> {
    // The store shares the ledger's writer and keeps the database alive.
    Arc::new(common::ledger(true).await.idempotency())
}

async fn fresh_tickets() -> boxoffice_testkit::tickets::TicketStores {
    let ledger = Arc::new(common::ledger(true).await);
    boxoffice_testkit::tickets::TicketStores {
        ledger: ledger.clone(),
        tickets: ledger,
    }
}

boxoffice_testkit::ledger_conformance!(fresh_ledger());
boxoffice_testkit::tickets_conformance!(fresh_tickets());
boxoffice_testkit::idempotency_conformance!(fresh_idempotency());
boxoffice_testkit::shared_idempotency_conformance!(fresh_idempotency());
