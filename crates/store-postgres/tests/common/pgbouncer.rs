//! A PgBouncer of the test's own, in front of the machine's PostgreSQL: Debian's
//! `pgbouncer` binary, listening on a free loopback port, trusting the `postgres` user
//! (as the machine's PostgreSQL does), in the pool mode the test asks for (transaction
//! mode with two server connections per database and user, so that its clients share them). As root
//! (CI) it runs as the `postgres` OS user (PgBouncer refuses root). Stopped on drop, also
//! when a test fails. A missing binary fails the test, never skips it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::tls_cluster::{as_root, free_port, give};

pub struct PgBouncer {
    pub port: u16,
    dir: tempfile::TempDir,
}

#[derive(Clone, Copy, Debug)]
pub enum PoolMode {
    Session,
    Transaction,
}

impl PgBouncer {
    pub fn start(mode: PoolMode) -> PgBouncer {
        let dir = tempfile::tempdir().unwrap();
        give(dir.path(), 0o755);
        let port = free_port();
        // Session mode gives each client a server connection for its whole session, so
        // there must be one per client; transaction mode shares two among them all.
        let (mode, servers) = match mode {
            PoolMode::Session => ("session", 50),
            PoolMode::Transaction => ("transaction", 2),
        };
        let path = |name: &str| dir.path().join(name).display().to_string();
        let ini = format!(
            "[databases]\n* = host=127.0.0.1 port=5432\n\
             [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
             auth_type = trust\nauth_file = {users}\npool_mode = {mode}\n\
             default_pool_size = {servers}\nmax_client_conn = 500\n\
             ignore_startup_parameters = extra_float_digits,options\n\
             pidfile = {pid}\nlogfile = {log}\n",
            users = path("users.txt"),
            pid = path("pgbouncer.pid"),
            log = path("pgbouncer.log"),
        );
        write(dir.path(), "users.txt", "\"postgres\" \"\"\n");
        write(dir.path(), "pgbouncer.ini", &ini);
        let out = command()
            .arg("-d")
            .arg(path("pgbouncer.ini"))
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "pgbouncer could not run ({e}); this test needs PgBouncer (Debian: pgbouncer)"
                )
            });
        assert!(
            out.status.success(),
            "pgbouncer did not start: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let bouncer = PgBouncer { port, dir };
        bouncer.wait_until_listening();
        bouncer
    }

    /// `url` (a database of the machine's PostgreSQL) reached through this PgBouncer.
    pub fn url(&self, url: &str) -> String {
        url.replacen("127.0.0.1:5432", &format!("127.0.0.1:{}", self.port), 1)
    }

    fn wait_until_listening(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "pgbouncer did not listen on 127.0.0.1:{} within 10 s: {}",
                self.port,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("pgbouncer.log")).unwrap_or_default()
    }

    fn pid_file(&self) -> PathBuf {
        self.dir.path().join("pgbouncer.pid")
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(self.pid_file()) {
            let _ = Command::new("kill").arg(pid.trim()).output();
        }
    }
}

fn command() -> Command {
    let binary = Path::new("/usr/sbin/pgbouncer");
    let binary = if binary.exists() {
        binary
    } else {
        Path::new("pgbouncer")
    };
    if !as_root() {
        return Command::new(binary);
    }
    let mut c = Command::new("runuser");
    c.args(["-u", "postgres", "--"]).arg(binary);
    c
}

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    give(&path, 0o644);
}
