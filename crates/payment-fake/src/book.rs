//! The provider's book and the line of calls waiting for it. A call joins the line;
//! one blocking task at a time (the drainer) takes calls off it and runs them one
//! after another, each in its own transaction, answering each caller as it goes, and
//! ends when the line is empty. A call that finds no drainer starts one.
//!
//! Why not a blocking task per call behind a lock: with a crowd of checkouts in
//! flight, the lock was handed from thread to thread, an operating-system wake-up per
//! call, and on a busy machine each wake-up waited for a core, so calls of well under a
//! millisecond waited most of a second for the lock. The drainer runs the whole line
//! without being woken between calls, and no waiting caller parks a thread. It is a
//! blocking task (not a thread of its own) so that tests with paused time do not skip
//! ahead while the book works.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use boxoffice_engine::ports::PaymentError;
use parking_lot::Mutex;
use rusqlite::Connection;
use tokio::sync::oneshot;

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

#[derive(Default)]
struct Line {
    calls: VecDeque<Job>,
    /// A drainer is running and will take every call in the line.
    draining: bool,
}

/// The book: its connection and the line of calls for it.
pub(crate) struct Book {
    conn: Arc<Mutex<Connection>>,
    line: Arc<Mutex<Line>>,
}

impl Book {
    pub(crate) fn new(conn: Connection) -> Book {
        Book {
            conn: Arc::new(Mutex::new(conn)),
            line: Arc::default(),
        }
    }

    /// Runs `work` on the book and answers with its result. A caller that gives up
    /// mid-call does not undo the work, just as with a real provider.
    pub(crate) async fn run<T, F>(&self, work: F) -> Result<T, PaymentError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, PaymentError> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let _ = tx.send(work(conn));
        });
        let start = {
            let mut line = self.line.lock();
            line.calls.push_back(job);
            !std::mem::replace(&mut line.draining, true)
        };
        if start {
            let (conn, line) = (self.conn.clone(), self.line.clone());
            drop(tokio::task::spawn_blocking(move || drain(&conn, &line)));
        }
        // A call that panicked drops its sender unanswered.
        rx.await
            .map_err(|_| PaymentError::Unavailable("the fake provider's call failed".into()))?
    }
}

/// Runs the line's calls until it is empty. The line's lock is never held while a call
/// runs, and the drainer gives up its place in the same critical section that finds the
/// line empty, so a call that joins afterwards starts the next drainer.
fn drain(conn: &Mutex<Connection>, line: &Mutex<Line>) {
    let mut conn = conn.lock();
    loop {
        let job = {
            let mut line = line.lock();
            match line.calls.pop_front() {
                Some(job) => job,
                None => {
                    line.draining = false;
                    return;
                }
            }
        };
        // A bug in one call must not strand the calls behind it.
        let _ = catch_unwind(AssertUnwindSafe(|| job(&mut conn)));
    }
}
