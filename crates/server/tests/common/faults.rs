//! Faults a test injects, and the observations that show each one took effect: a Redis of
//! the test's own that it restarts, and a server it kills.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use tokio::process::{Child, Command};

/// A Redis of the test's own, so restarting it disturbs nobody else.
pub struct OwnRedis {
    pub port: u16,
    child: Option<Child>,
}

impl OwnRedis {
    pub async fn start(port: u16) -> OwnRedis {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server is installed (these tests never skip)");
        let redis = OwnRedis {
            port,
            child: Some(child),
        };
        let what = format!("redis-server on port {port} to answer PING");
        let every = Duration::from_millis(50);
        boxoffice_testkit::eventually(what, Duration::from_secs(20), every, || async {
            match redis.cli(&["ping"]).await.as_str() {
                "PONG" => Ok(()),
                other => Err(other.to_string()),
            }
        })
        .await;
        redis
    }

    /// Kills the server and starts a fresh one on the same port (empty: no persistence).
    /// Returns only once the new one answers, with another run id than the old one.
    pub async fn restart(&mut self) {
        let before = self.run_id().await;
        if let Some(mut c) = self.child.take() {
            c.kill().await.expect("the old redis-server can be killed");
        }
        *self = OwnRedis::start(self.port).await;
        let after = self.run_id().await;
        assert_ne!(before, after, "Redis was not really restarted");
    }

    /// The server's run id: a new one at every start.
    pub async fn run_id(&self) -> String {
        let info = self.cli(&["info", "server"]).await;
        let id = info.lines().find_map(|l| l.strip_prefix("run_id:"));
        id.expect("INFO server names the run id").trim().to_string()
    }

    /// How many keys the server holds.
    pub async fn keys(&self) -> usize {
        self.cli(&["dbsize"])
            .await
            .parse()
            .expect("DBSIZE answers a number")
    }

    /// One redis-cli command; its output, trimmed ("" when it could not run).
    async fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .kill_on_drop(true)
            .output()
            .await;
        out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// kill -9 of a server at `url`: it exits by SIGKILL and its port refuses connections.
pub async fn kill_and_check(mut server: Child, url: &str) {
    server.start_kill().expect("the server can be killed");
    let status = server.wait().await.expect("the server's exit status");
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
