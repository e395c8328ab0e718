//! The PostgreSQL catalog: the same tables, rules and reads as the embedded one
//! ([`crate::kv`]), kept in one PostgreSQL table, so several Eddy nodes can share one
//! catalog over shared drives (issue 19). What it needs from PostgreSQL:
//!
//! - `SERIALIZABLE` transactions: a group commit checks and applies its transactions in
//!   one, so two nodes' conflicting changes (one bucket created twice, one offset
//!   assigned twice) cannot both commit; the loser runs again (`committer.rs`);
//! - `REPEATABLE READ` read-only transactions for reads that must agree;
//! - `bytea` keys compared byte by byte (PostgreSQL's `bytea` ordering), `UNNEST` of
//!   arrays and `INSERT .. ON CONFLICT`.
//!
//! Every row is `(t text, k bytea, v bytea)`: table name, key and value exactly as the
//! embedded store holds them, in the catalog's record format (`eddy_meta.format`).
//! Batch bytes are not in PostgreSQL: each node appends them to its own log on the
//! shared drives ([`logs`]) before the transaction that indexes them commits.

mod committer;
pub mod leases;
pub mod liveness;
pub mod logs;
pub mod notify;
mod pool;
mod read;
mod statements;
mod write;

use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;

use storage::{BlobStore, DriveSet, DriveSetConfig, Wal, WalConfig};
use tokio::sync::oneshot;
use tokio_postgres::{Client, IsolationLevel, NoTls};

use crate::error::{CatalogError, CatalogResult};
use crate::metrics::CatalogMetrics;
use crate::txn::Transaction;
use crate::{Catalog, CommitFuture, format, kv, wakeups};

use committer::{Msg, PgCommitter};

/// The schema, created when missing.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS eddy_meta (name text PRIMARY KEY, value bigint NOT NULL);
CREATE TABLE IF NOT EXISTS eddy_kv (
    t text NOT NULL,
    k bytea NOT NULL,
    v bytea NOT NULL,
    PRIMARY KEY (t, k)
);
CREATE TABLE IF NOT EXISTS eddy_nodes (name text PRIMARY KEY, number integer UNIQUE NOT NULL);
";

/// Connections in the read pool.
const READ_POOL: usize = 16;

/// How to open a [`PgCatalog`].
#[derive(Debug, Clone)]
pub struct PgConfig {
    /// `postgres://user:password@host:port/database`.
    pub url: String,
    /// This node's name; its number (and log directory) is kept in PostgreSQL.
    pub node: String,
    /// The drives, the same on every node.
    pub drives: DriveSetConfig,
    /// Log tuning for this node's batch log.
    pub wal: WalConfig,
    /// Bytes per shard in a full blob stripe.
    pub shard_size: usize,
    /// Shortest time between two trims of this node's log (segments no batch
    /// references are deleted).
    pub trim_interval: std::time::Duration,
    /// How long PostgreSQL lets the committer's transaction sit idle before it ends the
    /// session (`idle_in_transaction_session_timeout`). A node stopped mid-commit (a
    /// SIGSTOP, a frozen VM) keeps its SERIALIZABLE transaction open, and while it is
    /// open the other nodes' commits can fail to serialize: with 2 s leases and no
    /// timeout, a 15 s SIGSTOP stopped every partition's acknowledgements for 6-10 s in
    /// 4 of 9 runs. The node's lease timeout: a node stalled that long has lost its
    /// addresses anyway.
    pub stalled_transaction_timeout: std::time::Duration,
}

impl PgConfig {
    /// Defaults for this database, node and drives.
    pub fn new(url: &str, node: &str, drives: DriveSetConfig) -> Self {
        Self {
            url: url.to_owned(),
            node: node.to_owned(),
            drives,
            wal: WalConfig::default(),
            shard_size: storage::blob::DEFAULT_SHARD_SIZE,
            trim_interval: std::time::Duration::from_secs(30),
            stalled_transaction_timeout: std::time::Duration::from_secs(6),
        }
    }
}

/// State shared between the committer and its callers.
pub(crate) struct Shared {
    pub metrics: CatalogMetrics,
    pub wakeups: Arc<wakeups::Wakeups>,
}

