//! One embedded process per data directory. In embedded mode the hot store lives in the
//! process, so two processes on one directory would each sell its events from their own
//! arbiter, and two buyers could hold one seat (one then loses at commit). `serve`
//! therefore takes an exclusive advisory lock (`flock`) on `<data_dir>/boxoffice.lock`
//! for as long as it serves, with who holds it written inside; a second process refuses
//! to start and names the holder. The kernel drops the lock when the holder's process
//! ends, however it ends, so a crash never leaves the directory locked. Cluster mode
//! (a shared hot store) takes no lock: its nodes share a directory on purpose.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use serde::{Deserialize, Serialize};

pub const LOCK_FILE: &str = "boxoffice.lock";

/// Who holds the lock, as written in the lock file.
#[derive(Debug, Serialize, Deserialize)]
struct Holder {
    pid: u32,
    started_at_unix_s: u64,
    listen: String,
}

/// The held lock; released when dropped (or when the process ends).
pub struct DirLock {
    file: File,
    path: PathBuf,
    started_at_unix_s: u64,
}

impl DirLock {
    /// Takes the lock of `dir`, or fails naming the process that holds it.
    pub fn acquire(dir: &Path, listen: SocketAddr) -> anyhow::Result<DirLock> {
        let path = dir.join(LOCK_FILE);
        // Not truncated on open: the holder's note must survive a failed attempt.
        let mut file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        if !try_lock(&file)? {
            let mut note = String::new();
            let _ = file.read_to_string(&mut note);
            anyhow::bail!("{}", in_use(dir, &note));
        }
        let started_at_unix_s = unix_now();
        let lock = DirLock {
            file,
            path,
            started_at_unix_s,
        };
        lock.note(listen)?;
        Ok(lock)
    }

    /// `note` on the lock, if this process holds one.
    pub fn note_if_held(lock: Option<&DirLock>, listen: SocketAddr) -> anyhow::Result<()> {
        lock.map_or(Ok(()), |l| l.note(listen))
    }

    /// Writes who holds the lock (again once the listener is bound to its real port).
    pub fn note(&self, listen: SocketAddr) -> anyhow::Result<()> {
        let holder = Holder {
            pid: std::process::id(),
            started_at_unix_s: self.started_at_unix_s,
            listen: listen.to_string(),
        };
        let mut file = &self.file;
        file.set_len(0)?;
        file.rewind()?;
        file.write_all(serde_json::to_string(&holder)?.as_bytes())
            .with_context(|| format!("writing {}", self.path.display()))
    }
}

#[cfg(unix)]
fn try_lock(file: &File) -> anyhow::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock only reads the descriptor, which `file` keeps open for this call.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        return Ok(false);
    }
    Err(err).context("locking the data directory")
}

#[cfg(not(unix))]
fn try_lock(_: &File) -> anyhow::Result<bool> {
    // No advisory locks here: the operator keeps one process per directory.
    Ok(true)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The refusal, naming the holder when its note can be read.
fn in_use(dir: &Path, note: &str) -> String {
    let who = match serde_json::from_str::<Holder>(note) {
        Ok(h) => format!(
            "pid {}, listening on {}, started {} s ago",
            h.pid,
            h.listen,
            unix_now().saturating_sub(h.started_at_unix_s)
        ),
        Err(_) => "a process that has not said who it is yet".into(),
    };
    format!(
        "the data directory {} is in use by another boxoffice process ({who}). In embedded \
         mode one process serves a data directory; stop that one, or give this one its own \
         --data-dir (in cluster mode, with PostgreSQL and Redis, nodes may share one)",
        dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_a_directory_is_refused_naming_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let addr: SocketAddr = "127.0.0.1:8123".parse().unwrap();
        let first = DirLock::acquire(dir.path(), addr).expect("the first lock");
        let err = DirLock::acquire(dir.path(), addr).err().expect("refused");
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        assert!(msg.contains("127.0.0.1:8123"), "{msg}");
        drop(first);
        DirLock::acquire(dir.path(), addr).expect("free again once dropped");
    }
}
