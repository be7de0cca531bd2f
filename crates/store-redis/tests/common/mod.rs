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

#[allow(unused_imports)]
pub use tracked::Tracked;

/// The Redis the tests use: `BOXOFFICE_TEST_REDIS_URL`, else the machine's own.
pub fn redis_url() -> String {
    std::env::var("BOXOFFICE_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

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

/// Deletes every key starting with `prefix` or `{prefix` on every node named in `urls`.
pub fn delete_prefix(urls: &str, prefix: &str) -> redis::RedisResult<usize> {
    let mut deleted = 0;
    for url in urls.split(',').map(str::trim).filter(|u| !u.is_empty()) {
        let mut con = redis::Client::open(url)?.get_connection()?;
        for pattern in [format!("{prefix}*"), format!("{{{prefix}*")] {
            let keys: Vec<String> = redis::cmd("SCAN")
                .cursor_arg(0)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .clone()
                .iter(&mut con)?
                .collect::<Result<_, _>>()?;
            for key in &keys {
                // One key per DEL: on a cluster node keys of several slots may match.
                deleted += redis::cmd("DEL").arg(key).query::<usize>(&mut con)?;
            }
        }
    }
    Ok(deleted)
}
