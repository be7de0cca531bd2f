//! The ports the use cases call. Each is narrow and atomic: a port method either does
//! all of what its name says or nothing. Adapters live in the `store-*` and `payment-*`
//! crates; every adapter of a port passes the same conformance suite (`testkit`).

mod arbiter;
mod cancellation;
mod claimed;
mod clock;
mod exchange;
mod human;
mod idempotency;
mod identity;
mod ledger;
mod names;
mod outbox;
mod payment;
mod proofs;
mod queue;
mod tickets;
mod transfers;
mod velocity;

pub use arbiter::*;
pub use cancellation::*;
pub use claimed::*;
pub use clock::*;
pub use exchange::*;
pub use human::*;
pub use idempotency::*;
pub use identity::*;
pub use ledger::*;
pub use names::*;
pub use outbox::*;
pub use payment::*;
pub use proofs::*;
pub use queue::*;
pub use tickets::*;
pub use transfers::*;
pub use velocity::*;

/// A failure of the store itself (connection lost, disk full), as opposed to an answer
/// such as "that seat is taken". Carries text for the log, never for the client.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("store unavailable: {0}")]
pub struct StoreError(pub String);

impl StoreError {
    pub fn new(e: impl std::fmt::Display) -> Self {
        StoreError(e.to_string())
    }
}
