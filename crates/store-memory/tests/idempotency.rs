//! `MemoryIdempotency` against the shared suites, plus its own forgetting by age.

use std::sync::Arc;

use boxoffice_domain::Millis;
use boxoffice_engine::ports::{Begin, IdempotencyStore, ReplayKey, StoredResponse};
use boxoffice_store_memory::MemoryIdempotency;
use boxoffice_testkit::idempotency::claimant;

boxoffice_testkit::idempotency_conformance!(async {
    Arc::new(MemoryIdempotency::new()) as Arc<dyn IdempotencyStore>
});
boxoffice_testkit::single_process_idempotency_conformance!(async {
    Arc::new(MemoryIdempotency::new()) as Arc<dyn IdempotencyStore>
});
boxoffice_testkit::bounded_idempotency_conformance!(|cap: usize| async move {
    let retention = boxoffice_store_memory::idempotency::RETENTION_MS;
    Arc::new(MemoryIdempotency::with_limits(cap, retention)) as Arc<dyn IdempotencyStore>
});

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

#[boxoffice_testkit::test]
async fn a_finished_key_is_forgotten_a_day_after_its_claim() {
    let (store, me) = (MemoryIdempotency::new(), claimant());
    let (t0, fp) = (Millis(1_000), [1u8; 32]);
    assert_eq!(
        store.begin(&ReplayKey::new("s", "k"), &fp, t0, &me).await,
        Ok(Begin::Proceed)
    );
    let resp = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    store
        .finish(&ReplayKey::new("s", "k"), me.lease_from(t0), &resp)
        .await
        .expect("finish");
    let almost = t0.plus_millis(DAY_MS - 1);
    assert_eq!(
        store
            .begin(&ReplayKey::new("s", "k"), &fp, almost, &me)
            .await,
        Ok(Begin::Replay(resp))
    );
    // A day on, the key is new again (and a different request may use it).
    assert_eq!(
        store
            .begin(
                &ReplayKey::new("s", "k"),
                &[2u8; 32],
                t0.plus_millis(DAY_MS),
                &me
            )
            .await,
        Ok(Begin::Proceed)
    );
}

#[boxoffice_testkit::test]
async fn a_reclaimed_key_is_not_forgotten_by_its_first_claim() {
    let (store, me) = (MemoryIdempotency::new(), claimant());
    let fp = [1u8; 32];
    assert_eq!(
        store
            .begin(&ReplayKey::new("s", "k"), &fp, Millis(0), &me)
            .await,
        Ok(Begin::Proceed)
    );
    store
        .abandon(&ReplayKey::new("s", "k"), me.lease_from(Millis(0)))
        .await
        .expect("abandon");
    let later = Millis(DAY_MS / 2);
    assert_eq!(
        store
            .begin(&ReplayKey::new("s", "k"), &fp, later, &me)
            .await,
        Ok(Begin::Proceed)
    );
    store
        .finish(
            &ReplayKey::new("s", "k"),
            me.lease_from(later),
            &StoredResponse {
                status: 200,
                body: vec![],
            },
        )
        .await
        .expect("finish");
    // The first claim's day is over; the second claim's is not.
    let replay = store
        .begin(&ReplayKey::new("s", "k"), &fp, Millis(DAY_MS), &me)
        .await;
    assert!(matches!(replay, Ok(Begin::Replay(_))), "{replay:?}");
}
