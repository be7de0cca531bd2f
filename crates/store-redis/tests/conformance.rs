//! The SeatArbiter, QueueStore, IdempotencyStore, ClaimedHolds (one step, and two with a lost
//! answer), ClaimedJoins, VelocityStore and
//! ProofMemory conformance suites against a real Redis (`BOXOFFICE_TEST_REDIS_URL`, default the
//! machine's 127.0.0.1:6379), under a prefix unique to this run; every key is deleted
//! when the run's last case ends.

mod common;

use std::sync::Arc;

use boxoffice_engine::ports::{
    IdempotencyStore, ProofMemory, QueueStore, SeatArbiter, VelocityStore,
};
use boxoffice_store_redis::{
    Prefix, RedisArbiter, RedisArbiterConfig, RedisClaimedHolds, RedisClaimedJoins,
    RedisIdempotency, RedisProofs, RedisQueue, RedisVelocity,
};
use boxoffice_testkit::claimed::ClaimedPorts;
use boxoffice_testkit::claimed_joins::ClaimedLine;
use boxoffice_testkit::claimed_lost::TwoSteps;
use common::{PREFIX, Tracked, connect, redis_url, tracked_arbiter};

fn prefix() -> Prefix {
    Prefix::new(PREFIX.as_str()).expect("the test prefix is valid")
}

async fn arbiter() -> Arc<dyn SeatArbiter> {
    let url = redis_url();
    let arb = RedisArbiter::new(connect(&url).await, prefix(), RedisArbiterConfig::default());
    tracked_arbiter(arb, &url)
}

async fn queue() -> Arc<dyn QueueStore> {
    let url = redis_url();
    Arc::new(Tracked::new(
        RedisQueue::new(connect(&url).await, prefix()),
        &url,
    ))
}

async fn idempotency() -> Arc<dyn IdempotencyStore> {
    let url = redis_url();
    let store = RedisIdempotency::new(connect(&url).await, prefix());
    Arc::new(Tracked::new(store, &url))
}

async fn velocity() -> Arc<dyn VelocityStore> {
    let url = redis_url();
    let store = RedisVelocity::new(connect(&url).await, prefix());
    Arc::new(Tracked::new(store, &url))
}

/// A store of its own (a prefix under the run's, so cleanup still finds it): the cases
/// fill it to its cap.
async fn capped(cap: usize) -> Arc<dyn IdempotencyStore> {
    let url = redis_url();
    let own = Prefix::new(format!("{}-cap-{}", *PREFIX, uuid::Uuid::new_v4().simple()))
        .expect("a valid prefix");
    let store = RedisIdempotency::new(connect(&url).await, own)
        .with_limits(cap as u64, boxoffice_store_redis::IDEMPOTENCY_RETENTION);
    Arc::new(Tracked::new(store, &url))
}

/// The one-script holds under claims (a single Redis), on one connection.
async fn claimed() -> ClaimedPorts {
    let url = redis_url();
    let conn = connect(&url).await;
    let arbiter = || RedisArbiter::new(conn.clone(), prefix(), RedisArbiterConfig::default());
    let replays = Arc::new(RedisIdempotency::new(conn.clone(), prefix()));
    let holds = RedisClaimedHolds::new(Arc::new(arbiter()), replays);
    ClaimedPorts {
        holds: Arc::new(holds),
        // The same arbiter, counted live for the run's cleanup.
        arbiter: tracked_arbiter(arbiter(), &url),
    }
}

/// Holds under claims in two steps, as on a Redis Cluster (the claim's record and the
/// event in different slots), on the real stores.
async fn two_steps() -> TwoSteps {
    TwoSteps {
        replays: idempotency().await,
        arbiter: arbiter().await,
    }
}

/// The one-script joins under claims (a single Redis), on one connection.
async fn claimed_joins() -> ClaimedLine {
    let url = redis_url();
    let conn = connect(&url).await;
    let queue = Arc::new(RedisQueue::new(conn.clone(), prefix()));
    let replays = Arc::new(RedisIdempotency::new(conn.clone(), prefix()));
    ClaimedLine {
        joins: Arc::new(RedisClaimedJoins::new(queue, replays)),
        // The same line, counted live for the run's cleanup.
        queue: Arc::new(Tracked::new(RedisQueue::new(conn, prefix()), &url)),
    }
}

async fn proofs() -> Arc<dyn ProofMemory> {
    let url = redis_url();
    Arc::new(Tracked::new(
        RedisProofs::new(connect(&url).await, prefix()),
        &url,
    ))
}

async fn capped_proofs(cap: usize) -> Arc<dyn ProofMemory> {
    let url = redis_url();
    let store = RedisProofs::new(connect(&url).await, prefix()).with_limit(cap as u64);
    Arc::new(Tracked::new(store, &url))
}

boxoffice_testkit::arbiter_conformance!(arbiter());
boxoffice_testkit::queue_conformance!(queue());
boxoffice_testkit::idempotency_conformance!(idempotency());
boxoffice_testkit::shared_idempotency_conformance!(idempotency());
boxoffice_testkit::bounded_idempotency_conformance!(capped);
boxoffice_testkit::claimed_holds_conformance!(claimed());
boxoffice_testkit::claimed_joins_conformance!(claimed_joins());
boxoffice_testkit::claimed_lost_conformance!(two_steps());
boxoffice_testkit::velocity_conformance!(velocity());
boxoffice_testkit::proofs_conformance!(proofs());
boxoffice_testkit::bounded_proofs_conformance!(capped_proofs);
