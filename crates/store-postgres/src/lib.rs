//! The cluster ledger: the `Ledger` and `IdempotencyStore` ports over PostgreSQL, shared
//! by every `boxoffice serve` node, with `synchronous_commit` left on.
//!
//! Every write goes to the node's writer tasks (two by default, one connection each),
//! which group whatever is queued into one transaction (group commit: one WAL flush
//! serves the batch), each write in its own subtransaction so a refused sale undoes
//! only itself. A batch's commits go to the server in one call of a PL/pgSQL function
//! (`ledger_commit_batch`). Reads use a small pool.
//! Conflicts between nodes are settled by the same constraints (`sold_seats_pkey`,
//! `buyer_within_limit`, `one_order_per_hold`) that settle them within a node.
//! Migrations are embedded from `migrations/postgres`.

mod audit;
mod cancel;
mod commit;
mod conn;
mod event_cancel;
mod events;
mod exchange;
mod exchange_rows;
mod handover;
mod idempotency;
mod ledger;
mod migrate;
mod moves;
mod names;
mod options;
mod orders;
mod outbox;
mod standing;
mod ticket_rows;
mod tickets;
mod transfers;
mod writer;

pub use idempotency::PostgresIdempotency;
pub use ledger::PostgresLedger;
pub use migrate::migrate;
pub use options::PostgresOptions;
pub use writer::WriterStats;