/// A catalog in PostgreSQL, one of several nodes'.
pub struct PgCatalog {
    /// This node's name.
    name: String,
    /// The address leases every commit of this node is made under, once a lease
    /// manager runs ([`PgCatalog::hold`]): none before.
    leases: std::sync::RwLock<Option<Vec<crate::txn::Lease>>>,
    read: read::PgRead,
    logs: logs::NodeLogs,
    blobs: BlobStore,
    node: u16,
    tx: Mutex<Option<mpsc::Sender<Msg>>>,
    shared: Arc<Shared>,
    committer: Mutex<Option<JoinHandle<()>>>,
    reaper: Mutex<Option<crate::reaper::Reaper>>,
    /// The task listening for other nodes' commits.
    listener: tokio::task::JoinHandle<()>,
    /// Whether this node holds its liveness lock, and the task holding it.
    liveness: Arc<liveness::Liveness>,
    liveness_holder: tokio::task::JoinHandle<()>,
}

/// The connection settings a catalog URL names.
fn parse_url(url: &str) -> CatalogResult<tokio_postgres::Config> {
    url.parse()
        .map_err(|e| CatalogError::Invalid(format!("catalog url: {e}")))
}

/// Checks that `url` is a PostgreSQL connection URL, without connecting: start-up checks
/// its flags before anything touches the drives. The error is PostgreSQL client's own,
/// which says what is wrong without repeating the URL (and its password).
pub fn check_url(url: &str) -> Result<(), tokio_postgres::Error> {
    url.parse::<tokio_postgres::Config>().map(drop)
}

/// Connects a client whose connection runs on `rt`.
async fn connect(url: &str) -> CatalogResult<Client> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "postgresql connection ended");
        }
    });
    Ok(client)
}

/// The key of the PostgreSQL advisory lock a node holds while it sets up (see
/// [`set_up`]): a fixed number, the same for every build, so nodes of different versions
/// exclude each other too ("eddy" and "setup" in ASCII).
const SET_UP_LOCK: i64 = 0x6564_6479_5345_5455;

/// Sets this node up, one node of the cluster at a time: creates or upgrades the schema,
/// checks the stored format, registers this node and opens the shared drives (formats
/// them, on the first start of all); returns its number and the drives.
///
/// Every step is made under one advisory lock. Compose and Kubernetes start all nodes at
/// the same moment: without the lock two nodes' `CREATE TABLE IF NOT EXISTS` both create
/// the table's type and one fails (`pg_type_typname_nsp_index`, 23505), and two nodes
/// formatting empty drives at once give them different set ids, or one sees another's
/// first drive formatted and the rest not yet ("5 of 6 drives are unavailable"). Every
/// schema step of every catalog version goes in [`SCHEMA`] and [`leases::SCHEMA`], run
/// here. The lock is the session's: it goes with the connection if the node dies.
async fn set_up(client: &mut Client, config: &PgConfig) -> CatalogResult<(u16, Arc<DriveSet>)> {
    client
        .batch_execute(&format!("SELECT pg_advisory_lock({SET_UP_LOCK})"))
        .await?;
    let outcome: CatalogResult<(u16, Arc<DriveSet>)> = async {
        client.batch_execute(SCHEMA).await?;
        client.batch_execute(leases::SCHEMA).await?;
        // A catalog of a newer format is refused before any drive is formatted.
        let node = register(client, &config.node).await?;
        let set = Arc::new(DriveSet::open(&config.drives)?);
        Ok((node, set))
    }
    .await;
    // On a failure the caller drops the connection, and the lock with it.
    let set_up = outcome?;
    client
        .batch_execute(&format!("SELECT pg_advisory_unlock({SET_UP_LOCK})"))
        .await?;
    Ok(set_up)
}

