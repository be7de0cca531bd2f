//! Model-based test of a `SeatArbiter`: random sequences of holds, pins, moves, retakes,
//! clock ticks and expiry sweeps run against the adapter and against a plain reference
//! model ([`Model`]); after every step the answer, the availability bitmap, the counts,
//! the sold seats and every hold seen so far must be identical.
//!
//! ```ignore
//! #[test]
//! fn the_arbiter_agrees_with_the_reference_model() {
//!     let rt = tokio::runtime::Runtime::new().unwrap();
//!     let arb = rt.block_on(make_arbiter());
//!     boxoffice_testkit::model::check_against_model(&rt, arb, 256);
//! }
//! ```
//!
//! Each case loads its own event under a random id and unloads it when it passes, so a
//! shared backend can run it. Failures are shrunk to a minimal sequence by proptest.

mod ops;
mod reference;
mod step;

use std::sync::Arc;
use std::time::Duration;

use boxoffice_engine::ports::SeatArbiter;
use proptest::test_runner::{Config, TestError, TestRunner};

pub use ops::{Case, Choice, Op};
pub use reference::Model;
pub use step::run_case;

/// Operations per case, at most.
const MAX_OPS: usize = 60;
/// One case on a remote backend takes well under a second; a stuck one fails here.
const CASE_LIMIT: Duration = Duration::from_secs(60);

/// Runs `cases` random cases against `arb` on `runtime` (a runtime of the caller's, as
/// the adapter's connections may be bound to it); panics with the minimal failing
/// sequence if the adapter and the model ever disagree.
pub fn check_against_model(
    runtime: &tokio::runtime::Runtime,
    arb: Arc<dyn SeatArbiter>,
    cases: u32,
) {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let outcome = runner.run(&ops::case(MAX_OPS), |case| {
        let what = "one model case to run";
        runtime.block_on(crate::within(CASE_LIMIT, what, run_case(arb.clone(), case)))
    });
    match outcome {
        Ok(()) => {}
        Err(TestError::Fail(why, case)) => {
            panic!("the arbiter disagrees with the model: {why}\nminimal case: {case:#?}")
        }
        Err(e) => panic!("{e}"),
    }
}
