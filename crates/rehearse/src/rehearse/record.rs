//! What a rehearsal records while it runs: every request (step, when, how long, what
//! came back) and the live counters the progress display and the request bound read.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Serialize;

/// The steps of the journey, each a kind of request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    SignIn,
    Challenge,
    Join,
    Status,
    /// The event's availability, read by a buyer whose first choice was refused.
    Availability,
    Hold,
    Release,
    Checkout,
    Bank,
    Order,
    Observe,
    /// A scalper's moves after its purchase (transfers, renames, listings).
    Resell,
}

impl Step {
    pub const ALL: [Step; 12] = [
        Step::SignIn,
        Step::Challenge,
        Step::Join,
        Step::Status,
        Step::Availability,
        Step::Hold,
        Step::Release,
        Step::Checkout,
        Step::Bank,
        Step::Order,
        Step::Observe,
        Step::Resell,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Step::SignIn => "sign-in",
            Step::Challenge => "challenge",
            Step::Join => "join",
            Step::Status => "status",
            Step::Availability => "availability",
            Step::Hold => "hold",
            Step::Release => "release",
            Step::Checkout => "checkout",
            Step::Bank => "3-D Secure",
            Step::Order => "order",
            Step::Observe => "observe",
            Step::Resell => "resell",
        }
    }
}

/// One request as it went.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub step: Step,
    /// Milliseconds from the start of the run to the request's start (when it had its
    /// slot).
    pub at_ms: u32,
    /// From the slot to the whole answer: the server's time and the network's.
    pub latency_us: u32,
    /// How long the request waited for a slot of the generator's (not the server's).
    pub waited_us: u32,
    /// HTTP status; 0 when no answer came (connection refused, timeout).
    pub status: u16,
}

/// Live counters (progress and bounds) and the samples.
pub struct Recorder {
    pub started: Instant,
    samples: Mutex<Vec<Sample>>,
    errors: Mutex<BTreeMap<String, u64>>,
    pub requests: AtomicU64,
    pub arrived: AtomicU64,
    pub in_line: AtomicU64,
    pub admitted: AtomicU64,
    pub holding: AtomicU64,
    pub sold: AtomicU64,
    pub failures: AtomicU64,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder {
            started: Instant::now(),
            samples: Mutex::new(Vec::with_capacity(1 << 16)),
            errors: Mutex::new(BTreeMap::new()),
            requests: AtomicU64::new(0),
            arrived: AtomicU64::new(0),
            in_line: AtomicU64::new(0),
            admitted: AtomicU64::new(0),
            holding: AtomicU64::new(0),
            sold: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        }
    }

    /// Seconds since the start.
    pub fn now_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Counts a request about to be sent; `false` once `limit` requests were sent.
    pub fn admit_request(&self, limit: u64) -> bool {
        self.requests.fetch_add(1, Ordering::Relaxed) < limit
    }

    pub fn record(
        &self,
        step: Step,
        start: Instant,
        took: Duration,
        waited: Duration,
        status: u16,
    ) {
        let at = start.saturating_duration_since(self.started);
        let us = |d: Duration| d.as_micros().min(u128::from(u32::MAX)) as u32;
        let sample = Sample {
            step,
            at_ms: at.as_millis().min(u128::from(u32::MAX)) as u32,
            latency_us: us(took),
            waited_us: us(waited),
            status,
        };
        self.samples.lock().push(sample);
    }

    /// An answer that is not what the journey hoped for, by step and code
    /// (`hold 409 seat_unavailable`). Business answers (sold out, a declined card)
    /// count here too; `failure` marks what no buyer should meet (5xx, no answer).
    pub fn error(&self, step: Step, status: u16, code: &str, failure: bool) {
        let key = match status {
            0 => format!("{} no answer ({code})", step.name()),
            _ => format!("{} {status} {code}", step.name()),
        };
        *self.errors.lock().entry(key).or_default() += 1;
        if failure {
            self.failures.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn samples(&self) -> Vec<Sample> {
        self.samples.lock().clone()
    }

    /// Samples from index `from` on (the progress display reads the new ones).
    pub fn samples_since(&self, from: usize) -> Vec<Sample> {
        let s = self.samples.lock();
        s.get(from..).map(<[Sample]>::to_vec).unwrap_or_default()
    }

    pub fn errors(&self) -> BTreeMap<String, u64> {
        self.errors.lock().clone()
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    pub fn add(counter: &AtomicU64, n: i64) {
        if n >= 0 {
            counter.fetch_add(n as u64, Ordering::Relaxed);
        } else {
            counter.fetch_sub(n.unsigned_abs(), Ordering::Relaxed);
        }
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}
