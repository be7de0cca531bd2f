//! localstripe (a Stripe stand-in in Python) on a free loopback port, killed on drop.
//! Its own CLI binds every interface, so it is started from Python bound to 127.0.0.1.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running localstripe.
pub struct LocalStripe {
    pub base: String,
    child: Child,
}

impl LocalStripe {
    /// Starts localstripe, installing it first (scripts/test-payments-setup.sh) if
    /// missing; returns once it accepts connections.
    pub fn start() -> LocalStripe {
        let setup = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scripts/test-payments-setup.sh"
        );
        let ok = Command::new("sh").arg(setup).status().expect("sh runs");
        assert!(ok.success(), "localstripe could not be installed");
        // Python binds the port itself and says which: a port picked here and handed over
        // could be taken meanwhile by another test's server, which would then answer
        // this test's calls until it stopped.
        let code = "import socket; from aiohttp import web; import localstripe.server as s; \
             sock = socket.socket(); sock.bind(('127.0.0.1', 0)); \
             print(sock.getsockname()[1], flush=True); \
             web.run_app(s.app, sock=sock, print=None)";
        let mut child = Command::new("python3")
            .args(["-c", code])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 starts");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("a piped stdout");
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
            .expect("localstripe says its port");
        let port: u16 = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("localstripe did not say its port: {line:?}"));
        wait_for_port(port);
        LocalStripe {
            base: format!("http://127.0.0.1:{port}"),
            child,
        }
    }
}

fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "localstripe did not accept connections on port {port} within 20 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for LocalStripe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
