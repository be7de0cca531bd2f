//! The shared ledger and idempotency suites on a fresh SQLite file per case. One
//! process at a time opens a ledger file, so it runs the single-process liveness cases.

use std::sync::Arc;

use boxoffice_engine::ports::{IdempotencyStore, Ledger};
use boxoffice_store_sqlite::{SqliteLedger, SqliteOptions};
use boxoffice_testkit::outbox::OutboxUnderTest;

/// A ledger on a new file in a new temp directory, removed when the ledger is dropped.
fn fresh() -> SqliteLedger {
    let dir = tempfile::tempdir().expect("a temp directory");
    let ledger = SqliteLedger::open(dir.path().join("ledger.db"), SqliteOptions::default())
        .expect("open the ledger");
    ledger.keep_alive(dir);
    ledger
}

fn fresh_ledger() -> Arc<dyn Ledger> {
    Arc::new(fresh())
}

/// The ledger and the replay store of its own file.
fn fresh_kept() -> boxoffice_testkit::ledger::KeptPorts {
    let ledger = fresh();
    let replays = Arc::new(ledger.idempotency());
    boxoffice_testkit::ledger::KeptPorts {
        ledger: Arc::new(ledger),
        replays,
    }
}

/// A replay store kept outside the ledger's database (in memory) falls back: its
/// callers move and keep in turn.
mod kept_elsewhere {
    use super::*;

    fn fresh_kept() -> boxoffice_testkit::ledger::KeptPorts {
        boxoffice_testkit::ledger::KeptPorts {
            ledger: Arc::new(fresh()),
            replays: Arc::new(boxoffice_store_memory::MemoryIdempotency::new()),
        }
    }

    boxoffice_testkit::ledger_kept_conformance!(async { fresh_kept() });
}

fn fresh_outbox() -> OutboxUnderTest {
    let ledger = Arc::new(fresh());
    OutboxUnderTest {
        ledger: ledger.clone(),
        outbox: ledger.clone(),
        tickets: ledger,
    }
}

fn fresh_idempotency() -> Arc<dyn IdempotencyStore> {
    // The store shares the ledger's writer and keeps its temp directory alive.
    Arc::new(fresh().idempotency())
}

fn fresh_tickets() -> boxoffice_testkit::tickets::TicketStores {
    let ledger = Arc::new(fresh());
    boxoffice_testkit::tickets::TicketStores {
        ledger: ledger.clone(),
        tickets: ledger,
    }
}

fn fresh_exchange() -> boxoffice_testkit::exchange::ExchangeStores {
    let ledger = Arc::new(fresh());
    boxoffice_testkit::exchange::ExchangeStores {
        ledger: ledger.clone(),
        tickets: ledger.clone(),
        exchange: ledger,
    }
}

boxoffice_testkit::ledger_conformance!(async { fresh_ledger() });
boxoffice_testkit::ledger_kept_conformance!(async { fresh_kept() });
boxoffice_testkit::exchange_conformance!(async { fresh_exchange() });
boxoffice_testkit::tickets_conformance!(async { fresh_tickets() });
boxoffice_testkit::idempotency_conformance!(async { fresh_idempotency() });
boxoffice_testkit::single_process_idempotency_conformance!(async { fresh_idempotency() });
boxoffice_testkit::outbox_conformance!(async { fresh_outbox() });

/// The same suites through the batches the server puts in front of the store: claims
/// and answers of concurrent callers gathered into one writer job.
mod batched {
    use super::*;
    use boxoffice_engine::BatchedReplays;

    fn fresh_idempotency() -> Arc<dyn IdempotencyStore> {
        Arc::new(BatchedReplays::new(super::fresh_idempotency()))
    }

    boxoffice_testkit::idempotency_conformance!(async { fresh_idempotency() });
    boxoffice_testkit::single_process_idempotency_conformance!(async { fresh_idempotency() });
}
