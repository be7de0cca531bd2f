//! Reader connections. In WAL mode readers see the last committed state and never
//! block the writer, so reads run beside the commit path on blocking threads.
//! `boxoffice_ledger_read_seconds`: from a read's call to its result, its wait for a
//! connection and a blocking thread included; `boxoffice_ledger_read_query_seconds`,
//! labelled with the ledger call that read (`query`): the query alone, on its
//! connection.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use boxoffice_engine::ports::StoreError;
use parking_lot::Mutex;
use rusqlite::Connection;
use tokio::sync::Semaphore;

use crate::conn;

pub(crate) struct ReadPool {
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
    path: PathBuf,
    busy_timeout: Duration,
}

impl ReadPool {
    pub(crate) fn open(
        path: PathBuf,
        size: usize,
        busy_timeout: Duration,
    ) -> Result<Arc<Self>, StoreError> {
        let size = size.max(1);
        let idle = (0..size)
            .map(|_| conn::open(&path, busy_timeout))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Arc::new(ReadPool {
            idle: Mutex::new(idle),
            permits: Arc::new(Semaphore::new(size)),
            path,
            busy_timeout,
        }))
    }

    /// Runs `query` on an idle connection on a blocking thread; waits for one if all
    /// are busy, so the pool size bounds the reads in progress.
    pub(crate) async fn read<T, F>(self: &Arc<Self>, query: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let asked = std::time::Instant::now();
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(StoreError::new)?;
        let pool = self.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let conn = pool.checkout()?;
            let started = std::time::Instant::now();
            let out = query(&conn);
            let ran = started.elapsed();
            pool.idle.lock().push(conn);
            metrics::histogram!("boxoffice_ledger_read_query_seconds", "query" => caller::<F>())
                .record(ran.as_secs_f64());
            metrics::histogram!("boxoffice_ledger_read_seconds")
                .record(asked.elapsed().as_secs_f64());
            out
        })
        .await
        .map_err(StoreError::new)?
    }

    /// An idle connection, or a new one if a panicking query lost one.
    fn checkout(&self) -> Result<Connection, StoreError> {
        let idle = self.idle.lock().pop();
        match idle {
            Some(conn) => Ok(conn),
            None => conn::open(&self.path, self.busy_timeout),
        }
    }
}

/// The name of the function a query closure was written in (`order_of_hold`), from the
/// closure's type name: one label per call site, fixed at compile time.
fn caller<F>() -> &'static str {
    let full = std::any::type_name::<F>();
    let head = full.split("::{{closure}}").next().unwrap_or(full);
    let name = head.rsplit("::").next().unwrap_or(head);
    // Without its lifetimes (`order<'_, '_>`).
    name.split('<').next().unwrap_or(name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_query_is_named_after_the_function_that_asked_for_it() {
        // Generic, as an async trait method is: its type name carries `<u8>`.
        fn order_of_hold<T>(_: T) -> &'static str {
            let query = |n: u32| n + 1;
            name_of(&query)
        }
        fn name_of<F: Fn(u32) -> u32>(_: &F) -> &'static str {
            super::caller::<F>()
        }
        assert_eq!(order_of_hold(1u8), "order_of_hold");
    }
}
