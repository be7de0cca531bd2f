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
        let port = super::free_port();
        let code = format!(
            "from aiohttp import web; import localstripe.server as s; \
             web.run_app(s.app, host='127.0.0.1', port={port}, print=None)"
        );
        let child = Command::new("python3")
            .args(["-c", &code])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 starts");
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
