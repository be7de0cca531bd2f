//! The in-memory backends against the shared port suites (testkit); holds under
//! claims are the two-step `ClaimThenHold` on the in-memory replay store.

use std::sync::Arc;

use boxoffice_engine::ports::{ClaimThenHold, QueueStore, SeatArbiter};
use boxoffice_store_memory::{InMemoryArbiter, InMemoryQueue, MemoryIdempotency};
use boxoffice_testkit::claimed::ClaimedPorts;

boxoffice_testkit::arbiter_conformance!(async {
    Arc::new(InMemoryArbiter::new()) as Arc<dyn SeatArbiter>
});
boxoffice_testkit::queue_conformance!(async {
    Arc::new(InMemoryQueue::new()) as Arc<dyn QueueStore>
});
boxoffice_testkit::claimed_holds_conformance!(async {
    let arbiter: Arc<dyn SeatArbiter> = Arc::new(InMemoryArbiter::new());
    let holds = ClaimThenHold::new(Arc::new(MemoryIdempotency::new()), arbiter.clone());
    ClaimedPorts {
        holds: Arc::new(holds),
        arbiter,
    }
});
