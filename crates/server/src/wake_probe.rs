//! How long a task woken from outside the async runtime waits before a worker polls it.
//! Every ledger write (answered by the ledger's writer thread), every ledger read and
//! every call of the stand-in provider (blocking tasks) ends that way, so a request of
//! many such steps, a checkout above all, pays this wait at each one. When the node's
//! cores are all busy it grows to seconds while the stores themselves answer in
//! milliseconds (`boxoffice_ledger_write_wait_seconds`): the node is short of CPU, not
//! waiting on a store.
//!
//! A thread of its own wakes a task every `PERIOD`; the task records the delay in
//! `boxoffice_runtime_wake_delay_seconds`, and the runtime's global queue (the tasks
//! woken from outside it, waiting for a worker) in `boxoffice_runtime_global_queue`.

use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};

const PERIOD: Duration = Duration::from_millis(250);

/// Starts the probe; it stops with `stop`.
pub fn spawn(mut stop: watch::Receiver<bool>) -> tokio::task::JoinHandle<()> {
    let (tx, mut rx) = mpsc::channel::<Instant>(1);
    let thread = std::thread::Builder::new()
        .name("wake-probe".into())
        .spawn(move || {
            // Ends when the task has stopped listening.
            loop {
                std::thread::sleep(PERIOD);
                if tx.blocking_send(Instant::now()).is_err() {
                    return;
                }
            }
        });
    if let Err(e) = thread {
        tracing::warn!(error = %e, "could not start the wake probe");
    }
    tokio::spawn(async move {
        loop {
            tokio::select! {
                woken = rx.recv() => match woken {
                    Some(at) => record(at),
                    None => return,
                },
                _ = stop.changed() => return,
            }
        }
    })
}

fn record(woken: Instant) {
    metrics::histogram!("boxoffice_runtime_wake_delay_seconds")
        .record(woken.elapsed().as_secs_f64());
    let queued = tokio::runtime::Handle::current()
        .metrics()
        .global_queue_depth();
    metrics::gauge!("boxoffice_runtime_global_queue").set(queued as f64);
}
