//! A Redis failover mid-sale (two nodes, PostgreSQL, a Redis primary and its replica of
//! the test's own). The nodes are given both addresses and write to whichever is the
//! primary. Mid-sale the replica is promoted (`REPLICAOF NO ONE`, as Sentinel or an
//! operator does) while the old primary still takes the nodes' writes, then the old
//! primary dies: every sale it recorded after the promotion is lost with it. The nodes
//! follow the new primary by themselves, the sale goes on to the end, no seat is sold
//! twice (P1), the reconcile worker brings the hot store back in step with the ledger,
//! and the audit comes back clean.

use std::time::Duration;

use boxoffice_domain::EventId;
use boxoffice_engine::ports::SeatArbiter;
use boxoffice_store_redis::{Prefix, RedisArbiter, RedisArbiterConfig, RedisConn};
use boxoffice_testkit::eventually;
use boxoffice_testkit::harness::free_port;
use boxoffice_testkit::harness::http::call;
use boxoffice_testkit::harness::redis::OwnRedis;
use futures::future::join_all;
use reqwest::Method;
use serde_json::json;

use crate::common::BOXOFFICE;
use crate::lost_event::{OPERATOR, metric_sum, stats};
use crate::{Backing, argv, shoppers};

const SEATS: usize = 200;
const SHOPPERS: usize = 16;
/// Confirmed purchases before the promotion, and before the old primary dies.
const PROMOTE_AT: usize = 50;
const KILL_AT: usize = 90;

/// An open event of `SEATS` seats whose holds live 20 s, so a hold its buyer gave up
/// on during the switch does not keep its seat from the sale for long.
async fn open_event(c: &reqwest::Client, node: &str) -> i64 {
    let mut spec = crate::common::spec((SEATS / 10) as u32, 10, 0, 4);
    spec.sale.hold_ttl_s = 20;
    let spec = serde_json::to_value(spec).unwrap();
    let (s, e) = call(c, Method::POST, format!("{node}/v1/events"), OPERATOR, spec).await;
    let event = e["event_id"].as_i64();
    let event = event.unwrap_or_else(|| panic!("the event was not created: {s} {e}"));
    let open = format!("{node}/v1/events/{event}/open");
    let (s, body) = call(c, Method::POST, open, OPERATOR, json!({})).await;
    assert_eq!(s, 200, "the event opens: {body}");
    event
}

/// The seats the hot store at `url` has sold for `event`.
async fn hot_sold(url: &str, prefix: &str, event: i64) -> usize {
    let conn = RedisConn::connect(url).await.expect("the Redis answers");
    let prefix = Prefix::new(prefix.to_string()).expect("a prefix");
    let arbiter = RedisArbiter::new(conn, prefix, RedisArbiterConfig::default());
    let sold = arbiter.sold_seats(EventId(event)).await;
    sold.expect("the event is in this Redis").len()
}

