//! The one accept loop of every Eddy port (S3, Kafka, HTTP). It caps the connections a
//! listener holds open (a connection over the cap is accepted and closed at once, counted,
//! and logged at most once per interval, so a flood neither grows the process nor fills
//! the log), backs off when accepting fails for want of resources (EMFILE and friends,
//! which would otherwise spin), and on shutdown stops accepting, closes its socket and
//! waits for the connections it started, each of which watches the same shutdown
//! signal. [`tls`] holds the TLS configuration of listeners given a certificate.

pub mod principal;
pub mod tls;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// How many connections a listener keeps open at most, by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// How long a connection may sit without a request before it is closed, by default
/// (Kafka's `connections.max.idle.ms`).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(600);

/// Longest wait between accepts after resource errors.
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// Refused connections are logged at most this often.
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// A listener's limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once; more are closed as they are accepted.
    pub max_connections: usize,
    /// Idle time after which a connection is closed (enforced by each protocol's
    /// connection loop, which knows what idle means).
    pub idle_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        }
    }
}

/// Labels of the listener metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ListenerLabels {
    /// `s3`, `kafka` or `http`.
    pub listener: String,
}

/// What the accept loops count, by listener.
#[derive(Clone, Default)]
pub struct ListenerMetrics {
    /// Connections open now.
    pub open: Family<ListenerLabels, Gauge>,
    /// Connections accepted and served.
    pub accepted: Family<ListenerLabels, Counter>,
    /// Connections closed at once because the listener was at its cap.
    pub refused: Family<ListenerLabels, Counter>,
    /// Failed accepts.
    pub accept_errors: Family<ListenerLabels, Counter>,
    /// TLS handshakes completed.
    pub tls_handshakes: Family<ListenerLabels, Counter>,
    /// TLS handshakes that failed (bad or missing client certificate, wrong protocol,
    /// timeout).
    pub tls_failures: Family<ListenerLabels, Counter>,
}

impl ListenerMetrics {
    /// Registers them (as `listener_*`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "listener_connections",
            "Connections open, by listener",
            self.open.clone(),
        );
        registry.register(
            "listener_accepted",
            "Connections accepted, by listener",
            self.accepted.clone(),
        );
        registry.register(
            "listener_refused",
            "Connections closed on accept because the listener was at its connection cap",
            self.refused.clone(),
        );
        registry.register(
            "listener_accept_errors",
            "Failed accepts, by listener",
            self.accept_errors.clone(),
        );
        registry.register(
            "listener_tls_handshakes",
            "TLS handshakes completed, by listener",
            self.tls_handshakes.clone(),
        );
        registry.register(
            "listener_tls_handshake_failures",
            "TLS handshakes that failed, by listener",
            self.tls_failures.clone(),
        );
    }
}

