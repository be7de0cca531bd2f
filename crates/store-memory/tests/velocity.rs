//! `MemoryVelocity` against the shared suite, plus its own bound on keys.

use std::sync::Arc;

use boxoffice_domain::{EventId, Millis};
use boxoffice_engine::ports::{Admission, Counter, VelocityStore};
use boxoffice_store_memory::MemoryVelocity;

boxoffice_testkit::velocity_conformance!(async {
    Arc::new(MemoryVelocity::new()) as Arc<dyn VelocityStore>
});

fn counter(key: String) -> Counter {
    Counter {
        key,
        limit: 1,
        window_ms: 1_000,
        add: true,
    }
}

#[boxoffice_testkit::test]
async fn a_full_store_sweeps_what_aged_out_and_otherwise_refuses_to_grow() {
    let store = MemoryVelocity::with_max_keys(3);
    let e = EventId(1);
    for i in 0..3 {
        let c = [counter(format!("k{i}"))];
        assert_eq!(store.check(e, &c, Millis(0)).await, Ok(Admission::Admitted));
    }
    let fourth = [counter("k3".into())];
    assert!(store.check(e, &fourth, Millis(500)).await.is_err());
    // A window on, the first three have aged out and make room.
    let later = store.check(e, &fourth, Millis(1_000)).await;
    assert_eq!(later, Ok(Admission::Admitted));
}
