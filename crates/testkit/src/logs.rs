//! Log lines kept in memory, for tests that read what a tracing subscriber wrote: hand
//! `move || lines.clone()` to the subscriber as its writer, then read `text()`.

use std::sync::{Arc, Mutex};

/// A shared in-memory writer; every clone appends to the same buffer.
#[derive(Clone, Default)]
pub struct LogLines(Arc<Mutex<Vec<u8>>>);

impl LogLines {
    /// Everything written so far.
    pub fn text(&self) -> String {
        let bytes = self.0.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl std::io::Write for LogLines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut b) = self.0.lock() {
            b.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
