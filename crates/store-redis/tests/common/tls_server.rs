//! Throw-away `redis-server` processes listening only on a TLS port with a certificate
//! from a CA the test made: one node, or three forming a Redis Cluster over TLS.
//! Stopped (and their files removed) when dropped, also when a test fails. The
//! machine's redis-server must have TLS built in; a missing one fails the test.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use boxoffice_testkit::tls::{TestCa, TlsFiles};

/// Redis nodes on TLS ports; killed on drop.
pub struct TlsRedis {
    pub ports: Vec<u16>,
    pub files: TlsFiles,
    children: Vec<Child>,
    _dir: tempfile::TempDir,
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The ports this process has handed to nodes, with their cluster bus ports (+10000):
/// tests run in parallel, and one node's port must never be another's bus port (a bus
/// speaks TLS to other nodes only, so a test that reached one would read
/// `CertificateRequired` instead of its own node's answer).
static HANDED: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A port whose cluster bus port (+10000) is free too, and neither handed out before.
fn free_port() -> u16 {
    let mut handed = HANDED.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..100 {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let bus = port.wrapping_add(10_000);
        if port < 55_000
            && !handed.contains(&port)
            && !handed.contains(&bus)
            && TcpListener::bind(("127.0.0.1", bus)).is_ok()
        {
            handed.extend([port, bus]);
            return port;
        }
    }
    panic!("no free loopback port pair found");
}

fn spawn_node(dir: &Path, files: &TlsFiles, port: u16, cluster: bool) -> Child {
    let node_dir = dir.join(port.to_string());
    std::fs::create_dir_all(&node_dir).unwrap();
    let path = |p: &PathBuf| p.to_str().unwrap().to_owned();
    let mut args = vec![
        "--port".to_owned(),
        "0".into(),
        "--tls-port".into(),
        port.to_string(),
        "--bind".into(),
        "127.0.0.1".into(),
        "--tls-cert-file".into(),
        path(&files.cert),
        "--tls-key-file".into(),
        path(&files.key),
        "--tls-ca-cert-file".into(),
        path(&files.ca),
        "--tls-auth-clients".into(),
        "no".into(),
        "--save".into(),
        "".into(),
        "--appendonly".into(),
        "no".into(),
        "--dir".into(),
        path(&node_dir),
    ];
    if cluster {
        args.extend(["--cluster-enabled", "yes", "--tls-cluster", "yes"].map(String::from));
        args.extend(["--cluster-node-timeout".to_owned(), "2000".into()]);
        args.extend([
            "--cluster-config-file".to_owned(),
            path(&node_dir.join("nodes.conf")),
        ]);
    }
    Command::new("redis-server")
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("redis-server (with TLS built in) is required for these tests and could not start: {e}")
        })
}

impl TlsRedis {
    /// `nodes` servers signed by `ca`; with more than one, each is cluster-enabled (the
    /// caller forms the cluster). A port taken by another process between its choice
    /// and the node's start (the node then exits, and whatever holds the port answers)
    /// is found by asking each node its process id, and the nodes start again on other
    /// ports.
    pub fn start(ca: &TestCa, nodes: usize) -> TlsRedis {
        let mut last = String::new();
        for _ in 0..5 {
            let dir = tempfile::tempdir().unwrap();
            let files = ca.write_files(dir.path());
            let ports: Vec<u16> = (0..nodes).map(|_| free_port()).collect();
            let children = ports
                .iter()
                .map(|&p| spawn_node(dir.path(), &files, p, nodes > 1))
                .collect();
            let mut redis = TlsRedis {
                ports,
                files,
                children,
                _dir: dir,
            };
            match redis.wait_listening().and_then(|()| redis.own_ports()) {
                Ok(()) => return redis,
                Err(e) => last = e,
            }
        }
        panic!("the TLS redis nodes did not start on ports of their own: {last}");
    }

    fn wait_listening(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        for port in self.ports.clone() {
            while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
                if self.exited() {
                    return Err(format!("a node exited before {port} listened"));
                }
                assert!(
                    Instant::now() < deadline,
                    "redis-server never listened on {port}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(())
    }

    fn exited(&mut self) -> bool {
        self.children
            .iter_mut()
            .any(|c| c.try_wait().ok().flatten().is_some())
    }

    /// Each port answers as the node started on it: its `process_id`, over TLS.
    fn own_ports(&self) -> Result<(), String> {
        for (&port, child) in self.ports.iter().zip(&self.children) {
            let mut con = self.connection(port).map_err(|e| format!("{port}: {e}"))?;
            let info: String = redis::cmd("INFO")
                .arg("server")
                .query(&mut con)
                .map_err(|e| format!("{port}: {e}"))?;
            let pid = format!("process_id:{}", child.id());
            if !info.lines().any(|l| l.trim() == pid) {
                return Err(format!("{port} is another process's"));
            }
        }
        Ok(())
    }

    /// A plain connection to the node on `port`, trusting the test's CA, that gives
    /// up after 5 s of waiting for a connection or an answer.
    pub fn connection(&self, port: u16) -> redis::RedisResult<redis::Connection> {
        let certs = redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(std::fs::read(&self.files.ca)?),
        };
        let url = format!("rediss://127.0.0.1:{port}");
        let client = redis::Client::build_with_tls(url, certs)?;
        let con = client.get_connection_with_timeout(Duration::from_secs(5))?;
        con.set_read_timeout(Some(Duration::from_secs(5)))?;
        Ok(con)
    }

    pub fn urls(&self) -> String {
        let urls: Vec<String> = self
            .ports
            .iter()
            .map(|p| format!("rediss://127.0.0.1:{p}"))
            .collect();
        urls.join(",")
    }
}
