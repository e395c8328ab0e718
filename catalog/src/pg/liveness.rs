//! A node's liveness as PostgreSQL sees it: the node holds a session-level advisory lock
//! keyed by its number on a connection of its own for as long as it runs. PostgreSQL
//! releases the lock as soon as that connection closes, which a killed process's does at
//! once, so the other nodes' lease rounds tell a dead node from one that is only slow
//! without waiting out its leases (`super::leases`). A paused or overloaded node keeps
//! its connection and its lock: only its leases' expiry moves its addresses.
//!
//! A freed lock proves a node dead only while every live node has had time to take its
//! lock again: a PostgreSQL restart frees them all at once. A node therefore trusts the
//! locks only once it has held its own for a whole lease timeout ([`Liveness::trusted`]).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio_postgres::NoTls;

/// The first key of every liveness lock ("eddy" in ASCII); the second is the node's
/// number. A fixed number, the same for every build.
pub const LOCK_CLASS: i32 = 0x6564_6479;

/// Whether this node holds its liveness lock now, and since when.
#[derive(Debug, Default)]
pub struct Liveness {
    held_since: Mutex<Option<Instant>>,
}

impl Liveness {
    fn set(&self, since: Option<Instant>) {
        *self.held_since.lock().unwrap_or_else(|p| p.into_inner()) = since;
    }

    /// Whether freed locks can be taken as dead nodes: this node has held its own for at
    /// least `timeout` without a break.
    pub fn trusted(&self, timeout: Duration) -> bool {
        self.held_since
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|t| t.elapsed() >= timeout)
    }
}

/// Holds node `number`'s liveness lock until the process ends, connecting again after a
/// lost connection. The lock may still be held by this node's previous run whose
/// connection PostgreSQL has not closed yet: it is tried again every second.
pub async fn hold(url: String, number: u16, liveness: std::sync::Arc<Liveness>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        match hold_once(&url, number, &liveness).await {
            Ok(()) => backoff = Duration::from_millis(100),
            Err(e) => tracing::warn!(error = %e, "holding this node's liveness lock failed"),
        }
        liveness.set(None);
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

async fn hold_once(
    url: &str,
    number: u16,
    liveness: &Liveness,
) -> Result<(), tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
    let mut connection = std::pin::pin!(connection);
    let key = i32::from(number);
    let lock_params: [&(dyn tokio_postgres::types::ToSql + Sync); 2] = [&LOCK_CLASS, &key];
    let key_param: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&key];
    loop {
        let took = tokio::select! {
            r = client.query_one("SELECT pg_try_advisory_lock($1, $2)", &lock_params) => r?,
            r = &mut connection => return r,
        };
        if took.get::<_, bool>(0) {
            break;
        }
        tracing::info!(
            number,
            "this node's liveness lock is still held (its previous run's connection?); trying again"
        );
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            r = &mut connection => return r,
        }
    }
    // Nodes of a build that held no lock are never taken for dead by their free one;
    // the time tells operators (and tests) since when this one has held it.
    tokio::select! {
        r = client.execute(
            "UPDATE eddy_nodes SET liveness_since = now() WHERE number = $1",
            &key_param,
        ) => { r?; }
        r = &mut connection => return r,
    }
    liveness.set(Some(Instant::now()));
    tracing::debug!(number, "holding this node's liveness lock");
    // The lock lasts as long as the connection, which is driven here until it ends.
    connection.await
}