/// Warns about a server that can lose commits, checks the stored format and registers
/// this node; returns its number (given on first start).
async fn register(client: &mut Client, node: &str) -> CatalogResult<u16> {
    // Eddy acknowledges a write once PostgreSQL has committed its index: a server that
    // does not make commits durable can lose acknowledged writes when it crashes.
    for setting in ["fsync", "synchronous_commit"] {
        let value: String = client
            .query_one(&format!("SHOW {setting}"), &[])
            .await?
            .get(0);
        if value == "off" {
            tracing::warn!(
                setting,
                "PostgreSQL has {setting} off: acknowledged writes can be lost if it crashes"
            );
        }
    }
    for _ in 0..16 {
        let t = client
            .build_transaction()
            .isolation_level(IsolationLevel::Serializable)
            .start()
            .await?;
        let outcome: CatalogResult<u16> = async {
            t.execute(
                "INSERT INTO eddy_meta (name, value) VALUES ('format', $1) \
                 ON CONFLICT (name) DO NOTHING",
                &[&i64::from(format::RECORD_FORMAT)],
            )
            .await?;
            let stored: i64 = t
                .query_one("SELECT value FROM eddy_meta WHERE name = 'format'", &[])
                .await?
                .get(0);
            if stored > i64::from(format::RECORD_FORMAT) {
                return Err(CatalogError::Invalid(format!(
                    "the PostgreSQL catalog is format {stored}, but this build reads formats up to {}",
                    format::RECORD_FORMAT
                )));
            }
            t.execute(
                "INSERT INTO eddy_nodes (name, number) \
                 SELECT $1, COALESCE(MAX(number), 0) + 1 FROM eddy_nodes \
                 ON CONFLICT (name) DO NOTHING",
                &[&node],
            )
            .await?;
            let number: i32 = t
                .query_one("SELECT number FROM eddy_nodes WHERE name = $1", &[&node])
                .await?
                .get(0);
            u16::try_from(number)
                .map_err(|_| CatalogError::Invalid(format!("node number {number} is too large")))
        }
        .await;
        // SERIALIZABLE often refuses at COMMIT: the scan of `eddy_nodes` conflicts with
        // the other nodes' updates of their rows there (lease rounds, liveness). Not
        // retried, it failed a cluster's second node's start in CI (stop 64, 40001; this
        // is the only SERIALIZABLE transaction of opening the catalog).
        let outcome = match outcome {
            Ok(n) => t.commit().await.map(|()| n).map_err(CatalogError::from),
            Err(e) => Err(e),
        };
        match outcome {
            Ok(n) => return Ok(n),
            // Another node registered, or renewed its leases, at the same moment: again.
            Err(CatalogError::Conflict(_)) => continue,
            Err(CatalogError::Store(m)) if m.contains("duplicate key") => continue,
            Err(e) => return Err(e),
        }
    }
    Err(CatalogError::Conflict(
        "registering this node kept conflicting".into(),
    ))
}

