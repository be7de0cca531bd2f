//! The server's tests in cluster mode: several `boxoffice` processes sharing a fresh
//! PostgreSQL database (the ledger) and a Redis key prefix (the hot store), with faults
//! injected between them. PostgreSQL and Redis are required; these tests never skip.

#[path = "../common/mod.rs"]
mod common;

mod checkout_retry;
mod failover;
mod faults;
mod join_trips;
mod line_claim;
mod line_restart;
mod lost_event;
mod nodes;
mod operator_mistakes;
mod order_events;
mod possession;
mod round_trips;
mod sweeps;
mod waiting;
mod webhooks;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use boxoffice_testkit::eventually;
use boxoffice_testkit::harness::http::call;
use boxoffice_testkit::harness::path_str;
use boxoffice_testkit::harness::postgres::TestDatabase;
use boxoffice_testkit::harness::redis::{RedisPrefix, redis_url};
use reqwest::Method;
use serde_json::{Value, json};

/// What the nodes of one cluster share: a data directory holding their config file, a
/// fresh PostgreSQL database (the ledger) and a Redis key prefix (the hot store). All
/// three go away with it.
pub struct Backing {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    pub db: TestDatabase,
    pub redis: RedisPrefix,
}

impl Backing {
    /// On the machine's Redis; the config names `operator`'s key, the stand-in provider,
    /// the prefix, then `extra` (TOML, tables allowed).
    pub fn new(operator: &str, extra: &str) -> Backing {
        Backing::on(&redis_url(), operator, extra)
    }

    /// As [`Backing::new`], on the Redis at `redis`.
    pub fn on(redis: &str, operator: &str, extra: &str) -> Backing {
        let dir = tempfile::tempdir().expect("a temp directory");
        let db = TestDatabase::create();
        let redis = RedisPrefix::new(redis);
        let config = dir.path().join("boxoffice.toml");
        let toml = format!(
            "operator_key = \"{operator}\"\npayments = \"fake\"\nredis_prefix = \"{}\"\n{extra}",
            redis.prefix
        );
        std::fs::write(&config, toml).expect("the config file is written");
        Backing {
            dir,
            config,
            db,
            redis,
        }
    }

    /// The arguments that put a `boxoffice` subcommand on this backing.
    pub fn args(&self) -> Vec<String> {
        let args = [
            "--data-dir",
            path_str(self.dir.path()),
            "--config",
            path_str(&self.config),
            "--ledger",
            &self.db.url,
            "--hot",
            &self.redis.url,
        ];
        args.map(String::from).to_vec()
    }
}

/// `args` as a command line takes them.
pub fn argv(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// One purchase of one seat through `node`, the checkout sent up to `tries` times (at
/// least once), 200 ms apart, while it answers 5xx (the node may be between primaries):
/// its last status, or None when the buyer got no hold (sold out, or a fault's 503).
pub async fn buy_one(c: &reqwest::Client, node: &str, event: i64, tries: u32) -> Option<u16> {
    let (_, b) = call(c, Method::POST, format!("{node}/v1/buyers"), "", json!({})).await;
    let token = b["token"].as_str()?.to_string();
    let queue = format!("{node}/v1/events/{event}/queue");
    let (_, j) = call(c, Method::POST, queue, &token, json!({})).await;
    let admission = admitted(c, node, j["queue_ticket"].as_str()?).await?;
    let body = json!({"best_available": {"section": "A", "quantity": 1}});
    let holds = format!("{node}/v1/events/{event}/holds");
    let (_, h) = call(c, Method::POST, holds, &admission, body).await;
    let hold = h["hold_id"].as_str()?;
    let checkout = format!("{node}/v1/holds/{hold}/checkout");
    let pay = json!({"payment_method": "pm_card_visa"});
    let mut left = tries.max(1);
    loop {
        let (status, _) = call(c, Method::POST, checkout.clone(), &token, pay.clone()).await;
        left -= 1;
        if (200..500).contains(&status) || left == 0 {
            return Some(status);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The admission token for `ticket`, or None if none came within 10 s (the line is told
/// "sold out" while every seat is sold or held).
pub async fn admitted(c: &reqwest::Client, node: &str, ticket: &str) -> Option<String> {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        let url = format!("{node}/v1/queue/status");
        let (_, st) = call(c, Method::GET, url, ticket, Value::Null).await;
        if let Some(a) = st["admission_token"].as_str() {
            return Some(a.to_string());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// Shoppers buying one seat after another until stopped, and how many purchases were
/// confirmed so far.
pub struct Shoppers {
    confirmed: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// `count` shoppers buying seats of `event` one after another (`buy_one`, with `tries`),
/// each going round the nodes at `urls` from a node of its own.
pub fn shoppers(
    c: &reqwest::Client,
    urls: &[String],
    event: i64,
    count: usize,
    tries: u32,
) -> Shoppers {
    let confirmed = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let tasks = (0..count)
        .map(|w| {
            let (c, urls) = (c.clone(), urls.to_vec());
            let (confirmed, stop) = (confirmed.clone(), stop.clone());
            tokio::spawn(async move {
                let mut n = w;
                while !stop.load(Ordering::Relaxed) {
                    match buy_one(&c, &urls[n % urls.len()], event, tries).await {
                        Some(201) => {
                            confirmed.fetch_add(1, Ordering::Relaxed);
                        }
                        Some(_) => {}
                        None => tokio::time::sleep(Duration::from_millis(50)).await,
                    }
                    n += 1;
                }
            })
        })
        .collect();
    Shoppers {
        confirmed,
        stop,
        tasks,
    }
}

impl Shoppers {
    /// Waits (120 s at the most) until `at` purchases were confirmed.
    pub async fn reach(&self, at: usize) {
        let what = format!("{at} confirmed purchases");
        let every = Duration::from_millis(20);
        eventually(what, Duration::from_secs(120), every, || async {
            let n = self.confirmed.load(Ordering::Relaxed);
            if n >= at { Ok(()) } else { Err(n) }
        })
        .await;
    }

    /// Stops them, each after the purchase it is in.
    pub async fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for s in self.tasks {
            s.await.expect("a shopper ends");
        }
    }
}
