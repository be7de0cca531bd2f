//! Deadlines for tests, so that a hang fails fast with a message saying what was
//! awaited instead of holding a CI job until its own limit.
//!
//! - `#[boxoffice_testkit::test]` runs a test's body under [`test_body`].
//! - [`within`] bounds one future; [`eventually`] polls until a probe says done.
//!
//! The deadlines are wall-clock, kept by a watchdog thread rather than tokio's timer:
//! a test that pauses tokio's clock (whose timers then fire as soon as the runtime is
//! idle) must not time out early, and a bound must still fire while the runtime waits
//! on I/O. When the body cannot even be cancelled (it blocks its thread outside the
//! runtime), the watchdog aborts the test process after a grace period, still naming
//! what was awaited.

use std::cell::RefCell;
use std::fmt::{Debug, Display};
use std::future::Future;
use std::io::Write;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long a timed-out body that cannot be cancelled gets before the process aborts.
const GRACE: Duration = Duration::from_secs(30);

/// Runs `fut` to completion, or panics once `limit` has passed, naming `what`.
pub async fn within<F: Future>(limit: Duration, what: impl Display, fut: F) -> F::Output {
    let what = what.to_string();
    match bounded(limit, &what, fut).await {
        Some(out) => out,
        None => panic!("timed out after {limit:?} waiting for {what}"),
    }
}

/// `fut`'s output, or `None` once `limit` has passed (`fut` is then dropped).
async fn bounded<F: Future>(limit: Duration, what: &str, fut: F) -> Option<F::Output> {
    let (done, watched) = mpsc::channel::<()>();
    let (late_tx, late) = tokio::sync::oneshot::channel::<()>();
    let named = what.to_string();
    std::thread::spawn(move || watchdog(watched, late_tx, limit, &named));
    let out = tokio::select! {
        biased;
        out = fut => Some(out),
        _ = late => None,
    };
    // Dropped only now, after `fut`: the watchdog's grace covers dropping it too.
    drop(done);
    out
}

/// Waits for the `done` sender to go away (the future ended or was dropped); past
/// `limit` says so through `late`, and past `limit` + [`GRACE`] aborts the process.
fn watchdog(
    done: mpsc::Receiver<()>,
    late: tokio::sync::oneshot::Sender<()>,
    limit: Duration,
    what: &str,
) {
    if !matches!(done.recv_timeout(limit), Err(RecvTimeoutError::Timeout)) {
        return;
    }
    let _ = late.send(());
    if matches!(done.recv_timeout(GRACE), Err(RecvTimeoutError::Timeout)) {
        // Straight to stderr: the test harness's capture would die with the process.
        let _ = writeln!(
            std::io::stderr(),
            "timed out after {limit:?} waiting for {what}, and the wait could not be \
             cancelled for {GRACE:?} more (it blocks its thread): aborting the test process"
        );
        std::process::abort();
    }
}

/// The body of a `#[boxoffice_testkit::test]`: `test` (its path) must finish within
/// `timeout_s` seconds.
#[doc(hidden)]
pub async fn test_body<F: Future>(timeout_s: u64, test: &str, body: F) -> F::Output {
    let what = format!("test {test} to finish (its timeout_s = {timeout_s})");
    within(Duration::from_secs(timeout_s), what, body).await
}

/// Calls `probe` every `every` until it answers `Ok`, and returns that value; panics
/// after `limit` with `what` and the probe's last `Err` (what it saw instead).
///
/// A probe call that hangs counts against the limit too and fails the same way.
pub async fn eventually<T, E, P, Fut>(
    what: impl Display,
    limit: Duration,
    every: Duration,
    mut probe: P,
) -> T
where
    E: Debug,
    P: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let what = what.to_string();
    let started = Instant::now();
    let last = RefCell::new(None);
    let polls = async {
        loop {
            match probe().await {
                Ok(v) => return v,
                Err(seen) => *last.borrow_mut() = Some(format!("{seen:?}")),
            }
            tokio::time::sleep(every).await;
        }
    };
    if let Some(v) = bounded(limit, &what, polls).await {
        return v;
    }
    let last = last.borrow_mut().take();
    panic!(
        "waited {:?} for {what}, in vain; last seen: {}",
        started.elapsed(),
        last.as_deref()
            .unwrap_or("nothing (the first probe never answered)")
    )
}
