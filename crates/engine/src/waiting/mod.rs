//! The waiting room (docs/ARCHITECTURE.md §2, P7): eligibility, proof of work, rate
//! limits, the verifiable pre-opening pool, adaptive and inventory-aware admission, the
//! cacheable public document and operator stats. The line itself lives behind the
//! `QueueStore` port; what sits here is per node (rate-limit cells, the pre-serialized
//! document, health samples) and may be lost freely.

mod claim;
mod config;
mod error;
mod fairness;
mod health;
mod human;
mod journal;
pub(crate) mod limits;
mod public;
pub(crate) mod settings;
mod snapshot;
mod stats;
mod tokens;

/// For the admission tick (`crate::admission`).
pub(crate) use settings as settings_internal;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use boxoffice_domain::{EventId, Millis};
use parking_lot::{Mutex, RwLock};

pub use config::WaitingConfig;
pub use error::{Refusal, WaitingError};
pub use fairness::FairnessView;
pub use health::Signal;
pub use human::HumanCheckView;
pub use public::{PublicDoc, PublicQueueBody};
pub use settings::{AdmissionControl, AdmissionMode, CurrentRate, OPERATOR_SETTINGS, WaitingRules};
pub use stats::StatsView;
pub use tokens::{BuyerGrant, Challenge};

/// Node-local waiting-room state.
#[derive(Default)]
pub struct WaitingRoom {
    pub(crate) limits: limits::Limiter,
    pub(crate) health: health::HealthWindow,
    pub(crate) journal: journal::JoinJournal,
    /// Each event's settings as this node last read them, for the joins' checks.
    pub(crate) settings: snapshot::SettingsCache,
    docs: RwLock<HashMap<EventId, Arc<PublicDoc>>>,
    /// Per event: (when, serving_up_to, finished) at each tick, for the active-shopper
    /// estimate over the admission token's lifetime.
    log: Mutex<HashMap<EventId, VecDeque<Mark>>>,
    /// Per event: how a few-seats-left line's seats are being taken (`untaken_for`).
    untaken: Mutex<HashMap<EventId, Untaken>>,
    /// Per event: when this node last asked the ledger for operator settings the queue
    /// store lacked (`restore_operator_settings`), and which of them the ledger had
    /// then: an event whose operator set none is asked about at most once every
    /// `RESTORE_CHECK_MS`, not on every read of its settings, while a setting the
    /// ledger is known to keep is put back as soon as the store is found without it.
    pub(crate) restore_checked: Mutex<HashMap<EventId, (Millis, Vec<&'static str>)>>,
}

/// How often a node asks the ledger again for operator settings the queue store lacks.
pub(crate) const RESTORE_CHECK_MS: i64 = 5_000;

/// What `untaken_for` keeps of an event between batches.
struct Untaken {
    /// Seats taken (sold + held) at the last batch.
    last: u64,
    /// Since when the seats let in for count as untaken.
    since: Millis,
    /// Seats taken since the count was last moved on.
    taken_since: u64,
}

/// Marks kept per event: far more than one token lifetime of ticks.
const MAX_MARKS: usize = 4_096;

/// (when, serving_up_to, finished) as one tick saw them.
type Mark = (Millis, u64, u64);

impl WaitingRoom {
    /// Records the line right after a batch, so the batch ages out of the window as a
    /// whole once its admission tokens have expired.
    pub(crate) fn mark(&self, event: EventId, now: Millis, serving: u64, finished: u64) {
        let mut log = self.log.lock();
        let entries = log.entry(event).or_default();
        // Events without a cap never trim by age; keep the log bounded anyway.
        if entries.len() >= MAX_MARKS {
            entries.pop_front();
        }
        entries.push_back((now, serving, finished));
    }

    /// How long (ms) the seats a line bound by `buyers_per_free_seat` admits buyers for
    /// count as untaken: the time since the bound began to bind (`binding` false starts
    /// the count again: the bound did not bind; a sold-out spell binds, `free` 0, as the
    /// buyers who heard "sold out" leave the line), less one `grace_ms` each time half
    /// of the seats let in for were taken: as many seats taken (`taken`, sold + held,
    /// rose) since the last such step as are still `free`. One grace less halves the
    /// buyers let in per seat. A take of a few seats among many does not: in a line
    /// whose front went away, the few buyers still there take a seat now and then, and
    /// halving at each take kept the line walking a few places a tick while the buyers
    /// still there waited far behind.
    pub(crate) fn untaken_for(
        &self,
        event: EventId,
        taken: u64,
        free: u64,
        binding: bool,
        grace_ms: i64,
        now: Millis,
    ) -> i64 {
        let mut untaken = self.untaken.lock();
        let u = untaken.entry(event).or_insert(Untaken {
            last: taken,
            since: now,
            taken_since: 0,
        });
        if !binding {
            u.since = now;
            u.taken_since = 0;
        } else if taken > u.last {
            u.taken_since += taken - u.last;
            if u.taken_since >= free.max(1) {
                u.since = Millis(u.since.0.saturating_add(grace_ms).min(now.0));
                u.taken_since = 0;
            }
        }
        u.last = taken;
        now.0.saturating_sub(u.since.0).max(0)
    }

    /// Shoppers admitted within `window_ms` before `now` who have not finished.
    pub(crate) fn active_shoppers(
        &self,
        event: EventId,
        now: Millis,
        window_ms: i64,
        serving: u64,
        finished: u64,
    ) -> u64 {
        let mut log = self.log.lock();
        let entries = log.entry(event).or_default();
        entries.push_back((now, serving, finished));
        let since = now.plus_millis(-window_ms);
        while entries.len() > 1 && entries[1].0 <= since {
            entries.pop_front();
        }
        // The oldest entry at or before the window start; with none (a fresh node),
        // everyone admitted counts as active, which errs on the side of fewer.
        let (serving_then, finished_then) = match entries.front() {
            Some(&(at, s, f)) if at <= since => (s, f),
            _ => (0, 0),
        };
        serving
            .saturating_sub(serving_then)
            .saturating_sub(finished.saturating_sub(finished_then))
    }
}
