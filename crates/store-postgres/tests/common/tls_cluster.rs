//! A throw-away PostgreSQL cluster with `ssl=on`, made by the test with the server
//! binaries of `pg_config --bindir`: a certificate from a CA the test made, listening
//! only on 127.0.0.1 on a free port (its unix socket in its own directory), and
//! accepting TCP connections only over TLS (`hostssl`). As root (CI) the binaries run
//! as the `postgres` OS user, which owns the directory. Stopped and removed on drop,
//! also when a test fails. Missing binaries fail the test, never skip it.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use boxoffice_testkit::tls::{TestCa, TlsFiles};

pub struct TlsPostgres {
    pub port: u16,
    pub files: TlsFiles,
    bindir: PathBuf,
    data: PathBuf,
    _dir: tempfile::TempDir,
}

fn bindir() -> PathBuf {
    let out = Command::new("pg_config").arg("--bindir").output();
    match out {
        Ok(o) if o.status.success() => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
        _ => panic!(
            "the PostgreSQL server binaries are required for this test (pg_config --bindir \
             must name the directory of initdb and pg_ctl; Debian: postgresql)"
        ),
    }
}

/// Root runs the server binaries as `postgres` (PostgreSQL refuses to run as root).
pub fn as_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// uid and gid of the `postgres` OS user, from /etc/passwd.
pub fn postgres_user() -> (u32, u32) {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let line = passwd.lines().find(|l| l.starts_with("postgres:"));
    let fields: Vec<&str> = line.map(|l| l.split(':').collect()).unwrap_or_default();
    match (
        fields.get(2).map(|s| s.parse()),
        fields.get(3).map(|s| s.parse()),
    ) {
        (Some(Ok(uid)), Some(Ok(gid))) => (uid, gid),
        _ => panic!("running as root, this test needs the `postgres` OS user to run PostgreSQL"),
    }
}

/// A server binary, run as `postgres` when this process is root.
fn command(bindir: &Path, program: &str) -> Command {
    let binary = bindir.join(program);
    if !as_root() {
        return Command::new(binary);
    }
    let mut c = Command::new("runuser");
    c.args(["-u", "postgres", "--"]).arg(binary);
    c
}

fn run(bindir: &Path, program: &str, args: &[&str]) -> Output {
    let out = command(bindir, program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} could not run: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Hands `path` to the `postgres` user when running as root.
pub fn give(path: &Path, mode: u32) {
    if as_root() {
        let (uid, gid) = postgres_user();
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

impl TlsPostgres {
    pub fn start(ca: &TestCa) -> TlsPostgres {
        let bindir = bindir();
        let dir = tempfile::tempdir().unwrap();
        give(dir.path(), 0o700);
        let files = ca.write_files(dir.path());
        for (file, mode) in [
            (&files.ca, 0o644),
            (&files.cert, 0o644),
            (&files.key, 0o600),
        ] {
            give(file, mode);
        }
        let data = dir.path().join("data");
        let data_arg = data.to_str().unwrap().to_owned();
        let data_arg = data_arg.as_str();
        run(
            &bindir,
            "initdb",
            &["-D", data_arg, "-A", "trust", "-U", "postgres", "-N"],
        );
        // TCP only over TLS; the unix socket stays open for pg_ctl.
        let hba = "local all all trust\nhostssl all all 127.0.0.1/32 trust\n";
        std::fs::write(data.join("pg_hba.conf"), hba).unwrap();
        let port = free_port();
        let options = format!(
            "-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={} \
             -c ssl=on -c ssl_cert_file={} -c ssl_key_file={} -c fsync=off",
            dir.path().display(),
            files.cert.display(),
            files.key.display()
        );
        let log = dir.path().join("server.log");
        let pg = TlsPostgres {
            port,
            files,
            bindir,
            data,
            _dir: dir,
        };
        let start = [
            "-D",
            data_arg,
            "-l",
            log.to_str().unwrap(),
            "-w",
            "-t",
            "30",
            "start",
        ];
        run(
            &pg.bindir,
            "pg_ctl",
            &[&start[..], &["-o", &options]].concat(),
        );
        pg
    }

    /// A URL of the `postgres` database with these query parameters.
    pub fn url(&self, query: &str) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres?{query}",
            self.port
        )
    }
}

impl Drop for TlsPostgres {
    fn drop(&mut self) {
        let data = self.data.to_str().unwrap_or_default();
        let stop = ["-D", data, "-m", "immediate", "-w", "stop"];
        let _ = command(&self.bindir, "pg_ctl").args(stop).output();
    }
}
