//! The `boxoffice` binary as real processes, for tests that kill, restart or multiply
//! servers. Cargo names the binary only to the server's own tests
//! (`env!("CARGO_BIN_EXE_boxoffice")`), so they hand its path to [`Boxoffice`].

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

/// What a server wrote on stderr so far (kept up to 20,000 bytes).
pub type Said = Arc<Mutex<String>>;

/// The `boxoffice` binary at this path.
#[derive(Clone, Copy, Debug)]
pub struct Boxoffice(pub &'static str);

impl Boxoffice {
    /// Starts `boxoffice serve` on port 0 with `args`; returns it with its base URL.
    /// Self sign-up is on without a rate: the tests make their buyers through
    /// POST /v1/buyers. Every client of a test is this machine, one address, which may
    /// have as many requests in flight as the node (`http.max_in_flight_per_address`).
    pub async fn start(&self, args: &[&str]) -> (Child, String) {
        let (child, addr, _, _) = self.spawn(args, &[]).await;
        (child, addr)
    }

    /// As [`Boxoffice::start`], with `env` (`BOXOFFICE_*` settings, which override the
    /// config file) set last, over the defaults above.
    pub async fn start_env(&self, args: &[&str], env: &[(&str, &str)]) -> (Child, String) {
        let (child, addr, _, _) = self.spawn(args, env).await;
        (child, addr)
    }

    /// As [`Boxoffice::start`], and what the server writes on stderr.
    pub async fn start_said(&self, args: &[&str]) -> (Child, String, Said) {
        let (child, addr, said, _) = self.spawn(args, &[]).await;
        (child, addr, said)
    }

    /// As [`Boxoffice::start`], and the lines the server printed before it listened.
    pub async fn start_saying(&self, args: &[&str]) -> (Child, String, Vec<String>) {
        let (child, addr, _, printed) = self.spawn(args, &[]).await;
        (child, addr, printed)
    }

    async fn spawn(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> (Child, String, Said, Vec<String>) {
        let mut child = self
            .serve(args)
            .env("BOXOFFICE_BUYERS__SELF_SIGNUP", "true")
            .env("BOXOFFICE_BUYERS__SIGNUP_PER_ADDRESS__PER_S", "0")
            .env("BOXOFFICE_BUYERS__SIGNUP_PER_ADDRESS__BURST", "0")
            .env("BOXOFFICE_HTTP__MAX_IN_FLIGHT_PER_ADDRESS", "100000")
            .envs(env.iter().copied())
            .spawn()
            .expect("the binary starts");
        let said = keep_stderr(&mut child);
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let (addr, printed) = listening(&mut lines).await;
        match addr {
            Some(addr) => {
                tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
                (child, addr, said, printed)
            }
            None => {
                // Let the reader catch the server's last words.
                tokio::time::sleep(Duration::from_millis(200)).await;
                panic!(
                    "the server never said where it listens; it said:\n{}",
                    said.lock()
                )
            }
        }
    }

    /// `boxoffice serve --listen 127.0.0.1:0 <args>`, its output piped.
    fn serve(&self, args: &[&str]) -> Command {
        let mut command = Command::new(self.0);
        command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .env("BOXOFFICE_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }

    /// Runs `boxoffice serve` on port 0 with `args`, expecting it to refuse to start: it
    /// must exit unsuccessfully within 30 s. Returns what it wrote on stderr.
    pub async fn serve_refused(&self, args: &[&str]) -> String {
        let child = self.serve(args).spawn().expect("the binary starts");
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
    pub async fn run(&self, args: &[&str]) -> (bool, Value) {
        let out = Command::new(self.0)
            .args(args)
            .env("BOXOFFICE_LOG", "error")
            .kill_on_drop(true)
            .output()
            .await
            .expect("the binary runs");
        let report = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out.status.success(), report)
    }

    /// Runs `boxoffice audit --json` with `args` (where the ledger is) until no order
    /// is in flight, within a minute; returns (clean, report).
    pub async fn settled_audit(&self, args: &[&str]) -> (bool, Value) {
        let argv: Vec<&str> = ["audit", "--json"].iter().chain(args).copied().collect();
        let what = "the recovery sweep to settle every order (audit: orders_in_flight = 0)";
        let every = Duration::from_millis(300);
        crate::eventually(what, Duration::from_secs(60), every, || async {
            let (clean, report) = self.run(&argv).await;
            match report["orders_in_flight"] == serde_json::json!(0) {
                true => Ok((clean, report)),
                false => Err(report),
            }
        })
        .await
    }
}

/// Keeps what the server says on stderr, to tell why it did not start.
fn keep_stderr(child: &mut Child) -> Said {
    let said = Arc::new(Mutex::new(String::new()));
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
    said
}

/// Reads stdout until the server says where it listens (within a minute): that address,
/// and the lines printed before it.
async fn listening(lines: &mut Lines<BufReader<ChildStdout>>) -> (Option<String>, Vec<String>) {
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
    let addr = read.await.ok().flatten();
    (addr, printed)
}

/// Sends SIGTERM to a running server.
pub fn terminate(child: &Child) {
    let pid = child.id().expect("the server is running");
    let ok = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(ok.success(), "SIGTERM could not be sent to {pid}");
}

/// kill -9 of a server at `url`: it exits by SIGKILL and its port refuses connections.
pub async fn kill_and_check(mut server: Child, url: &str) {
    server.start_kill().expect("the server can be killed");
    let exited = crate::within(
        Duration::from_secs(30),
        "the killed server to exit",
        server.wait(),
    );
    let status = exited.await.expect("the server's exit status");
    assert_eq!(
        status.signal(),
        Some(9),
        "the server did not die of SIGKILL: {status}"
    );
    let probe = reqwest::Client::new()
        .get(format!("{url}/healthz"))
        .timeout(Duration::from_secs(5))
        .send()
        .await;
    assert!(
        probe.as_ref().is_err_and(|e| e.is_connect()),
        "the killed server at {url} still answers: {probe:?}"
    );
}
