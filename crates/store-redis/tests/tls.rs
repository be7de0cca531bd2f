//! `rediss://`: the seat arbiter on a Redis (and a Redis Cluster) that listens only on a
//! TLS port with a certificate from a CA the test made. Trusted through `ca_file` it
//! works; with another CA, or with the system's store alone, the connection is refused.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use boxoffice_domain::BuyerId;
use boxoffice_engine::ports::SeatArbiter;
use boxoffice_store_redis::{ConnectConfig, Prefix, RedisArbiter, RedisArbiterConfig, RedisConn};
use boxoffice_testkit::arbiter::{FRONT, Fixture};
use boxoffice_testkit::tls::TestCa;
use common::tls_server::TlsRedis;

fn trusting(ca_file: Option<&std::path::Path>) -> ConnectConfig {
    ConnectConfig {
        ca_file: ca_file.map(|p| p.to_path_buf()),
        ..ConnectConfig::default()
    }
}

async fn connect(urls: &str, config: ConnectConfig) -> Result<RedisConn, String> {
    let connecting = RedisConn::connect_with(urls, config);
    match tokio::time::timeout(Duration::from_secs(20), connecting).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => panic!("connecting to {urls} hung"),
    }
}

/// Holds and releases a seat through the arbiter: the hot path works end to end.
async fn hold_a_seat(conn: RedisConn) {
    let prefix = Prefix::new("bo-tls-test").unwrap();
    let arb: Arc<dyn SeatArbiter> = Arc::new(RedisArbiter::new(
        conn,
        prefix,
        RedisArbiterConfig::default(),
    ));
    let f = Fixture::small(arb).await;
    let held = f.best(BuyerId::random(), FRONT, 2, true).await.unwrap();
    assert_eq!(held.seats.len(), 2);
    assert_eq!(f.free(&held.seats).await, vec![false, false]);
    f.done().await;
}

#[boxoffice_testkit::test]
async fn the_arbiter_works_over_rediss_with_the_private_ca_configured() {
    let ca = TestCa::new("redis test CA");
    let redis = TlsRedis::start(&ca, 1);
    let conn = connect(&redis.urls(), trusting(Some(&redis.files.ca))).await;
    hold_a_seat(conn.expect("a TLS connection trusting the test CA")).await;
}

#[boxoffice_testkit::test]
async fn rediss_with_a_wrong_ca_or_only_the_system_store_is_refused() {
    let ca = TestCa::new("redis test CA");
    let redis = TlsRedis::start(&ca, 1);
    let dir = tempfile::tempdir().unwrap();
    let wrong = TestCa::new("another CA").write_files(dir.path()).ca;
    for ca_file in [Some(wrong.as_path()), None] {
        let refused = connect(&redis.urls(), trusting(ca_file)).await;
        let why = refused
            .err()
            .expect("an untrusted certificate must be refused");
        assert!(
            why.contains("certificate") || why.contains("UnknownIssuer"),
            "{ca_file:?}: {why}"
        );
    }
}

#[boxoffice_testkit::test]
async fn the_arbiter_works_on_a_redis_cluster_over_tls() {
    let ca = TestCa::new("redis cluster test CA");
    let redis = TlsRedis::start(&ca, 3);
    form_cluster(&redis);
    let conn = connect(&redis.urls(), trusting(Some(&redis.files.ca))).await;
    hold_a_seat(conn.expect("a TLS cluster connection trusting the test CA")).await;
}

/// Splits the slots over the nodes, introduces them, and waits for `cluster_state:ok`.
fn form_cluster(redis: &TlsRedis) {
    let node = |port: u16| redis.connection(port).unwrap();
    let n = redis.ports.len() as u16;
    let mut conns: Vec<_> = redis.ports.iter().map(|&p| node(p)).collect();
    for (i, con) in conns.iter_mut().enumerate() {
        let (first, last) = (
            16384 / n * i as u16,
            (16384 / n * (i as u16 + 1)).min(16384) - 1,
        );
        let last = if i as u16 == n - 1 { 16383 } else { last };
        let _: () = redis::cmd("CLUSTER")
            .arg("ADDSLOTSRANGE")
            .arg(first)
            .arg(last)
            .query(con)
            .unwrap();
    }
    for &port in &redis.ports[1..] {
        let _: () = redis::cmd("CLUSTER")
            .arg("MEET")
            .arg("127.0.0.1")
            .arg(port)
            .query(&mut conns[0])
            .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    for con in &mut conns {
        loop {
            let info: String = redis::cmd("CLUSTER").arg("INFO").query(con).unwrap();
            if info.contains("cluster_state:ok") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the TLS cluster never formed: {info}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
