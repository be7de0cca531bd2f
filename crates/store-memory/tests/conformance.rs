//! The in-memory backends against the shared port suites (testkit).

use std::sync::Arc;

use boxoffice_engine::ports::{QueueStore, SeatArbiter};
use boxoffice_store_memory::{InMemoryArbiter, InMemoryQueue};

boxoffice_testkit::arbiter_conformance!(async {
    Arc::new(InMemoryArbiter::new()) as Arc<dyn SeatArbiter>
});
boxoffice_testkit::queue_conformance!(async {
    Arc::new(InMemoryQueue::new()) as Arc<dyn QueueStore>
});
