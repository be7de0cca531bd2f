//! Faults a test programs into the fake: "the next n captures fail". Counters rather
//! than a flag so a test can say exactly how many retries must be survived.

use std::sync::atomic::{AtomicU32, Ordering};

/// A gateway call, for aiming a fault at one kind of call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Authorize,
    Capture,
    Void,
    Refund,
    RefundPart,
    Inquire,
    AllPayments,
}

const OPS: usize = 7;

/// Pending faults per operation. Atomics, because calls run concurrently and each
/// fault must be consumed by exactly one of them.
#[derive(Default)]
pub(crate) struct Faults {
    /// Refused before doing anything: `PaymentError::Unavailable`.
    unavailable: [AtomicU32; OPS],
    /// Done, then the answer is lost: `PaymentError::Timeout`.
    timeout_after: [AtomicU32; OPS],
}

impl Faults {
    pub fn set_unavailable(&self, op: Op, n: u32) {
        self.unavailable[op as usize].store(n, Ordering::SeqCst);
    }

    pub fn set_timeout_after(&self, op: Op, n: u32) {
        self.timeout_after[op as usize].store(n, Ordering::SeqCst);
    }

    pub fn take_unavailable(&self, op: Op) -> bool {
        take(&self.unavailable[op as usize])
    }

    pub fn take_timeout_after(&self, op: Op) -> bool {
        take(&self.timeout_after[op as usize])
    }
}

/// Consumes one pending fault, if any.
fn take(counter: &AtomicU32) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_set_for_n_calls_fires_exactly_n_times() {
        let faults = Faults::default();
        faults.set_unavailable(Op::Capture, 2);
        assert!(!faults.take_unavailable(Op::Void));
        assert!(faults.take_unavailable(Op::Capture));
        assert!(faults.take_unavailable(Op::Capture));
        assert!(!faults.take_unavailable(Op::Capture));
    }
}
