//! A node that connects to a Redis loads every script into it first, so no script
//! sent without waiting for its answer (the stored answer of a hold or a release) meets
//! NOSCRIPT and is sent again later, in the background, while a retry of the same
//! request finds its claim still in flight. A `redis-server` of the test's own, whose
//! script cache starts empty.

use boxoffice_store_redis::{RedisConn, script_hashes};
use boxoffice_testkit::harness::free_port;
use boxoffice_testkit::harness::redis::OwnRedis;

#[boxoffice_testkit::test(timeout_s = 60)]
async fn a_node_loads_every_script_as_it_connects() {
    let redis = OwnRedis::start(free_port()).await;
    let url = format!("redis://127.0.0.1:{}", redis.port);
    let hashes = script_hashes();
    let mut probe = RedisConn::connect(&url).await.expect("the Redis answers");
    let mut exists = redis::cmd("SCRIPT");
    exists.arg("EXISTS").arg(&hashes);
    // What the first connection loaded is gone after a flush: the next connection
    // finds an empty cache and must load everything again.
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut probe)
        .await
        .unwrap();
    let none: Vec<i64> = exists.query_async(&mut probe).await.unwrap();
    assert!(none.iter().all(|&e| e == 0), "flushed: {none:?}");

    let _node = RedisConn::connect(&url).await.expect("a node connects");
    let loaded: Vec<i64> = exists.query_async(&mut probe).await.unwrap();
    assert_eq!(loaded, vec![1; hashes.len()], "{hashes:?}");
}
