//! The in-memory arbiter against the reference model (testkit): every answer and the
//! whole seat and hold state identical after every step of random sequences.

use std::sync::Arc;

use boxoffice_engine::ports::SeatArbiter;
use boxoffice_store_memory::InMemoryArbiter;

#[test]
fn the_in_memory_arbiter_gives_the_reference_models_answers_to_random_sequences() {
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let arb = Arc::new(InMemoryArbiter::new()) as Arc<dyn SeatArbiter>;
    boxoffice_testkit::model::check_against_model(&runtime, arb, 256);
}
