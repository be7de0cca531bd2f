//! Real `boxoffice` processes for tests that kill, restart or multiply servers, and the
//! throw-away PostgreSQL database and Redis prefix that cluster tests share.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Starts `boxoffice serve` on port 0 with `args`; returns it with its base URL. Self
/// sign-up is on without a rate: these tests make their buyers through POST /v1/buyers.
pub async fn start_server(args: &[&str]) -> (Child, String) {
    let (child, addr, _) = start_server_said(args).await;
    (child, addr)
}

/// What a server wrote on stderr so far (kept up to 20,000 bytes).
pub type Said = std::sync::Arc<parking_lot::Mutex<String>>;

/// As [`start_server`], and what the server writes on stderr.
pub async fn start_server_said(args: &[&str]) -> (Child, String, Said) {
    let (child, addr, said, _) = spawn_server(args).await;
    (child, addr, said)
}

/// As [`start_server`], and the lines the server printed before it listened.
pub async fn start_server_saying(args: &[&str]) -> (Child, String, Vec<String>) {
    let (child, addr, _, printed) = spawn_server(args).await;
    (child, addr, printed)
}

async fn spawn_server(args: &[&str]) -> (Child, String, Said, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_boxoffice"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .env("BOXOFFICE_LOG", "warn")
        .env("BOXOFFICE_BUYERS__SELF_SIGNUP", "true")
        .env("BOXOFFICE_BUYERS__SIGNUP_PER_ADDRESS__PER_S", "0")
        .env("BOXOFFICE_BUYERS__SIGNUP_PER_ADDRESS__BURST", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    // Keep what the server says on stderr, to tell why it did not start.
    let said = std::sync::Arc::new(parking_lot::Mutex::new(String::new()));
    let mut errors = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
    let keep = said.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = errors.next_line().await {
            let mut s = keep.lock();
            if s.len() < 20_000 {
                s.push_str(&line);
                s.push('\n');
            }
        }
    });
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let mut printed = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.ok().flatten() {
            if let Some(addr) = line.strip_prefix("listening on ") {
                return Some(addr.trim().to_string());
            }
            printed.push(line);
        }
        None
    });
    if let Ok(Some(addr)) = read.await {
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        return (child, addr, said, printed);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    panic!(
        "the server never said where it listens; it said:\n{}",
        said.lock()
    );
}

