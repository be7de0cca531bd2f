//! Background work as a testable `step()` plus a loop. Tests call the step until it
//! reports idle; the binary runs the loop until shutdown.

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;

/// What one step did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub done: usize,
}

impl Outcome {
    pub fn idle(&self) -> bool {
        self.done == 0
    }
}

/// Runs `step` every `period` until `stop` turns true. A step that did work is followed
/// at once by another, so a backlog drains without waiting a period per item.
pub async fn run_every<F, Fut>(
    name: &'static str,
    period: Duration,
    mut stop: watch::Receiver<bool>,
    mut step: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Outcome, crate::EngineError>>,
{
    loop {
        if *stop.borrow() {
            return;
        }
        let busy = match step().await {
            Ok(o) => !o.idle(),
            Err(e) => {
                tracing::warn!(worker = name, error = %e, "worker step failed");
                false
            }
        };
        if busy {
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = stop.changed() => {}
        }
    }
}
