//! A throwaway PostgreSQL server for tests (Debian's `/usr/lib/postgresql/15/bin`, or
//! `EDDY_PG_BIN`): initdb into a temporary directory, a free loopback port, stopped and
//! removed when dropped. As root, the server runs as user `postgres` (initdb and
//! postgres refuse to run as root).

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running server.
pub struct Postgres {
    child: Child,
    _dir: tempfile::TempDir,
    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub url: String,
}

fn bin() -> PathBuf {
    PathBuf::from(std::env::var("EDDY_PG_BIN").unwrap_or("/usr/lib/postgresql/15/bin".into()))
}

/// The uid and gid of user `name`, from /etc/passwd.
fn user(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.first() == Some(&name))
            .then(|| Some((f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?)))?
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Whether PostgreSQL is installed; when not, a test that needs it fails if
/// `EDDY_REQUIRE_PG` is set (as the README's test command sets it) and is skipped
/// otherwise.
pub fn available() -> bool {
    let here = bin().join("postgres").exists();
    if !here && std::env::var_os("EDDY_REQUIRE_PG").is_some() {
        panic!("PostgreSQL is not installed at {}", bin().display());
    }
    here
}

impl Postgres {
    /// Starts a server and waits until it takes connections.
    pub async fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("eddy-pg-")
            .tempdir()
            .unwrap();
        let as_user = (euid() == 0).then(|| user("postgres").expect("user postgres"));
        let run = |cmd: &mut Command| {
            if let Some((uid, gid)) = as_user {
                cmd.uid(uid).gid(gid);
            }
            cmd.current_dir(dir.path());
        };
        if let Some((uid, gid)) = as_user {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
        }
        let data = dir.path().join("data");
        let mut initdb = Command::new(bin().join("initdb"));
        initdb
            .args([
                "-D",
                data.to_str().unwrap(),
                "-U",
                "postgres",
                "--auth=trust",
            ])
            .args(["--encoding=UTF8", "--locale=C"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        run(&mut initdb);
        assert!(initdb.status().unwrap().success(), "initdb failed");
        let port = free_port();
        let mut postgres = Command::new(bin().join("postgres"));
        postgres
            .args(["-D", data.to_str().unwrap()])
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args(["-c", &format!("port={port}")])
            .args([
                "-c",
                &format!("unix_socket_directories={}", dir.path().display()),
            ])
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        run(&mut postgres);
        let child = postgres.spawn().unwrap();
        let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .is_ok()
            {
                break;
            }
            assert!(Instant::now() < deadline, "postgres did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Self {
            child,
            _dir: dir,
            url,
        }
    }

    /// A new empty database on this server; its URL.
    pub async fn database(&self, name: &str) -> String {
        let (client, conn) = tokio_postgres::connect(&self.url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        let base = self
            .url
            .rsplit_once('/')
            .map_or(self.url.as_str(), |(b, _)| b);
        format!("{base}/{name}")
    }
}

fn euid() -> u32 {
    // /proc/self/status names the effective uid without a libc call.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2))
                .and_then(|u| u.parse().ok())
        })
        .unwrap_or(u32::MAX)
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