/// Runs `boxoffice serve` on port 0 with `args`, expecting it to refuse to start: it
/// must exit unsuccessfully within 30 s. Returns what it wrote on stderr.
pub async fn serve_refused(args: &[&str]) -> String {
    let child = Command::new(env!("CARGO_BIN_EXE_boxoffice"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .env("BOXOFFICE_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the server did not refuse to start within 30 s (it serves instead)")
        .expect("the server's output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success() && !stdout.contains("listening on"),
        "the server started instead of refusing: {stdout}\n{stderr}"
    );
    stderr
}

/// Runs a `boxoffice` subcommand; returns (success, stdout parsed as JSON or Null).
pub async fn run_command(args: &[&str]) -> (bool, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_boxoffice"))
        .args(args)
        .env("BOXOFFICE_LOG", "error")
        .kill_on_drop(true)
        .output()
        .await
        .expect("the binary runs");
    (
        out.status.success(),
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
    )
}

/// Runs `boxoffice audit --json` with `args` (where the ledger is) until no order is in
/// flight, within a minute; returns (clean, report).
pub async fn settled_audit(args: &[&str]) -> (bool, Value) {
    let argv: Vec<&str> = ["audit", "--json"].iter().chain(args).copied().collect();
    let what = "the recovery sweep to settle every order (audit: orders_in_flight = 0)";
    let every = Duration::from_millis(300);
    boxoffice_testkit::eventually(what, Duration::from_secs(60), every, || async {
        let (clean, report) = run_command(&argv).await;
        match report["orders_in_flight"] == serde_json::json!(0) {
            true => Ok((clean, report)),
            false => Err(report),
        }
    })
    .await
}

/// One request with a fresh Idempotency-Key; a transport error is status 0.
pub async fn call(
    c: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: &str,
    body: Value,
) -> (u16, Value) {
    let res = c
        .request(method, url)
        .bearer_auth(token)
        .header("Idempotency-Key", super::uuid())
        .json(&body)
        .send()
        .await;
    match res {
        Ok(r) => (r.status().as_u16(), r.json().await.unwrap_or(Value::Null)),
        Err(_) => (0, Value::Null),
    }
}

/// Polls the queue status at `base` with `ticket` until it carries an admission token;
/// fails after a minute, with the last status seen.
pub async fn admission_token(c: &reqwest::Client, base: &str, ticket: &str) -> String {
    let what = format!("an admission token from {base}/v1/queue/status");
    let every = Duration::from_millis(25);
    boxoffice_testkit::eventually(what, Duration::from_secs(60), every, || async {
        let res = c
            .get(format!("{base}/v1/queue/status"))
            .bearer_auth(ticket)
            .send()
            .await;
        let status: Value = match res {
            Ok(r) => r.json().await.unwrap_or(Value::Null),
            Err(e) => return Err(Value::String(e.to_string())),
        };
        match status["admission_token"].as_str() {
            Some(a) => Ok(a.to_string()),
            None => Err(status),
        }
    })
    .await
}

/// Runs `sql` on the test server's maintenance database; returns the rows, one a line.
fn psql(sql: &str) -> String {
    let url = std::env::var("BOXOFFICE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let out = std::process::Command::new("psql")
        .arg(&url)
        .args(["-v", "ON_ERROR_STOP=1", "-qtAc", sql])
        .output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        Ok(o) => panic!(
            "PostgreSQL refused {sql:?}: {} (these tests need PostgreSQL and never skip)",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => panic!("psql could not run ({e}); these tests need PostgreSQL and never skip"),
    }
}

/// A fresh PostgreSQL database, dropped when this goes out of scope.
pub struct TestDatabase {
    pub name: String,
    pub url: String,
}

impl TestDatabase {
    pub fn create() -> TestDatabase {
        let name = format!("boxoffice_test_{}", uuid::Uuid::new_v4().simple());
        psql(&format!("CREATE DATABASE {name}"));
        TestDatabase {
            url: format!("postgres://postgres@127.0.0.1:5432/{name}"),
            name,
        }
    }

    /// Ends every connection to this database (a failover, a pooler restart); returns
    /// the server processes that were told to end.
    pub fn terminate_connections(&self) -> Vec<u32> {
        // The victims are chosen in a materialized CTE first: in one WHERE, PostgreSQL
        // may call pg_terminate_backend before the other conditions, on every backend.
        let rows = psql(&format!(
            "WITH victims AS MATERIALIZED (SELECT pid FROM pg_stat_activity \
             WHERE datname = '{}' AND pid <> pg_backend_pid()) \
             SELECT pid FROM victims WHERE pg_terminate_backend(pid)",
            self.name
        ));
        rows.lines().filter_map(|l| l.trim().parse().ok()).collect()
    }

    /// The server processes connected to this database now.
    pub fn connections(&self) -> Vec<u32> {
        let rows = psql(&format!(
            "SELECT pid FROM pg_stat_activity WHERE datname = '{}' AND pid <> pg_backend_pid()",
            self.name
        ));
        rows.lines().filter_map(|l| l.trim().parse().ok()).collect()
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        psql(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        ));
    }
}

/// A unique Redis key prefix whose keys are deleted when this goes out of scope.
pub struct RedisPrefix {
    pub prefix: String,
    pub url: String,
}

impl RedisPrefix {
    pub fn new(url: &str) -> RedisPrefix {
        let ok = std::process::Command::new("redis-cli")
            .args(["-u", url, "ping"])
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"PONG"));
        assert!(
            ok,
            "Redis at {url} is not reachable; these tests need Redis and never skip"
        );
        RedisPrefix {
            prefix: format!("bt{}", &uuid::Uuid::new_v4().simple().to_string()[..12]),
            url: url.into(),
        }
    }

    /// Deletes every key of this prefix (also used as a fault: the hot store is lost);
    /// returns how many keys Redis deleted.
    pub fn delete_keys(&self) -> usize {
        let script = format!(
            "redis-cli -u {0} --scan --pattern '*{1}*' | xargs -r -n 500 redis-cli -u {0} del",
            self.url, self.prefix
        );
        let out = std::process::Command::new("sh")
            .args(["-c", &script])
            .output()
            .expect("sh runs");
        let replies = String::from_utf8_lossy(&out.stdout);
        replies
            .split_whitespace()
            .filter_map(|n| n.parse::<usize>().ok())
            .sum()
    }
}

impl Drop for RedisPrefix {
    fn drop(&mut self) {
        self.delete_keys();
    }
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("temp paths are UTF-8")
}

/// localstripe (a fake Stripe server) on a free loopback port, killed on drop. Its CLI
/// binds every interface, so it is started from Python bound to 127.0.0.1.
pub struct LocalStripe {
    pub base: String,
    child: std::process::Child,
}

impl LocalStripe {
    pub fn start() -> LocalStripe {
        let setup = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scripts/test-payments-setup.sh"
        );
        let ok = std::process::Command::new("sh")
            .arg(setup)
            .status()
            .expect("sh runs");
        assert!(ok.success(), "localstripe could not be installed");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let code = format!(
            "from aiohttp import web; import localstripe.server as s; web.run_app(s.app, host='127.0.0.1', port={port}, print=None)"
        );
        let child = std::process::Command::new("python3")
            .args(["-c", &code])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 starts");
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "localstripe did not accept connections on port {port} within 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        LocalStripe {
            base: format!("http://127.0.0.1:{port}"),
            child,
        }
    }
}

impl Drop for LocalStripe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
