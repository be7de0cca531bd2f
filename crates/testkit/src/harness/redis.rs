//! Redis for tests: the machine's server with a key prefix of the test's own (its keys
//! deleted when the test is done), or a `redis-server` of the test's own that it may
//! restart without disturbing anybody else.

use std::time::Duration;

use tokio::process::{Child, Command};

/// The Redis the tests use: `BOXOFFICE_TEST_REDIS_URL`, else the machine's own.
pub fn redis_url() -> String {
    std::env::var("BOXOFFICE_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// A unique key prefix whose keys are deleted when this goes out of scope.
pub struct RedisPrefix {
    pub prefix: String,
    pub url: String,
}

impl RedisPrefix {
    /// A new prefix on the Redis at `url`, which must answer.
    pub fn new(url: &str) -> RedisPrefix {
        let reachable = redis::Client::open(url)
            .and_then(|c| c.get_connection())
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
        if let Err(e) = reachable {
            panic!("Redis at {url} is not reachable ({e}); these tests need Redis and never skip");
        }
        RedisPrefix {
            prefix: format!("bt{}", &uuid::Uuid::new_v4().simple().to_string()[..12]),
            url: url.into(),
        }
    }

    /// Deletes every key of this prefix (also used as a fault: the hot store is lost);
    /// returns how many keys Redis deleted.
    pub fn delete_keys(&self) -> usize {
        delete_prefix(&self.url, &self.prefix)
            .unwrap_or_else(|e| panic!("deleting the keys of {} failed: {e}", self.prefix))
    }
}

impl Drop for RedisPrefix {
    fn drop(&mut self) {
        if let Err(e) = delete_prefix(&self.url, &self.prefix) {
            eprintln!("cleanup of Redis keys under {} failed: {e}", self.prefix);
        }
    }
}

/// Deletes every key starting with `prefix` or `{prefix` (a hash tag) on every node
/// named in `urls` (comma-separated); returns how many were deleted.
pub fn delete_prefix(urls: &str, prefix: &str) -> redis::RedisResult<usize> {
    let mut deleted = 0;
    for url in urls.split(',').map(str::trim).filter(|u| !u.is_empty()) {
        let mut con = redis::Client::open(url)?.get_connection()?;
        let mut keys = Vec::<String>::new();
        for pattern in [format!("{prefix}*"), format!("{{{prefix}*")] {
            let found: Vec<String> = redis::cmd("SCAN")
                .cursor_arg(0)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .clone()
                .iter(&mut con)?
                .collect::<Result<_, _>>()?;
            keys.extend(found);
        }
        if keys.is_empty() {
            continue;
        }
        // Found first, then deleted in one pipeline: the keys go together, as when Redis
        // loses them, and a rebuild that starts meanwhile is not half undone. One key
        // per DEL: on a cluster node keys of several slots may match.
        let mut pipe = redis::pipe();
        for key in &keys {
            pipe.cmd("DEL").arg(key);
        }
        let counts: Vec<usize> = pipe.query(&mut con)?;
        deleted += counts.iter().sum::<usize>();
    }
    Ok(deleted)
}

/// The key `OwnRedis::mark` leaves.
const MARK: &str = "boxoffice-test:restart-mark";

/// A `redis-server` of the test's own, so restarting it disturbs nobody else.
pub struct OwnRedis {
    pub port: u16,
    child: Option<Child>,
}

impl OwnRedis {
    /// Starts one on `port` (without persistence); returns once it answers PING.
    pub async fn start(port: u16) -> OwnRedis {
        OwnRedis::spawn(port, &[]).await
    }

    /// Starts a replica of `primary` on `port`; returns once it has the primary's data
    /// and follows its writes (`master_link_status:up`).
    pub async fn replica_of(port: u16, primary: &OwnRedis) -> OwnRedis {
        let of = primary.port.to_string();
        let replica = OwnRedis::spawn(port, &["--replicaof", "127.0.0.1", &of]).await;
        let what = format!("the replica on port {port} in step with its primary");
        crate::eventually(
            what,
            Duration::from_secs(20),
            Duration::from_millis(50),
            || async {
                let info = replica.cli(&["info", "replication"]).await;
                match info.contains("master_link_status:up") {
                    true => Ok(()),
                    false => Err(info),
                }
            },
        )
        .await;
        replica
    }

    /// Promotes this replica to a primary (`REPLICAOF NO ONE`, as Sentinel or an
    /// operator does): from now on it takes writes, and whatever its old primary
    /// acknowledges is no longer copied to it.
    pub async fn promote(&self) {
        assert_eq!(self.cli(&["replicaof", "no", "one"]).await, "OK");
        assert_eq!(self.role().await, "master", "the replica was promoted");
    }

    /// The first line of `ROLE`: "master", "slave" (a replica), or "" if down.
    pub async fn role(&self) -> String {
        let role = self.cli(&["role"]).await;
        role.lines().next().unwrap_or_default().to_string()
    }

    /// Kills the server for good (a crashed primary).
    pub async fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().await.expect("redis-server can be killed");
        }
    }

    async fn spawn(port: u16, extra: &[&str]) -> OwnRedis {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            // A replica's copy goes over the socket, never through an RDB file left in
            // the test's working directory.
            .args([
                "--repl-diskless-sync",
                "yes",
                "--repl-diskless-sync-delay",
                "0",
            ])
            .args(["--repl-diskless-load", "on-empty-db"])
            .args(extra)
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
        crate::eventually(what, Duration::from_secs(20), every, || async {
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
        *self = OwnRedis::spawn(self.port, &[]).await;
        let after = self.run_id().await;
        assert_ne!(before, after, "Redis was not really restarted");
    }

    /// The server's run id: a new one at every start.
    pub async fn run_id(&self) -> String {
        let info = self.cli(&["info", "server"]).await;
        let id = info.lines().find_map(|l| l.strip_prefix("run_id:"));
        id.expect("INFO server names the run id").trim().to_string()
    }

    /// Leaves a key of the test's own, which only this server's data holds: a restart
    /// that kept the data would still have it (`is_marked`).
    pub async fn mark(&self) {
        assert_eq!(self.cli(&["set", MARK, "1"]).await, "OK");
    }

    pub async fn is_marked(&self) -> bool {
        self.cli(&["exists", MARK]).await == "1"
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
