//! The Redis backends on a real 3-node Redis Cluster that this test starts on free
//! loopback ports (`scripts/redis-cluster.sh`) and stops afterwards, even on failure.
//! Every key of an event shares one hash tag, so each script runs on one node.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use boxoffice_domain::{BuyerId, EventId, Millis};
use boxoffice_engine::ports::{Begin, IdempotencyStore, QueueStore, ReplayKey, SeatArbiter};
use boxoffice_store_redis::{
    Prefix, RedisArbiter, RedisArbiterConfig, RedisConn, RedisIdempotency, RedisQueue,
};
use boxoffice_testkit::arbiter::{Fixture, unique_event};
use boxoffice_testkit::{arbiter, idempotency, queue};
use common::PREFIX;

/// A running cluster; dropping it stops the nodes and deletes their files.
struct Cluster {
    dir: PathBuf,
    urls: String,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/redis-cluster.sh")
}

impl Cluster {
    fn start() -> Cluster {
        let dir = std::env::temp_dir().join(format!("bo-cluster-{}", uuid::Uuid::new_v4()));
        let out = Command::new("bash")
            .arg(script())
            .arg("start")
            .arg(&dir)
            .output()
            .expect("bash must be installed");
        let cluster = Cluster {
            dir,
            urls: String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        };
        assert!(
            out.status.success() && !cluster.urls.is_empty(),
            "could not start a Redis Cluster (redis-server and redis-cli must be installed): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        cluster
    }

    async fn conn(&self) -> RedisConn {
        common::connect(&self.urls).await
    }

    /// The node URL that serves `key`'s slot: the one that answers EXISTS instead of MOVED.
    fn owner_of(&self, key: &str) -> String {
        self.urls
            .split(',')
            .find(|url| {
                redis::Client::open(*url)
                    .and_then(|c| c.get_connection())
                    .and_then(|mut con| redis::cmd("EXISTS").arg(key).query::<i64>(&mut con))
                    .is_ok()
            })
            .expect("some node serves every slot")
            .to_owned()
    }

    /// The keys each node holds that contain `text`.
    fn keys_per_node(&self, text: &str) -> Vec<Vec<String>> {
        self.urls
            .split(',')
            .map(|url| {
                let mut con = redis::Client::open(url)
                    .and_then(|c| c.get_connection())
                    .expect("a node answers");
                redis::cmd("SCAN")
                    .cursor_arg(0)
                    .arg("MATCH")
                    .arg(format!("*{text}*"))
                    .arg("COUNT")
                    .arg(1000)
                    .clone()
                    .iter::<String>(&mut con)
                    .expect("SCAN")
                    .collect::<Result<_, _>>()
                    .expect("SCAN")
            })
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(&self.dir)
            .status();
    }
}

fn prefix() -> Prefix {
    Prefix::new(PREFIX.as_str()).expect("prefix")
}

async fn arbiter_on(cluster: &Cluster) -> Arc<dyn SeatArbiter> {
    let arb = RedisArbiter::new(
        cluster.conn().await,
        prefix(),
        RedisArbiterConfig::default(),
    );
    Arc::new(arb)
}

/// Runs the named cases of a suite one after another on `$make`.
macro_rules! run_cases {
    ($suite:ident, $make:expr; $($case:ident),+ $(,)?) => {
        $(
            eprintln!("cluster: {}::{}", stringify!($suite), stringify!($case));
            $suite::$case($make).await;
        )+
    };
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conformance_suites_pass_on_a_three_node_cluster() {
    let cluster = Cluster::start();
    boxoffice_testkit::__arbiter_cases!([run_cases] arbiter, arbiter_on(&cluster).await;);
    let q = || async {
        Arc::new(RedisQueue::new(cluster.conn().await, prefix())) as Arc<dyn QueueStore>
    };
    boxoffice_testkit::__queue_cases!([run_cases] queue, q().await;);
    let i = || async {
        Arc::new(RedisIdempotency::new(cluster.conn().await, prefix())) as Arc<dyn IdempotencyStore>
    };
    boxoffice_testkit::__idempotency_cases!([run_cases] idempotency, i().await;);
    boxoffice_testkit::__shared_idempotency_cases!([run_cases] idempotency, i().await;);
    let on = &cluster;
    let capped = |n: usize| async move {
        let own = Prefix::new(format!("{}-cap-{}", *PREFIX, uuid::Uuid::new_v4().simple()))
            .expect("prefix");
        let store = RedisIdempotency::new(on.conn().await, own)
            .with_limits(n as u64, boxoffice_store_redis::IDEMPOTENCY_RETENTION);
        Arc::new(store) as Arc<dyn IdempotencyStore>
    };
    boxoffice_testkit::__bounded_idempotency_cases!(
        [run_cases] idempotency, capped(idempotency::CAP).await;
    );
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_events_on_different_nodes_do_not_interfere() {
    let cluster = Cluster::start();
    let arb = arbiter_on(&cluster).await;
    let meta = |e: EventId| format!("{{{}:{e}}}:meta", *PREFIX);
    let one = Fixture::small(arb.clone()).await;
    // Events until one lands on another node than the first: each does with
    // probability 2/3, so 64 tries all failing means the cluster is not spreading keys.
    let mut two = None;
    for _ in 0..64 {
        let fx = Fixture::small(arb.clone()).await;
        if cluster.owner_of(&meta(fx.event)) != cluster.owner_of(&meta(one.event)) {
            two = Some(fx);
            break;
        }
        fx.done().await;
    }
    let two = two.expect("one of 64 events on another node than the first");
    let (a, b) = (BuyerId::random(), BuyerId::random());
    // The same seats in both events, at once: both multi-seat holds win.
    let (ha, hb) = tokio::join!(one.named(a, &[0, 1, 2]), two.named(b, &[0, 1, 2]));
    assert_eq!(ha.expect("event one").seats, vec![0, 1, 2]);
    assert_eq!(hb.expect("event two").seats, vec![0, 1, 2]);
    let pair = two
        .best(BuyerId::random(), 0, 2, true)
        .await
        .expect("an adjacent pair in event two");
    // Row A keeps 3 and 4 free side by side, still better than anything in row B.
    assert_eq!(pair.seats, vec![3, 4]);
    arb.unload(one.event).await.expect("unload one");
    assert_eq!(arb.is_loaded(two.event).await, Ok(true));
    assert_eq!(arb.counts(two.event).await.map(|c| c.held), Ok(5));
    assert_eq!(arb.is_loaded(unique_event()).await, Ok(false));
    two.done().await;
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotency_key_with_braces_does_not_pick_a_cluster_slot() {
    let cluster = Cluster::start();
    let prefix = Prefix::new(format!("{}-braces", *PREFIX)).expect("prefix");
    let store = RedisIdempotency::new(cluster.conn().await, prefix.clone());
    let scope = format!("buyer:{}", BuyerId::random());
    let me = idempotency::claimant();
    // Every key names the same hash tag: were it honoured, one slot would take them all.
    for i in 0..64 {
        let key = format!("{{pinned}}-{i}");
        let key = ReplayKey::new(&scope, key);
        let begun = store.begin(&key, &[1; 32], Millis(1), &me).await;
        assert_eq!(begun, Ok(Begin::Proceed));
    }
    let per_node = cluster.keys_per_node(prefix.as_str());
    let all: Vec<&String> = per_node.iter().flatten().collect();
    assert!(all.len() >= 64, "the records are in Redis: {all:?}");
    assert!(
        all.iter().all(|k| !k.contains("pinned")),
        "client text reached a key name: {all:?}"
    );
    let nodes = per_node.iter().filter(|keys| !keys.is_empty()).count();
    assert!(nodes > 1, "one node took every record: {per_node:?}");
}