fn ledger_sold(backing: &Backing) -> usize {
    let sql = "SELECT count(*)::text FROM sold_seats";
    backing.db.texts(sql)[0].parse().expect("a count")
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 400)]
async fn a_redis_failover_mid_sale_loses_hot_writes_but_never_sells_a_seat_twice() {
    let mut primary = OwnRedis::start(free_port()).await;
    let replica = OwnRedis::replica_of(free_port(), &primary).await;
    let primary_url = format!("redis://127.0.0.1:{}", primary.port);
    let replica_url = format!("redis://127.0.0.1:{}", replica.port);
    // Reconcile every second: that, not a rebuild, is what repairs a partial loss.
    let extra = "[engine]\nadmission_interval_ms = 50\n\
        [workers]\nexpiry_interval_ms = 100\ndrift_repair_interval_ms = 1000\n\
        [redis]\nfailover = true\n";
    let backing = Backing::on(&primary_url, OPERATOR, extra);
    let mut args = backing.args();
    let hot = args.iter().position(|a| a == "--hot").expect("--hot") + 1;
    args[hot] = format!("{primary_url},{replica_url}");
    let argv = argv(&args);
    let nodes = join_all((0..2).map(|_| BOXOFFICE.start(&argv))).await;
    let urls: Vec<String> = nodes.iter().map(|(_, u)| u.clone()).collect();
    let c = reqwest::Client::builder()
        // A debug node's first requests on a loaded machine take seconds.
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let event = open_event(&c, &urls[0]).await;

    let shoppers = shoppers(&c, &urls, event, SHOPPERS, 5);

    shoppers.reach(PROMOTE_AT).await;
    replica.promote().await;
    // From here the old primary's writes are its own: what the new one has is all it
    // will ever have of them.
    let promoted_with = hot_sold(&replica_url, &backing.redis.prefix, event).await;
    shoppers.reach(KILL_AT).await;
    primary.kill().await;
    let sold_at_kill = ledger_sold(&backing);
    eprintln!(
        "promoted with {promoted_with} seats sold in the hot store; \
         the ledger had sold {sold_at_kill} when the old primary died"
    );
    assert!(
        sold_at_kill > promoted_with,
        "sales acknowledged by the old primary alone were lost with it"
    );

    let what = format!("all {SEATS} seats sold in the ledger");
    eventually(
        what,
        Duration::from_secs(180),
        Duration::from_millis(200),
        || async {
            let sold = ledger_sold(&backing);
            if sold == SEATS { Ok(()) } else { Err(sold) }
        },
    )
    .await;
    shoppers.stop().await;
    assert_eq!(replica.role().await, "master");

    // P1 in the ledger: no seat in two confirmed orders, no more sold than there are.
    let twice = backing.db.texts(
        "SELECT s->>'seat_id' FROM orders o, jsonb_array_elements(o.seats) s \
         WHERE o.state IN ('committed', 'pending_capture', 'confirmed') \
         GROUP BY s->>'seat_id' HAVING count(*) > 1",
    );
    assert!(twice.is_empty(), "seats in two orders: {twice:?}");
    assert_eq!(ledger_sold(&backing), SEATS);

    // The new primary catches up with the ledger: every seat sold, none held or free.
    for node in &urls {
        let what = format!("{node} to count {SEATS} sold and nothing held or free");
        eventually(what, Duration::from_secs(60), Duration::from_millis(200), || async {
            let counts = stats(&c, node, event).await["counts"].clone();
            let want = json!({"capacity": SEATS, "free": 0, "held": 0, "sold": SEATS, "active_holds": 0});
            if counts == want { Ok(()) } else { Err(counts) }
        })
        .await;
    }
    assert_eq!(
        hot_sold(&replica_url, &backing.redis.prefix, event).await,
        SEATS
    );
    let repairs = metric_sum(&c, &urls, "boxoffice_drift_repairs_total").await;
    let behind = metric_sum(&c, &urls, "boxoffice_lines_behind_ledger_total").await;
    eprintln!(
        "drift repairs after the failover: {repairs}; lines put back over a store behind the ledger: {behind}"
    );
    assert!(
        repairs >= 1.0,
        "the lost sales were repaired by the reconcile worker"
    );
    // No place in line given twice, though the new primary's line had missed joins.
    let shared = backing.db.texts(
        "SELECT position::text FROM line_places GROUP BY event_id, position HAVING count(*) > 1",
    );
    assert!(shared.is_empty(), "positions given twice: {shared:?}");

    let mut audit = vec!["audit", "--json"];
    audit.extend(argv.iter().copied());
    let what = "a clean audit with every order settled";
    eventually(
        what,
        Duration::from_secs(60),
        Duration::from_millis(500),
        || async {
            let (clean, report) = BOXOFFICE.run(&audit).await;
            match clean && report["orders_in_flight"] == json!(0) {
                true => Ok(()),
                false => Err(report),
            }
        },
    )
    .await;
    drop(nodes);
}
