//! Shared by the Rust end-to-end tests: start the real `eddy` binary on free ports and
//! speak raw Kafka requests to it with the kafka-protocol codec.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// A free loopback port, below the kernel's ephemeral range where it can: a port the
/// kernel hands out (`bind(0)`) is also the source port of the next outgoing connection
/// of any test, which can take it before our server binds it.
pub fn free_port() -> u16 {
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(0);
    if low > 12_000 {
        loop {
            let port = rand::random_range(10_000..low);
            if TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return port;
            }
        }
    }
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running server.
pub struct Server {
    /// The process.
    pub child: Child,
    /// Its Kafka port.
    pub kafka: u16,
    /// Its HTTP port (metrics).
    pub http: u16,
}

impl Server {
    /// Starts `eddy serve` on `dir` with Kafka listeners `hosts` (all on `kafka`) and
    /// waits until it is ready.
    pub fn start(dir: &Path, kafka: u16, hosts: &[&str], extra: &[&str]) -> Server {
        let http = free_port();
        let listen: Vec<String> = hosts.iter().map(|h| format!("{h}:{kafka}")).collect();
        let mut child = Command::new(env!("CARGO_BIN_EXE_eddy"))
            .arg("serve")
            .arg("--data-dir")
            .arg(dir)
            .args(["--kafka-listen", &listen.join(",")])
            .args(["--s3-listen", &format!("127.0.0.1:{}", free_port())])
            .args(["--http-listen", &format!("127.0.0.1:{http}")])
            .args(extra)
            .env("EDDY_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        let mut seen = Vec::new();
        let mut byte = [0u8; 1];
        while !String::from_utf8_lossy(&seen).contains("eddy ready:") {
            if out.read(&mut byte).unwrap() != 1 {
                let mut why = String::new();
                let _ = err.read_to_string(&mut why);
                panic!("eddy exited before ready: {why}");
            }
            seen.push(byte[0]);
        }
        // Keep draining its log so a chatty server never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        Server { child, kafka, http }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops it with SIGKILL.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends one request and returns the response body (after its header).
pub fn call<R: Encodable>(
    s: &mut TcpStream,
    key: ApiKey,
    version: i16,
    req: &R,
) -> std::io::Result<Bytes> {
    let mut buf = BytesMut::new();
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("eddy-test")));
    header
        .encode(&mut buf, key.request_header_version(version))
        .unwrap();
    req.encode(&mut buf, version).unwrap();
    // One write per request: a split write waits on delayed ACKs (Nagle).
    let mut frame = (buf.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&buf);
    s.write_all(&frame)?;
    let mut size = [0u8; 4];
    s.read_exact(&mut size)?;
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    s.read_exact(&mut body)?;
    let mut body = Bytes::from(body);
    ResponseHeader::decode(&mut body, key.response_header_version(version)).unwrap();
    Ok(body)
}

/// Sends one request and decodes its response.
pub fn roundtrip<R: Encodable, S: Decodable>(
    s: &mut TcpStream,
    key: ApiKey,
    version: i16,
    req: &R,
) -> S {
    let mut body = call(s, key, version, req).unwrap();
    S::decode(&mut body, version).unwrap()
}
