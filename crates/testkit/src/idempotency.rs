//! The `IdempotencyStore` conformance suite (P4):
//!
//! ```ignore
//! boxoffice_testkit::idempotency_conformance!(async { fresh_store() });
//! ```
//!
//! The expression yields a fresh `Arc<dyn IdempotencyStore>` per case. Every case uses
//! its own random scope, so a shared backend passes too.

use std::sync::Arc;

use boxoffice_domain::{BuyerId, Millis};
use boxoffice_engine::ports::{Begin, IdempotencyStore, StoredResponse};

/// Expands into `mod idempotency { … }` with one `#[tokio::test]` per case.
#[macro_export]
macro_rules! idempotency_conformance {
    ($make:expr) => {
        mod idempotency {
            #[allow(unused_imports)]
            use super::*;
            $crate::__port_suite_cases!(idempotency, $make;
                a_first_request_proceeds_and_a_finished_one_replays,
                a_key_reused_for_another_request_is_a_mismatch,
                a_running_request_is_in_flight_until_its_lease_lapses,
                an_abandoned_key_runs_again,
                abandoning_a_finished_key_keeps_its_response,
                the_same_key_in_two_scopes_is_two_keys,
            );
        }
    };
}

const NOW: Millis = Millis(1_700_000_000_000);
const LEASE: i64 = 30_000;
const FP: [u8; 32] = [7; 32];

fn scope() -> String {
    format!("buyer:{}", BuyerId::random())
}

fn created() -> StoredResponse {
    StoredResponse {
        status: 201,
        body: br#"{"order_id":"o1"}"#.to_vec(),
    }
}

pub async fn a_first_request_proceeds_and_a_finished_one_replays(store: Arc<dyn IdempotencyStore>) {
    let s = scope();
    assert_eq!(
        store.begin(&s, "k1", &FP, NOW, LEASE).await.unwrap(),
        Begin::Proceed
    );
    store.finish(&s, "k1", &created()).await.unwrap();
    // A replay long after the lease would have lapsed still gets the first answer.
    let later = NOW.plus_secs(3_600);
    assert_eq!(
        store.begin(&s, "k1", &FP, later, LEASE).await.unwrap(),
        Begin::Replay(created())
    );
}

pub async fn a_key_reused_for_another_request_is_a_mismatch(store: Arc<dyn IdempotencyStore>) {
    let s = scope();
    store.begin(&s, "k1", &FP, NOW, LEASE).await.unwrap();
    assert_eq!(
        store.begin(&s, "k1", &[8; 32], NOW, LEASE).await.unwrap(),
        Begin::Mismatch
    );
    store.finish(&s, "k1", &created()).await.unwrap();
    assert_eq!(
        store.begin(&s, "k1", &[8; 32], NOW, LEASE).await.unwrap(),
        Begin::Mismatch
    );
}

pub async fn a_running_request_is_in_flight_until_its_lease_lapses(
    store: Arc<dyn IdempotencyStore>,
) {
    let s = scope();
    assert_eq!(
        store.begin(&s, "k1", &FP, NOW, LEASE).await.unwrap(),
        Begin::Proceed
    );
    assert_eq!(
        store
            .begin(&s, "k1", &FP, NOW.plus_millis(LEASE - 1), LEASE)
            .await
            .unwrap(),
        Begin::InFlight
    );
    // The first holder crashed: after the lease the retry takes the key over, and
    // holds it for a lease of its own.
    let lapsed = NOW.plus_millis(LEASE + 1);
    assert_eq!(
        store.begin(&s, "k1", &FP, lapsed, LEASE).await.unwrap(),
        Begin::Proceed
    );
    assert_eq!(
        store
            .begin(&s, "k1", &FP, lapsed.plus_millis(1), LEASE)
            .await
            .unwrap(),
        Begin::InFlight
    );
    store.finish(&s, "k1", &created()).await.unwrap();
    assert_eq!(
        store.begin(&s, "k1", &FP, lapsed, LEASE).await.unwrap(),
        Begin::Replay(created())
    );
}

pub async fn an_abandoned_key_runs_again(store: Arc<dyn IdempotencyStore>) {
    let s = scope();
    store.begin(&s, "k1", &FP, NOW, LEASE).await.unwrap();
    store.abandon(&s, "k1").await.unwrap();
    assert_eq!(
        store
            .begin(&s, "k1", &FP, NOW.plus_millis(1), LEASE)
            .await
            .unwrap(),
        Begin::Proceed
    );
}

pub async fn abandoning_a_finished_key_keeps_its_response(store: Arc<dyn IdempotencyStore>) {
    let s = scope();
    store.begin(&s, "k1", &FP, NOW, LEASE).await.unwrap();
    store.finish(&s, "k1", &created()).await.unwrap();
    store.abandon(&s, "k1").await.unwrap();
    assert_eq!(
        store.begin(&s, "k1", &FP, NOW, LEASE).await.unwrap(),
        Begin::Replay(created())
    );
}

pub async fn the_same_key_in_two_scopes_is_two_keys(store: Arc<dyn IdempotencyStore>) {
    let (a, b) = (scope(), scope());
    assert_eq!(
        store.begin(&a, "k1", &FP, NOW, LEASE).await.unwrap(),
        Begin::Proceed
    );
    assert_eq!(
        store.begin(&b, "k1", &[9; 32], NOW, LEASE).await.unwrap(),
        Begin::Proceed
    );
}
