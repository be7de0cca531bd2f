//! The operator's view during the run: the event's stats read twice a second from the
//! first target, kept as a timeline (queue, admission, sold, held), and "serving up
//! to" handed to the waiting buyers (as the public stream tells the buyer app).

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::api::{Api, Call};
use super::record::Step;
use super::turns::Turns;

/// One reading of the event's stats.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Point {
    pub t: f64,
    pub queue_length: u64,
    pub serving_up_to: u64,
    /// Joined and not let in yet.
    pub waiting: u64,
    pub sold: u64,
    pub held: u64,
    pub free: u64,
    pub capacity: u64,
    pub sold_out: bool,
    /// The rate admission runs at now (the event's, the override, or adaptive).
    pub admission_rate_per_s: u64,
}

pub const EVERY: Duration = Duration::from_millis(500);

/// Reads the stats until `stop` is cancelled; returns the timeline.
pub async fn observe(
    api: Api,
    operator_key: String,
    event: i64,
    serving: Arc<Turns>,
    stop: tokio_util::sync::CancellationToken,
) -> Vec<Point> {
    let path = format!("/v1/events/{event}/stats");
    let base = api.targets[0].clone();
    let mut points = Vec::new();
    let mut tick = tokio::time::interval(EVERY);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = stop.cancelled() => return points,
        }
        // The observer's reads are not the crowd's: they do not count against the
        // request budget, and a cancelled crowd still gets a last reading.
        if let Some(p) = read(&api, &base, &path, &operator_key).await {
            serving.advance(p.serving_up_to);
            points.push(p);
        }
    }
}

/// One reading, outside the crowd's budget.
pub async fn read(api: &Api, base: &str, path: &str, key: &str) -> Option<Point> {
    let a = api
        .send_unbounded(base, Call::get(Step::Observe, path).token(key))
        .await;
    if !a.ok() {
        return None;
    }
    let b = &a.body;
    let q = &b["queue"];
    let c = &b["counts"];
    let num = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let (queue_length, serving_up_to) = (num(&q["queue_length"]), num(&q["serving_up_to"]));
    Some(Point {
        t: api.rec.now_s(),
        queue_length,
        serving_up_to,
        waiting: queue_length.saturating_sub(serving_up_to),
        sold: num(&c["sold"]),
        held: num(&c["held"]),
        free: num(&c["free"]),
        capacity: num(&c["capacity"]),
        sold_out: q["sold_out"].as_bool().unwrap_or(false),
        admission_rate_per_s: num(&b["admission_rate_per_s"]),
    })
}
