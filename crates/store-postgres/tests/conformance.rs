//! The shared ledger and idempotency suites against the machine's PostgreSQL, on a
//! throw-away database (see `common`).

mod common;

use std::sync::Arc;

use boxoffice_engine::ports::{IdempotencyStore, Ledger};
use boxoffice_store_postgres::PostgresLedger;
use boxoffice_testkit::outbox::OutboxUnderTest;

async fn fresh_ledger() -> Arc<dyn Ledger> {
    Arc::new(common::ledger(true).await)
}

/// A database of its own: a sink receives every event written after it was added, so
/// the outbox cases cannot share one.
async fn fresh_outbox() -> OutboxUnderTest {
    let db = common::TestDatabase::create();
    let ledger = PostgresLedger::connect(&db.url, common::test_options(true))
        .await
        .unwrap_or_else(|e| panic!("could not open a ledger on {}: {e}", db.url));
    ledger.keep_alive(db);
    let ledger = Arc::new(ledger);
    OutboxUnderTest {
        ledger: ledger.clone(),
        outbox: ledger.clone(),
        tickets: ledger,
    }
}

async fn fresh_idempotency() -> Arc<dyn IdempotencyStore> {
    // The store shares the ledger's writer and keeps the database alive.
    Arc::new(common::ledger(true).await.idempotency())
}

/// The ledger and the replay store of its own database.
async fn fresh_kept() -> boxoffice_testkit::ledger::KeptPorts {
    let ledger = common::ledger(true).await;
    let replays = Arc::new(ledger.idempotency());
    boxoffice_testkit::ledger::KeptPorts {
        ledger: Arc::new(ledger),
        replays,
    }
}

async fn fresh_tickets() -> boxoffice_testkit::tickets::TicketStores {
    let ledger = Arc::new(common::ledger(true).await);
    boxoffice_testkit::tickets::TicketStores {
        ledger: ledger.clone(),
        tickets: ledger,
    }
}

async fn fresh_exchange() -> boxoffice_testkit::exchange::ExchangeStores {
    let ledger = Arc::new(common::ledger(true).await);
    boxoffice_testkit::exchange::ExchangeStores {
        ledger: ledger.clone(),
        tickets: ledger.clone(),
        exchange: ledger,
    }
}

boxoffice_testkit::ledger_conformance!(fresh_ledger());
boxoffice_testkit::ledger_kept_conformance!(fresh_kept());
boxoffice_testkit::exchange_conformance!(fresh_exchange());
boxoffice_testkit::tickets_conformance!(fresh_tickets());
boxoffice_testkit::idempotency_conformance!(fresh_idempotency());
boxoffice_testkit::shared_idempotency_conformance!(fresh_idempotency());
boxoffice_testkit::outbox_conformance!(fresh_outbox());

/// The same suites through the batches the server puts in front of the store: claims
/// and answers of concurrent callers gathered into one statement each.
mod batched {
    use super::*;
    use boxoffice_engine::BatchedReplays;

    async fn fresh_idempotency() -> Arc<dyn IdempotencyStore> {
        Arc::new(BatchedReplays::new(super::fresh_idempotency().await))
    }

    boxoffice_testkit::idempotency_conformance!(fresh_idempotency());
    boxoffice_testkit::shared_idempotency_conformance!(fresh_idempotency());
}
