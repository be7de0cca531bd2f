//! Holds per second through `RedisArbiter` against `redis-benchmark` running EVALSHA of
//! the same hold script on the same server, so the gap is our client's cost.
//!
//! `cargo bench -p boxoffice-store-redis` measures 50,000 holds per run; without
//! `--bench` (e.g. `cargo test --benches`) it is a quick smoke run of 2,000. The server
//! is `BOXOFFICE_TEST_REDIS_URL` or redis://127.0.0.1:6379; `redis-benchmark` must be
//! on PATH. Every key is created under a fresh prefix and deleted at the end.

use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use boxoffice_domain::{BuyerId, EventId, HoldId, Millis, Money};
use boxoffice_engine::ports::{
    ArbiterLayout, HoldRequest, LayoutSeat, LayoutSection, SeatArbiter, SeatChoice,
};
use boxoffice_store_redis::{Prefix, RedisArbiter, RedisArbiterConfig, RedisConn};

const TASKS: usize = 64;
const SEATS: u32 = 50_000;
const NOW: Millis = Millis(1_700_000_000_000);
const EXPIRES: Millis = Millis(1_700_000_480_000);

/// One section of 500 rows × 100 seats, so every hold can ask the same section.
fn stadium(event: EventId) -> ArbiterLayout {
    let seats = (0..SEATS)
        .map(|i| LayoutSeat {
            section: 0,
            row: (i / 100) as u16,
            rank: (i / 100) * 100 + (i % 100).abs_diff(50),
            price: Money(5_000),
        })
        .collect();
    ArbiterLayout {
        event,
        max_per_buyer: 8,
        seats,
        sections: vec![LayoutSection { seated: true }],
    }
}

fn best(event: EventId) -> HoldRequest {
    HoldRequest {
        hold: HoldId::random(event),
        buyer: BuyerId::random(),
        choice: SeatChoice::BestAvailable {
            section: 0,
            quantity: 1,
            adjacent: false,
        },
        expires_at: EXPIRES,
        key: None,
    }
}

/// `ops` calls of `op` spread over TASKS concurrent tasks; returns calls per second.
async fn run<F, Fut>(ops: usize, op: F) -> f64
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let op = Arc::new(op);
    let started = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let op = op.clone();
            let mine = ops / TASKS + usize::from(t < ops % TASKS);
            tokio::spawn(async move {
                for _ in 0..mine {
                    op().await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("a bench task panicked");
    }
    ops as f64 / started.elapsed().as_secs_f64()
}

/// Holds through our client: best available, one seat each, never released.
async fn through_client(arb: Arc<RedisArbiter>, ops: usize) -> f64 {
    let event = EventId(1);
    arb.load(&stadium(event), &[]).await.expect("load");
    run(ops, move || {
        let arb = arb.clone();
        async move {
            arb.hold(&best(event), NOW).await.expect("hold");
        }
    })
    .await
}

/// Hold then release, so the event never runs out; counts holds.
async fn hold_release(arb: Arc<RedisArbiter>, ops: usize) -> f64 {
    let event = EventId(2);
    arb.load(&stadium(event), &[]).await.expect("load");
    run(ops, move || {
        let arb = arb.clone();
        async move {
            let h = arb.hold(&best(event), NOW).await.expect("hold");
            arb.release(h.hold).await.expect("release");
        }
    })
    .await
}

/// The same hold script through redis-benchmark: EVALSHA with the event's 11 keys and
/// a random hold id and buyer per call (`__rand_int__`).
fn through_redis_benchmark(url: &str, prefix: &str, sha: &str, ops: usize) -> f64 {
    let event = 3;
    let keys: Vec<String> = [
        "meta", "free", "sold", "layout", "freez", "holds", "dl", "taken", "unrep", "fin",
        "loading",
    ]
    .iter()
    .map(|k| format!("{{{prefix}:{event}}}:{k}"))
    .collect();
    let info = redis::IntoConnectionInfo::into_connection_info(url).expect("a redis:// URL");
    let (host, port) = match info.addr() {
        redis::ConnectionAddr::Tcp(h, p) => (h.clone(), *p),
        other => panic!("redis-benchmark needs a TCP address, not {other:?}"),
    };
    let mut cmd = Command::new("redis-benchmark");
    cmd.args([
        "-h",
        &host,
        "-p",
        &port.to_string(),
        "-c",
        &TASKS.to_string(),
    ])
    .args(["-n", &ops.to_string(), "-r", "2000000000", "-q"])
    .args(["EVALSHA", sha, "11"])
    .args(&keys)
    .args(["__rand_int__", "b__rand_int__", &EXPIRES.0.to_string()])
    // keep, then the hold's proof-of-possession key ("" for none), then the choice.
    .args([&NOW.0.to_string(), "100000", "", "B", "0", "1", "0"]);
    let shown: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into()).collect();
    println!("$ redis-benchmark {}", shown.join(" "));
    let out = cmd.output().expect("redis-benchmark must be installed");
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .zip(text.split_whitespace().skip(1))
        .find(|(_, unit)| *unit == "requests")
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected redis-benchmark output: {text}"))
}

#[tokio::main]
async fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let ops = if full { SEATS as usize } else { 2_000 };
    let url = std::env::var("BOXOFFICE_TEST_REDIS_URL").unwrap_or("redis://127.0.0.1:6379".into());
    let prefix = format!("bo-bench-{:08x}", uuid::Uuid::new_v4().as_u128() as u32);
    let conn = RedisConn::connect(&url)
        .await
        .expect("Redis must be reachable");
    let arb = Arc::new(RedisArbiter::new(
        conn.clone(),
        Prefix::new(prefix.clone()).expect("prefix"),
        RedisArbiterConfig::default(),
    ));
    let client = through_client(arb.clone(), ops).await;
    let cycles = hold_release(arb.clone(), ops).await;
    arb.load(&stadium(EventId(3)), &[]).await.expect("load");
    // redis-benchmark only sends EVALSHA: make sure the script is there.
    let sha = redis::Script::new(boxoffice_store_redis::hold_script_source())
        .load_async(&mut conn.clone())
        .await
        .expect("SCRIPT LOAD");
    let bench = through_redis_benchmark(&url, &prefix, &sha, ops);
    // The figure only counts if those calls really held seats (not errors or refusals);
    // a repeated random hold id answers with its hold, so allow a few.
    let held = arb.counts(EventId(3)).await.expect("counts").held as usize;
    assert!(
        held * 100 >= ops * 99,
        "redis-benchmark held only {held} seats of {ops}"
    );
    println!("{ops} holds, {TASKS} concurrent, 50,000-seat event, best available 1 seat:");
    println!("  RedisArbiter::hold              {client:>10.0} holds/s");
    println!("  RedisArbiter hold + release     {cycles:>10.0} holds/s");
    println!("  redis-benchmark EVALSHA hold    {bench:>10.0} holds/s");
    println!(
        "  client / redis-benchmark        {:>10.0} %",
        100.0 * client / bench
    );
    for e in 1..=3 {
        arb.unload(EventId(e)).await.expect("unload");
    }
}
