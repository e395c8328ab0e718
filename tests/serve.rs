//! `eddy serve` as a process: starts on free ports with a fresh data dir, answers
//! `/health` and `/metrics`, reports the default credentials, runs degraded with drives
//! missing, refuses to start with too many missing, and stops cleanly on SIGTERM.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::free_port;

struct Server {
    child: Child,
    http: u16,
    s3: u16,
    kafka: u16,
    stdout: Vec<String>,
}

fn start(dir: &Path) -> Server {
    let (http, s3, kafka) = (free_port(), free_port(), free_port());
    let mut child = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .arg("serve")
        .arg("--data-dir")
        .arg(dir)
        .args(["--http-listen", &format!("127.0.0.1:{http}")])
        .args(["--s3-listen", &format!("127.0.0.1:{s3}")])
        .args(["--kafka-listen", &format!("127.0.0.1:{kafka}")])
        .env_remove("EDDY_ACCESS_KEY")
        .env_remove("EDDY_SECRET_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stdout = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let ready = line.starts_with("eddy ready:");
        stdout.push(line);
        if ready {
            break;
        }
    }
    assert!(
        stdout.last().is_some_and(|l| l.starts_with("eddy ready:")),
        "server did not start: {stdout:?}"
    );
    Server {
        child,
        http,
        s3,
        kafka,
        stdout,
    }
}

fn get(port: u16, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text[9..12].parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn stop(mut server: Server) {
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            assert!(status.success(), "exit status {status}");
            return;
        }
        assert!(Instant::now() < deadline, "server ignored SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn serves_health_and_metrics_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    assert!(
        server
            .stdout
            .iter()
            .any(|l| l.contains("eddyadmin / eddyadmin")),
        "default credentials not printed: {:?}",
        server.stdout
    );
    let (status, body) = get(server.http, "/health");
    assert_eq!(status, 200);
    let health: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(health["status"], "ok");
    assert_eq!(health["drives"].as_array().unwrap().len(), 6);

    let (status, metrics) = get(server.http, "/metrics");
    assert_eq!(status, 200);
    for name in [
        "eddy_drive_online{",
        "eddy_catalog_group_commits_total",
        "eddy_catalog_commit_seconds_bucket",
        "eddy_http_requests_total{listener=\"http\",status=\"200\"}",
    ] {
        assert!(metrics.contains(name), "{name} missing from:\n{metrics}");
    }
    // At first start the broker bucket is created, the administrator becomes a user of
    // the directory, and the audit trail's topic is made: three commits.
    assert!(
        metrics.contains("eddy_catalog_transactions_total 3"),
        "{metrics}"
    );

    // The S3 API refuses anonymous requests with S3 XML, and counts them.
    let (status, body) = get(server.s3, "/some-bucket/key");
    assert_eq!(status, 403);
    assert!(body.contains("<Code>AccessDenied</Code>"), "{body}");
    let (_, metrics) = get(server.http, "/metrics");
    assert!(
        metrics.contains("eddy_http_requests_total{listener=\"s3\",status=\"403\"} 1"),
        "{metrics}"
    );
    assert_eq!(get(server.http, "/nope").0, 404);
    TcpStream::connect(("127.0.0.1", server.kafka)).unwrap();
    stop(server);

    // Restart: nothing new to create.
    let server = start(dir.path());
    let (_, metrics) = get(server.http, "/metrics");
    assert!(
        metrics.contains("eddy_catalog_transactions_total 0"),
        "{metrics}"
    );
    stop(server);
}

#[test]
fn runs_degraded_within_m_and_refuses_beyond() {
    let dir = tempfile::tempdir().unwrap();
    stop(start(dir.path()));
    std::fs::remove_dir_all(dir.path().join("drive-0")).unwrap();
    std::fs::remove_dir_all(dir.path().join("drive-3")).unwrap();
    let server = start(dir.path());
    let (status, body) = get(server.http, "/health");
    assert_eq!(status, 200);
    let health: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(health["status"], "degraded");
    assert_eq!(health["drives_offline"], 2);
    let (_, metrics) = get(server.http, "/metrics");
    assert!(
        metrics.contains("eddy_drive_online{drive=\"0\""),
        "{metrics}"
    );
    stop(server);

    std::fs::remove_dir_all(dir.path().join("drive-5")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .arg("serve")
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--http-listen", &format!("127.0.0.1:{}", free_port())])
        .args(["--s3-listen", &format!("127.0.0.1:{}", free_port())])
        .args(["--kafka-listen", &format!("127.0.0.1:{}", free_port())])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("3 of 6 drives are unavailable; at most 2 may be"),
        "{err}"
    );
}