/// Whether an accept error means the process is short of a resource (retrying at once
/// would spin), rather than one connection having gone away.
fn is_resource_error(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// Accepts connections on `listener` until `shutdown` flips, handing each one under the
/// cap to `serve` (whose future should finish soon after `shutdown` flips); then closes
/// the listening socket, calls `on_stop` and waits for every connection's future.
pub async fn serve<F, Fut>(
    name: &'static str,
    listener: TcpListener,
    limits: Limits,
    metrics: ListenerMetrics,
    mut shutdown: watch::Receiver<bool>,
    mut serve: F,
    on_stop: impl FnOnce(),
) where
    F: FnMut(TcpStream, SocketAddr) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let labels = ListenerLabels {
        listener: name.into(),
    };
    let (open, accepted, refused, accept_errors) = (
        metrics.open.get_or_create(&labels).clone(),
        metrics.accepted.get_or_create(&labels).clone(),
        metrics.refused.get_or_create(&labels).clone(),
        metrics.accept_errors.get_or_create(&labels).clone(),
    );
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut connections = JoinSet::new();
    let mut backoff = Duration::ZERO;
    let mut refusals = Refusals::default();
    loop {
        tokio::select! {
            got = listener.accept() => match got {
                Ok((sock, peer)) => {
                    backoff = Duration::ZERO;
                    let Ok(slot) = slots.clone().try_acquire_owned() else {
                        drop(sock);
                        refused.inc();
                        refusals.note(name, limits.max_connections);
                        continue;
                    };
                    accepted.inc();
                    open.inc();
                    let open = open.clone();
                    // Every line a connection logs names its listener and client.
                    let span = tracing::info_span!("connection", listener = name, peer = %peer);
                    let conn = tracing::Instrument::instrument(serve(sock, peer), span);
                    connections.spawn(async move {
                        conn.await;
                        open.dec();
                        drop(slot);
                    });
                }
                Err(e) => {
                    accept_errors.inc();
                    if is_resource_error(&e) {
                        backoff = (backoff * 2).clamp(Duration::from_millis(10), MAX_BACKOFF);
                        tracing::warn!(listener = name, error = %e, backoff_ms = backoff.as_millis() as u64, "accept failed; backing off");
                        tokio::select! {
                            _ = tokio::time::sleep(backoff) => {}
                            _ = shutdown.changed() => break,
                        }
                    } else {
                        tracing::debug!(listener = name, error = %e, "accept failed");
                    }
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = shutdown.changed() => break,
        }
    }
    // Closed before the connections finish, which can take as long as their slowest
    // request: a cluster node that lost an address kept it bound meanwhile, so the node
    // that took it over could not bind it, and new clients sat unanswered in a backlog
    // nobody accepted from (a three-node cluster stopped answering for ~30 s after a
    // PostgreSQL restart under load, 2026-12-07), then were all reset at once.
    drop(listener);
    on_stop();
    while connections.join_next().await.is_some() {}
}

/// Rate-limits the log line for refused connections.
#[derive(Default)]
struct Refusals {
    last_log: Option<Instant>,
    since_log: u64,
}

impl Refusals {
    fn note(&mut self, name: &str, cap: usize) {
        self.since_log += 1;
        if self
            .last_log
            .is_none_or(|t| t.elapsed() >= REFUSAL_LOG_INTERVAL)
        {
            tracing::warn!(
                listener = name,
                cap,
                refused = self.since_log,
                "connection cap reached; closing new connections"
            );
            self.last_log = Some(Instant::now());
            self.since_log = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn connections_over_the_cap_are_closed_and_counted_and_the_rest_served() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let metrics = ListenerMetrics::default();
        let (stop_tx, stop) = watch::channel(false);
        let limits = Limits {
            max_connections: 2,
            ..Limits::default()
        };
        let conn_stop = stop.clone();
        let server = tokio::spawn(serve(
            "test",
            l,
            limits,
            metrics.clone(),
            stop,
            move |mut s, _| {
                let mut stop = conn_stop.clone();
                async move {
                    // Echo one byte at a time until shutdown or EOF.
                    let mut b = [0u8; 1];
                    loop {
                        tokio::select! {
                            r = s.read(&mut b) => match r {
                                Ok(1) => { let _ = s.write_all(&b).await; }
                                _ => return,
                            },
                            _ = stop.changed() => return,
                        }
                    }
                }
            },
            || {},
        ));
        let mut a = TcpStream::connect(addr).await.unwrap();
        let mut b = TcpStream::connect(addr).await.unwrap();
        for s in [&mut a, &mut b] {
            s.write_all(b"x").await.unwrap();
            let mut got = [0u8; 1];
            s.read_exact(&mut got).await.unwrap();
        }
        // The third is closed without a byte.
        let mut c = TcpStream::connect(addr).await.unwrap();
        let mut got = [0u8; 1];
        assert_eq!(c.read(&mut got).await.unwrap_or(0), 0);
        let labels = ListenerLabels {
            listener: "test".into(),
        };
        assert_eq!(metrics.refused.get_or_create(&labels).get(), 1);
        assert_eq!(metrics.open.get_or_create(&labels).get(), 2);
        // A slot freed is a slot for the next client.
        drop(a);
        let deadline = Instant::now() + Duration::from_secs(5);
        while metrics.open.get_or_create(&labels).get() != 1 {
            assert!(Instant::now() < deadline);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut d = TcpStream::connect(addr).await.unwrap();
        d.write_all(b"y").await.unwrap();
        d.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"y");
        stop_tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), server)
            .await
            .unwrap()
            .unwrap();
    }

    #[tokio::test]
    async fn a_stopped_listener_frees_its_address_while_its_connections_finish() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let (stop_tx, stop) = watch::channel(false);
        let (finish_tx, finish) = watch::channel(false);
        // A connection busy with a request that outlives the shutdown: it ends only
        // when told.
        let server = tokio::spawn(serve(
            "test",
            l,
            Limits::default(),
            ListenerMetrics::default(),
            stop,
            move |mut s, _| {
                let mut finish = finish.clone();
                async move {
                    let _ = s.write_all(b"h").await;
                    let _ = finish.wait_for(|f| *f).await;
                }
            },
            || {},
        ));
        let mut c = TcpStream::connect(addr).await.unwrap();
        let mut got = [0u8; 1];
        c.read_exact(&mut got).await.unwrap();
        stop_tx.send(true).unwrap();
        // The address can be bound again (by the node taking it over) while the old
        // connection is still being served.
        let deadline = Instant::now() + Duration::from_secs(5);
        let again = loop {
            match TcpListener::bind(addr).await {
                Ok(again) => break again,
                Err(e) => {
                    assert!(Instant::now() < deadline, "still bound: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        };
        assert!(!server.is_finished(), "the busy connection was cut short");
        let fresh = TcpStream::connect(addr).await.unwrap();
        let (_accepted, peer) = again.accept().await.unwrap();
        assert_eq!(peer, fresh.local_addr().unwrap());
        finish_tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), server)
            .await
            .unwrap()
            .unwrap();
    }
}
