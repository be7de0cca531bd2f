//! What the ledger keeps of an event's cancellation: the job that gives every order of
//! a cancelled event its money back, with its progress (a cursor over the event's
//! orders and counts), so that it resumes where it stopped after a crash or a restart.

use boxoffice_domain::{EventId, Millis, OrderId};
use serde::Serialize;

/// Where the orders of one pass stand once the job has been through them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct CancellationCounts {
    /// Orders the pass has been through.
    pub seen: u64,
    /// Orders whose money is back (refunded, or the authorization released).
    pub returned: u64,
    /// Orders that never became a sale (declined, voided, lost): nothing to give back.
    pub unsold: u64,
    /// Orders not finished yet: money on its way back, or a checkout still running.
    pub pending: u64,
}

impl CancellationCounts {
    pub fn add(&mut self, other: CancellationCounts) {
        self.seen += other.seen;
        self.returned += other.returned;
        self.unsold += other.unsold;
        self.pending += other.pending;
    }
}

/// An event's cancellation job. The job goes through the event's orders in id order,
/// in passes: a pass that leaves orders pending is followed by another, and the job
/// ends after a pass that found every order finished, never the first (the second
/// begins `recovery_after_s` after the first ended, and finds an order whose write
/// was under way at the cancellation). The cursor and the pass's counts
/// move together, one page at a time, so a page redone after a crash is counted once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct EventCancellation {
    pub event: EventId,
    pub started_at: Millis,
    /// 1 for the first pass through the orders.
    #[schema(minimum = 1)]
    pub pass: u32,
    /// The last order of the pass done so far; null at the start of a pass.
    #[schema(required)]
    pub cursor: Option<OrderId>,
    /// The current pass's counts.
    pub counts: CancellationCounts,
    pub updated_at: Millis,
    /// When the job ended; null while it runs.
    #[schema(required)]
    pub finished_at: Option<Millis>,
}

impl EventCancellation {
    /// A job just started at `now`.
    pub fn new(event: EventId, now: Millis) -> EventCancellation {
        EventCancellation {
            event,
            started_at: now,
            pass: 1,
            cursor: None,
            counts: CancellationCounts::default(),
            updated_at: now,
            finished_at: None,
        }
    }
}

/// One page of an event's orders in id order, from just after `after`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventOrders {
    pub event: EventId,
    pub after: Option<OrderId>,
    pub limit: usize,
}
