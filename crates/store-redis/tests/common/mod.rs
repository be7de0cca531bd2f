//! What the Redis tests share: the server to use, a prefix unique to this test run, and
//! cleanup of every key under that prefix once the last case using it is done.
//!
//! The suites' macros build one port per case and give no hook at the end of a run, so
//! each port is wrapped in `Tracked`, which counts live ports; when the count drops to
//! zero the run's keys are deleted (SCAN MATCH + DEL). A case starting meanwhile waits
//! on the same lock, so cleanup never deletes keys a running case is using.

#![allow(dead_code)]

pub mod tls_server;
pub mod tracked;

use std::sync::{LazyLock, Mutex};

use boxoffice_store_redis::{ConnectConfig, RedisConn};

#[allow(unused_imports)] // each test binary uses a different part
pub use boxoffice_testkit::harness::redis::{delete_prefix, redis_url};
#[allow(unused_imports)]
pub use tracked::{Tracked, tracked_arbiter};

/// This run's prefix; every key the tests create starts with it (or `{` + it).
pub static PREFIX: LazyLock<String> = LazyLock::new(|| {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    format!("bo-test-{ms}-{:08x}", uuid::Uuid::new_v4().as_u128() as u32)
});

/// Live ports of this run.
static LIVE: Mutex<usize> = Mutex::new(0);

/// A connection, or a failed test: CI treats a missing Redis as a failure, never a skip.
pub async fn connect(urls: &str) -> RedisConn {
    // The race suites put 10,000 calls on one multiplexed connection at once; on a
    // loaded machine the last answer comes later than the 2 s production default,
    // and a timeout there would test the machine, not the store.
    let config = ConnectConfig {
        response_timeout: std::time::Duration::from_secs(30),
        ..ConnectConfig::default()
    };
    match RedisConn::connect_with(urls, config).await {
        Ok(conn) => conn,
        Err(e) => panic!(
            "Redis is not reachable ({e}). Start redis-server on 127.0.0.1:6379 or point \
             BOXOFFICE_TEST_REDIS_URL at one; these tests never skip."
        ),
    }
}

fn enter() {
    *LIVE.lock().unwrap_or_else(|p| p.into_inner()) += 1;
}

fn leave(urls: &str) {
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    *live -= 1;
    if *live == 0 {
        // Held across the cleanup so that no case starts while its keys could vanish.
        if let Err(e) = delete_prefix(urls, &PREFIX) {
            eprintln!("cleanup of Redis keys under {} failed: {e}", *PREFIX);
        }
    }
}
