//! The recovery sweep: drives every order left mid-checkout (a crash, a provider
//! timeout, a buyer who never finished 3-D Secure, a failed capture, a void or refund
//! that did not go through, a sale being cancelled) to a final state by asking the
//! provider what happened (`settle`). It only touches orders idle for
//! `recovery_after_s`, so it rarely races a checkout that is still running, and it is
//! safe when it does.
//!
//! Each step pages through every due order with a cursor, so none waits behind orders
//! that cannot move yet. Each attempt is claimed in the ledger before it is made, which
//! sets the order's next attempt: the wait doubles from `recovery_after_s` up to
//! `recovery_retry_max_s` while the order stays in one state, survives a restart, and
//! keeps two nodes from attempting one order at once. Orders of a page are settled
//! concurrently through the sweep's paced door to the provider (`recovery_in_flight`
//! calls at once, `recovery_calls_per_s`), so a backlog after a crash drains quickly
//! without flooding the provider.

use boxoffice_domain::{Millis, OrderState};
use futures::StreamExt;

use crate::ports::{DueOrders, Order};
use crate::worker::Outcome;
use crate::{Engine, EngineError};

impl Engine {
    #[tracing::instrument(level = "debug", skip_all)]
    pub async fn recovery_step(&self) -> Result<Outcome, EngineError> {
        let now = self.now();
        let limit = self.config.recovery_page.max(1);
        let mut q = DueOrders {
            states: &OrderState::UNFINISHED,
            idle_since: Millis(now.0 - secs_ms(self.config.recovery_after_s)),
            due_at: now,
            after: None,
            limit,
        };
        let mut done = 0;
        loop {
            let page = self.ports.ledger.orders_due(&q).await?;
            let Some(last) = page.last() else { break };
            q.after = Some((last.next_attempt_at, last.id));
            let full = page.len() == limit;
            done += self.settle_page(page, now).await;
            if !full {
                break;
            }
        }
        // Tickets cancelled on their own whose money is not back yet: the same door,
        // the same idleness.
        done += self.finish_cancelled_tickets(q.idle_since).await;
        Ok(Outcome { done })
    }

    /// Settles a page's orders, as many at once as the sweep may have provider calls in
    /// flight; returns how many moved.
    async fn settle_page(&self, page: Vec<Order>, now: Millis) -> usize {
        self.count_in_flight(page, |order| self.attempt(order, now))
            .await
    }

    /// Runs `step` on each of `items`, as many at once as the sweeps may have provider
    /// calls in flight (`recovery_in_flight`; the paced door bounds the calls
    /// themselves); returns how many steps said yes (moved, finished, given back).
    pub(crate) async fn count_in_flight<T, Fut>(
        &self,
        items: Vec<T>,
        step: impl FnMut(T) -> Fut,
    ) -> usize
    where
        Fut: std::future::Future<Output = bool>,
    {
        futures::stream::iter(items)
            .map(step)
            .buffer_unordered(self.config.recovery_in_flight.max(1))
            .filter(|yes| std::future::ready(*yes))
            .count()
            .await
    }

    /// One attempt at one order: claimed first, so its next attempt is spaced whatever
    /// happens next (a failure, a crash), then settled.
    async fn attempt(&self, order: Order, now: Millis) -> bool {
        let attempts = order.attempts.saturating_add(1);
        let next = now.plus_millis(self.retry_wait_ms(attempts));
        match self.ports.ledger.claim_attempt(&order, next).await {
            Ok(true) => {}
            // Moved or claimed by another path (or node) since the page was read.
            Ok(false) => return false,
            Err(e) => {
                tracing::warn!(order = %order.id, error = %e, "could not claim a recovery attempt");
                return false;
            }
        }
        let claimed = Order {
            attempts,
            next_attempt_at: next,
            ..order
        };
        match self.settle_via(&claimed, &*self.recovery_payments).await {
            Ok(moved) => moved,
            Err(e) => {
                tracing::warn!(order = %claimed.id, error = %e, "recovery of order failed; will retry");
                false
            }
        }
    }

    fn retry_wait_ms(&self, attempts: u32) -> i64 {
        retry_wait_ms(
            attempts,
            self.config.recovery_after_s,
            self.config.recovery_retry_max_s,
        )
    }
}

fn secs_ms(s: u64) -> i64 {
    i64::try_from(s.saturating_mul(1000)).unwrap_or(i64::MAX)
}

/// The wait after an order's `attempts`-th attempt in one state: `min_s` (at least a
/// second), doubling with each attempt, at most `max_s`.
fn retry_wait_ms(attempts: u32, min_s: u64, max_s: u64) -> i64 {
    let min = secs_ms(min_s).max(1_000);
    let doubled = min.saturating_mul(1i64 << attempts.saturating_sub(1).min(40));
    doubled.min(secs_ms(max_s).max(min))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_wait_twice_as_long_each_time_within_bounds() {
        assert_eq!(retry_wait_ms(1, 30, 3_600), 30_000);
        assert_eq!(retry_wait_ms(2, 30, 3_600), 60_000);
        assert_eq!(retry_wait_ms(5, 30, 3_600), 480_000);
        assert_eq!(retry_wait_ms(8, 30, 3_600), 3_600_000);
        assert_eq!(retry_wait_ms(u32::MAX, 30, 3_600), 3_600_000);
        // A zero minimum still waits a second, so one step cannot meet an order twice.
        assert_eq!(retry_wait_ms(1, 0, 0), 1_000);
    }
}
