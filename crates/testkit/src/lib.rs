//! Conformance suites shared by every adapter of a port. An adapter's test file invokes
//! the suite's macro with an expression that builds a fresh, isolated instance; the
//! macro expands into one named `#[boxoffice_testkit::test]` (a tokio test with a
//! deadline) per case. Also what tests of TLS share: a certificate authority made by
//! the test and a Stripe stand-in over HTTPS. With the `harness` feature, the harness of
//! the integration tests (the `harness` module).

pub mod claimed;
pub mod claimed_joins;
pub mod claimed_lost;
pub mod exchange;
pub mod hooked;
pub mod idempotency;
pub mod ledger;
pub mod outbox;
pub mod proofs;
pub mod tickets;
pub mod velocity;

pub mod arbiter;
pub mod queue;

pub mod siteverify_stub;
pub mod stripe_stub;
pub mod tls;

pub mod deadline;
#[cfg(feature = "harness")]
pub mod harness;
pub mod logs;
pub mod model;

/// `#[tokio::test]` with a deadline: see the `boxoffice-testkit-macros` crate.
pub use boxoffice_testkit_macros::test;
pub use deadline::{eventually, within};
