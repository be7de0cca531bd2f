//! The embedded ledger: the `Ledger` and `IdempotencyStore` ports over one SQLite file
//! in WAL mode with `synchronous=FULL`.
//!
//! Every write goes to one writer thread that groups whatever is queued into one
//! transaction (group commit: one fsync serves the batch), each write in its own
//! savepoint so a refused sale undoes only itself. Reads use a small pool of reader
//! connections on blocking threads. Migrations are embedded from `migrations/sqlite`.

mod audit;
mod cancel;
mod checkpoint;
mod commit;
mod conn;
mod event_cancel;
mod events;
mod exchange;
mod exchange_rows;
mod idempotency;
mod ledger;
mod migrate;
mod moves;
mod name_rows;
mod options;
mod orders;
mod outbox;
mod reader;
mod standing;
mod ticket_rows;
mod tickets;
mod transfer_rows;
mod writer;

pub use idempotency::SqliteIdempotency;
pub use ledger::SqliteLedger;
pub use migrate::migrate;
pub use options::SqliteOptions;
