//! The Redis scripts against the reference model (testkit): every answer and the whole
//! seat and hold state identical after every step of random sequences. Keys live under
//! this run's own prefix and are deleted when the run ends.

mod common;

use boxoffice_store_redis::{Prefix, RedisArbiter, RedisArbiterConfig};
use common::{PREFIX, connect, redis_url, tracked_arbiter};

/// Each case costs a few dozen round trips per step; this many take a few seconds.
const CASES: u32 = 24;

#[test]
fn the_redis_scripts_give_the_reference_models_answers_to_random_sequences() {
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let url = redis_url();
    let arb = runtime.block_on(async {
        let prefix = Prefix::new(PREFIX.as_str()).expect("the test prefix is valid");
        let arb = RedisArbiter::new(connect(&url).await, prefix, RedisArbiterConfig::default());
        tracked_arbiter(arb, &url)
    });
    boxoffice_testkit::model::check_against_model(&runtime, arb, CASES);
}