impl PgCatalog {
    /// Connects, sets up ([`set_up`]: the schema, the shared drives, this node's number),
    /// opens its batch log on the shared drives and starts the committer. Call inside a
    /// tokio runtime: the one that runs the pool's connections, so a multi-thread one
    /// that stays responsive (not a seal's).
    pub async fn open(config: PgConfig) -> CatalogResult<Arc<Self>> {
        let pool_config = parse_url(&config.url)?;
        let mut client = connect(&config.url).await?;
        let (node, set) = set_up(&mut client, &config).await?;
        drop(client);
        let blobs = BlobStore::new(set.clone(), config.shard_size)?;
        let runtime = tokio::runtime::Handle::current();
        let pool = pool::on_runtime(pool_config, runtime.clone(), READ_POOL)?;
        let wal_config = storage::WalConfig {
            payload_format: format::RECORD_FORMAT,
            ..config.wal
        };
        // Nothing is replayed: PostgreSQL holds the index, and a record it does not
        // point at (a crash between the append and the commit) is never read.
        let log = Wal::open_in(set.clone(), &logs::dir_of(node), wal_config, 0, |_| Ok(()))?;
        let metrics = CatalogMetrics::default();
        let reaper =
            crate::reaper::Reaper::start(blobs.clone(), metrics.blob_deletes_pending.clone())?;
        let shared = Arc::new(Shared {
            metrics,
            wakeups: Default::default(),
        });
        // The committer's own sender: it goes with the thread, so the reaper ends once
        // both are done.
        let reaper_jobs = reaper.jobs.clone();
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let url = config.url.clone();
        let trim_every = config.trim_interval;
        let stalled = config.stalled_transaction_timeout;
        let node_name = config.node.clone();
        let thread_shared = shared.clone();
        let handle = std::thread::Builder::new()
            .name("catalog-pg-committer".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(CatalogError::Store(e.to_string())));
                        return;
                    }
                };
                let client = match rt.block_on(committer::connect(&url, &node_name, stalled)) {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                PgCommitter {
                    rt,
                    client,
                    statements: Default::default(),
                    log,
                    node,
                    name: node_name,
                    url,
                    rx,
                    reaper: reaper_jobs,
                    shared: thread_shared,
                    trimmed: std::time::Instant::now(),
                    trim_every,
                    stalled,
                }
                .run();
            })
            .map_err(|e| CatalogError::Store(format!("spawn committer: {e}")))?;
        ready_rx
            .recv()
            .map_err(|_| CatalogError::Store("the committer thread ended".into()))??;
        let listener = tokio::spawn(notify::listen(
            config.url.clone(),
            node,
            shared.wakeups.clone(),
        ));
        let alive = Arc::new(liveness::Liveness::default());
        let liveness_holder = tokio::spawn(liveness::hold(config.url.clone(), node, alive.clone()));
        tracing::info!(node = %config.node, number = node, "postgresql catalog open");
        Ok(Arc::new(Self {
            name: config.node.clone(),
            leases: std::sync::RwLock::new(None),
            read: read::PgRead::new(pool, runtime),
            logs: logs::NodeLogs::new(set),
            blobs,
            node,
            tx: Mutex::new(Some(tx)),
            shared,
            committer: Mutex::new(Some(handle)),
            reaper: Mutex::new(Some(reaper)),
            listener,
            liveness: alive,
            liveness_holder,
        }))
    }

    /// One round of this node's address leases ([`leases::round`]): what it holds after.
    pub async fn lease_round(
        &self,
        addresses: &[String],
        timeout: std::time::Duration,
    ) -> CatalogResult<leases::Held> {
        let mut client = self.read.client().await?;
        let trust = self.liveness.trusted(timeout);
        let conflicts = &self.shared.metrics.lease_conflicts;
        leases::round(
            &mut client,
            &self.name,
            addresses,
            timeout,
            trust,
            conflicts,
        )
        .await
    }

    /// Whether any of `addresses` can be taken now ([`leases::vacant`]): a lease round
    /// is due at once.
    pub async fn lease_vacant(
        &self,
        addresses: &[String],
        timeout: std::time::Duration,
    ) -> CatalogResult<bool> {
        let client = self.read.client().await?;
        let trust = self.liveness.trusted(timeout);
        leases::vacant(&client, &self.name, addresses, trust).await
    }

    /// From now on, every commit of this node is made under these leases (its whole
    /// holding, as the last lease round left it): one made after the node lost any of
    /// them, to a takeover or to their expiry, is refused whole. Called by the node's
    /// lease manager after each round.
    pub fn hold(&self, held: &leases::Held) {
        let leases = held
            .iter()
            .map(|(address, epoch)| crate::txn::Lease {
                address: address.clone(),
                epoch: *epoch,
            })
            .collect();
        *self.leases.write().unwrap_or_else(|p| p.into_inner()) = Some(leases);
    }

    /// The shared drives.
    pub fn drives(&self) -> &Arc<DriveSet> {
        self.blobs.drives()
    }

    /// This node's number in the cluster.
    pub fn node_number(&self) -> u16 {
        self.node
    }

    /// The commit path's metrics.
    pub fn metrics(&self) -> &CatalogMetrics {
        &self.shared.metrics
    }

    /// Finishes the commits already queued and stops the committer.
    pub fn shutdown(&self) {
        self.listener.abort();
        // Its connection closes, so the other nodes see this one gone at once.
        self.liveness_holder.abort();
        if let Some(tx) = self.tx.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = tx.send(Msg::Shutdown);
        }
        if let Some(h) = self
            .committer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            let _ = h.join();
        }
        if let Some(r) = self.reaper.lock().unwrap_or_else(|p| p.into_inner()).take() {
            drop(r.jobs);
            let _ = r.thread.join();
        }
    }
}

impl Drop for PgCatalog {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Catalog for PgCatalog {
    fn commit(&self, mut txn: Transaction) -> CommitFuture {
        if txn.leases.is_empty()
            && let Some(held) = &*self.leases.read().unwrap_or_else(|p| p.into_inner())
        {
            txn.leases = held.clone();
        }
        let (reply, rx) = oneshot::channel();
        let sent = {
            let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
            tx.as_ref().ok_or(CatalogError::Closed).and_then(|tx| {
                tx.send(Msg::Commit { txn, reply })
                    .map_err(|_| CatalogError::Closed)
            })
        };
        Box::pin(async move {
            sent?;
            rx.await.map_err(|_| CatalogError::Closed)?
        })
    }

    fn watch_partitions(&self, partitions: &[wakeups::PartitionId]) -> wakeups::PartitionWaiter {
        self.shared.wakeups.watch(partitions)
    }

    fn partition_generations(&self, partitions: &[wakeups::PartitionId]) -> Vec<u64> {
        self.shared.wakeups.generations(partitions)
    }

    fn blobs(&self) -> &BlobStore {
        &self.blobs
    }

    fn kv(&self) -> &dyn kv::KvRead {
        &self.read
    }

    fn log(&self) -> &dyn crate::read::BatchLog {
        &self.logs
    }
}
