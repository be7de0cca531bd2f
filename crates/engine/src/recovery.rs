//! The recovery sweep: drives every order left mid-checkout (a crash, a provider
//! timeout, a buyer who never finished 3-D Secure, a failed capture, a void or refund
//! that did not go through) to a final state by asking the provider what happened
//! (`settle`). It only touches orders idle for `recovery_after_s`, so it rarely races
//! a checkout that is still running, and it is safe when it does.
//!
//! Failed captures back off: an order in `pending_capture` is retried once it has been
//! idle as long as it has been alive (so the wait doubles each attempt), between
//! `recovery_after_s` and `capture_retry_max_s`. No counter is needed: every failed
//! attempt rewrites `updated_at`.

use boxoffice_domain::{Millis, OrderState};

use crate::ports::Order;
use crate::worker::Outcome;
use crate::{Engine, EngineError};

/// Orders looked at per state per step. One query per state, so orders that must wait
/// (a buyer still at their bank) cannot starve the others of a batch.
const BATCH: usize = 200;

impl Engine {
    pub async fn recovery_step(&self) -> Result<Outcome, EngineError> {
        let now = self.now();
        let before = Millis(now.0 - (self.config.recovery_after_s as i64) * 1000);
        let mut done = 0;
        for state in OrderState::UNFINISHED {
            let orders = self.ports.ledger.orders_in(&[state], before, BATCH).await?;
            for order in orders.iter().filter(|o| self.due(o, now)) {
                match self.settle(order).await {
                    Ok(true) => done += 1,
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(order = %order.id, error = %e, "recovery of order failed; will retry")
                    }
                }
            }
        }
        Ok(Outcome { done })
    }

    /// Whether the sweep should try this order now (capture retries back off).
    fn due(&self, order: &Order, now: Millis) -> bool {
        if order.state != OrderState::PendingCapture {
            return true;
        }
        let wait = capture_backoff_ms(
            order,
            self.config.recovery_after_s,
            self.config.capture_retry_max_s,
        );
        now.0 - order.updated_at.0 >= wait
    }
}

/// Idle time required before the next capture attempt: the order's age at its last
/// attempt, clamped to [`min_s`, `max_s`].
fn capture_backoff_ms(order: &Order, min_s: u64, max_s: u64) -> i64 {
    let age = order.updated_at.0 - order.created_at.0;
    age.clamp(min_s as i64 * 1000, (max_s.max(min_s)) as i64 * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use boxoffice_domain::{BuyerId, EventId, HoldId, Money, OrderId};

    fn order(created: i64, updated: i64) -> Order {
        Order {
            id: OrderId::random(),
            event: EventId(1),
            buyer: BuyerId::random(),
            hold: HoldId::random(EventId(1)),
            seats: vec![],
            total: Money(1),
            currency: "EUR".into(),
            state: OrderState::PendingCapture,
            payment_ref: None,
            created_at: Millis(created),
            updated_at: Millis(updated),
        }
    }

    #[test]
    fn capture_retries_wait_as_long_as_the_order_has_lived_within_bounds() {
        assert_eq!(capture_backoff_ms(&order(0, 1_000), 30, 3_600), 30_000);
        assert_eq!(capture_backoff_ms(&order(0, 100_000), 30, 3_600), 100_000);
        assert_eq!(
            capture_backoff_ms(&order(0, 10_000_000), 30, 3_600),
            3_600_000
        );
    }
}
