//! The in-memory backends against the shared port suites (testkit); holds under
//! claims are `MemoryClaimedHolds` (and the two-step `ClaimThenHold` it builds on) on
//! the in-memory replay store, joins under claims `ClaimThenJoin`.

use std::sync::Arc;

use boxoffice_engine::ports::{ClaimThenHold, ClaimThenJoin, QueueStore, SeatArbiter};
use boxoffice_store_memory::{
    InMemoryArbiter, InMemoryQueue, MemoryClaimedHolds, MemoryIdempotency,
};
use boxoffice_testkit::claimed::ClaimedPorts;
use boxoffice_testkit::claimed_joins::ClaimedLine;
use boxoffice_testkit::claimed_lost::TwoSteps;

boxoffice_testkit::arbiter_conformance!(async {
    Arc::new(InMemoryArbiter::new()) as Arc<dyn SeatArbiter>
});
boxoffice_testkit::queue_conformance!(async {
    Arc::new(InMemoryQueue::new()) as Arc<dyn QueueStore>
});
boxoffice_testkit::claimed_holds_conformance!(async {
    let arbiter: Arc<dyn SeatArbiter> = Arc::new(InMemoryArbiter::new());
    let holds = MemoryClaimedHolds::new(Arc::new(MemoryIdempotency::new()), arbiter.clone());
    ClaimedPorts {
        holds: Arc::new(holds),
        arbiter,
    }
});
/// The two steps the adapter falls back to, on the same stores.
mod two_steps {
    use super::*;
    boxoffice_testkit::claimed_holds_conformance!(async {
        let arbiter: Arc<dyn SeatArbiter> = Arc::new(InMemoryArbiter::new());
        let holds = ClaimThenHold::new(Arc::new(MemoryIdempotency::new()), arbiter.clone());
        ClaimedPorts {
            holds: Arc::new(holds),
            arbiter,
        }
    });
}
boxoffice_testkit::claimed_lost_conformance!(async {
    TwoSteps {
        replays: Arc::new(MemoryIdempotency::new()),
        arbiter: Arc::new(InMemoryArbiter::new()),
    }
});
boxoffice_testkit::claimed_joins_conformance!(async {
    let queue: Arc<dyn QueueStore> = Arc::new(InMemoryQueue::new());
    let joins = ClaimThenJoin::new(Arc::new(MemoryIdempotency::new()), queue.clone());
    ClaimedLine {
        joins: Arc::new(joins),
        queue,
    }
});
