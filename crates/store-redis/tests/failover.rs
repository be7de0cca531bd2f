//! A primary and its replica named by a list (`failover`): the connection writes only
//! to the primary, whatever the order of the list, and after the primary dies and the
//! replica is promoted it follows the new primary by itself. Two `redis-server`
//! processes of the test's own.

use std::time::Duration;

use boxoffice_store_redis::{ConnectConfig, RedisConn};
use boxoffice_testkit::eventually;
use boxoffice_testkit::harness::free_port;
use boxoffice_testkit::harness::redis::OwnRedis;

async fn set(conn: &mut RedisConn, key: &str) -> redis::RedisResult<()> {
    redis::cmd("SET").arg(key).arg("1").query_async(conn).await
}

async fn exists_on(port: u16, key: &str) -> bool {
    let url = format!("redis://127.0.0.1:{port}");
    let mut conn = RedisConn::connect(&url).await.expect("the Redis answers");
    let n: i64 = redis::cmd("EXISTS")
        .arg(key)
        .query_async(&mut conn)
        .await
        .unwrap();
    n == 1
}

#[boxoffice_testkit::test(timeout_s = 120)]
async fn a_listed_replica_is_never_written_and_a_promoted_one_is_followed() {
    let mut primary = OwnRedis::start(free_port()).await;
    let replica = OwnRedis::replica_of(free_port(), &primary).await;
    // The replica first: the role, not the order, decides.
    let urls = format!(
        "redis://127.0.0.1:{},redis://127.0.0.1:{}",
        replica.port, primary.port
    );
    let config = ConnectConfig {
        failover: true,
        connect_timeout: Duration::from_secs(5),
        ..ConnectConfig::default()
    };
    let mut conn = RedisConn::connect_with(&urls, config)
        .await
        .expect("a primary");
    set(&mut conn, "before")
        .await
        .expect("the primary takes the write");
    assert!(exists_on(primary.port, "before").await);

    primary.kill().await;
    // No primary while the replica waits for its dead one: refused, never written.
    assert!(set(&mut conn, "orphaned").await.is_err());
    assert!(
        set(&mut conn, "orphaned").await.is_err(),
        "a replica is no primary"
    );
    replica.promote().await;
    let what = "the promoted replica taking the write";
    let every = Duration::from_millis(50);
    eventually(what, Duration::from_secs(20), every, || {
        let mut conn = conn.clone();
        async move { set(&mut conn, "after").await.map_err(|e| e.to_string()) }
    })
    .await;
    assert!(exists_on(replica.port, "after").await);
    assert!(!exists_on(replica.port, "orphaned").await);
}
