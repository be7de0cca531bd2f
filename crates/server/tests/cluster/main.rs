//! The server's tests in cluster mode: several `boxoffice` processes sharing a fresh
//! PostgreSQL database (the ledger) and a Redis key prefix (the hot store), with faults
//! injected between them. PostgreSQL and Redis are required; these tests never skip.

#[path = "../common/mod.rs"]
mod common;

mod checkout_retry;
mod faults;
mod nodes;
mod operator_mistakes;
mod waiting;
