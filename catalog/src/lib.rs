//! Eddy's catalog: the one transactional metadata store. Buckets, objects and their
//! versions, topics, partitions with their batches, consumer groups and committed offsets
//! all change through [`Catalog::commit`], one transaction at a time.
//!
//! The [`Catalog`] trait is the seam between the front ends and a backend, implemented
//! once over [`Backend`]:
//! - [`EmbeddedCatalog`], the single-process one, group-commits to the erasure-coded
//!   write-ahead log and materializes the tables in an embedded store (redb);
//! - [`pg::PgCatalog`] keeps the same tables in PostgreSQL for a cluster of nodes over
//!   shared drives (docs/scale-out.md).
//!
//! Both check and apply every operation with the same rules ([`apply`]) and answer every
//! read with the same code ([`read`]), over the byte tables of [`kv`].

pub mod apply;
pub mod checkpoint;
mod committer;
pub mod domain;
pub mod error;
pub mod format;
pub mod kv;
pub mod metrics;
pub mod model;
pub mod orphans;
pub mod pg;
pub mod read;
mod reaper;
mod record;
mod store_open;
pub mod tables;
pub mod txn;
pub mod view;
pub mod wakeups;

use std::fs::File;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use redb::{Database, Durability};
use storage::{BlobStore, DriveSet, DriveSetConfig, Wal, WalConfig};
use tokio::sync::{oneshot, watch};

pub use domain::{ExpansionOp, GroupOp, IamOp, IcebergOp, KafkaOp, S3Op, TxnOp};
pub use error::{CatalogError, CatalogResult};
pub use metrics::CatalogMetrics;
pub use model::*;
pub use txn::{
    CommitOutcome, CompactedBatch, Lease, Op, OpOutcome, ProducerBatch, Transaction, TxnMarker,
};

use committer::{Committer, Msg, Shared};

/// A commit in flight; resolves once the transaction is durable and visible.
pub type CommitFuture = Pin<Box<dyn Future<Output = CatalogResult<CommitOutcome>> + Send>>;

/// The catalog's operations: the seam between the front ends and a backend (the
/// embedded store, or PostgreSQL for several nodes).
///
/// Contract every backend keeps:
/// - **Commit order.** [`Catalog::commit`] queues the transaction when it is *called*,
///   not when its future is first polled: two commits called one after the other from
///   one task are checked and applied in that order. The broker relies on this for a
///   connection's produce requests (their offsets follow the request order) and the S3
///   gateway for one key's event order.
/// - **Ack means durable.** A commit's future resolves `Ok` only once the transaction is
///   durable and visible to every reader of this catalog (on every node sharing it).
/// - **Committed reads.** Reads see committed state only, never a transaction in flight,
///   and a read that starts after a commit resolved sees it.
/// - **Reads are async** and may wait on the network (PostgreSQL): callers must not hold
///   a lock another task needs across them.
#[async_trait::async_trait]
pub trait Catalog: Send + Sync {
    /// Commits a transaction: all of its operations or none (see the ordering contract
    /// above: it is queued by this call).
    fn commit(&self, txn: Transaction) -> CommitFuture;
    /// Registers a long-polling reader on these partitions: it is woken by the commits
    /// that append to (or truncate) one of them, and only by those.
    fn watch_partitions(&self, partitions: &[wakeups::PartitionId]) -> wakeups::PartitionWaiter;
    /// The blob store that object data lives in.
    fn blobs(&self) -> &BlobStore;

    /// One bucket.
    async fn bucket(&self, name: &str) -> CatalogResult<Option<BucketRecord>>;
    /// Every bucket, by name.
    async fn buckets(&self) -> CatalogResult<Vec<BucketRecord>>;
    /// The current version of an object (none when deleted or behind a delete marker).
    async fn object(&self, bucket: &str, key: &str) -> CatalogResult<Option<ObjectVersion>>;
    /// One version of an object, delete markers included.
    async fn object_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: &str,
    ) -> CatalogResult<Option<ObjectVersion>>;
    /// Up to `limit` current objects whose keys start with `prefix` and sort after
    /// `start_after`, in byte order. Cost grows with `limit`, not with the bucket.
    async fn list_objects(
        &self,
        bucket: &str,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> CatalogResult<Vec<(String, ObjectVersion)>>;
    /// Up to `limit` versions (newest first within a key) of keys starting with `prefix`,
    /// from key `start_key` (inclusive) on.
    async fn list_versions(
        &self,
        bucket: &str,
        prefix: &str,
        start_key: Option<&str>,
        limit: usize,
    ) -> CatalogResult<Vec<(String, ObjectVersion)>>;

    /// One in-progress multipart upload.
    async fn upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> CatalogResult<Option<UploadRecord>>;
    /// Up to `limit` in-progress uploads of keys starting with `prefix`, ordered by key
    /// then upload id, strictly after `after` (a key marker, with an upload id marker or
    /// not: without one, every upload of that key is skipped).
    async fn list_uploads(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<(&str, Option<&str>)>,
        limit: usize,
    ) -> CatalogResult<Vec<UploadRecord>>;
    /// Up to `limit` parts of an upload numbered above `after`, in order.
    async fn parts(
        &self,
        upload_id: &str,
        after: u32,
        limit: usize,
    ) -> CatalogResult<Vec<PartRecord>>;

    /// One topic by name.
    async fn topic(&self, name: &str) -> CatalogResult<Option<TopicRecord>>;
    /// One topic by id.
    async fn topic_by_id(&self, id: u128) -> CatalogResult<Option<TopicRecord>>;
    /// Every topic, by name.
    async fn topics(&self) -> CatalogResult<Vec<TopicRecord>>;
    /// One partition's state.
    async fn partition(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<PartitionState>>;
    /// Where a topic's Iceberg table stands (none before its first snapshot).
    async fn topic_table(&self, topic: &str) -> CatalogResult<Option<TopicTable>>;
    /// Where log compaction stands in a partition (none before its first pass).
    async fn compaction(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<CompactionState>>;
    /// A topic's expansions, by source column.
    async fn expansions(&self, topic: &str) -> CatalogResult<Vec<(String, Expansion)>>;
    /// A table outside `kafka_topics`.
    async fn other_table(&self, namespace: &str, name: &str) -> CatalogResult<Option<TableRecord>>;
    /// Every table outside `kafka_topics`, as (namespace, name, record), in that order.
    async fn other_tables(&self) -> CatalogResult<Vec<(String, String, TableRecord)>>;
    /// The first offset of a partition that the topic's expansions have not read yet
    /// (none without an expansion): retention, DeleteRecords and compaction remove
    /// nothing from it on ([`model::expanded_to`]).
    async fn expanded_to(&self, topic: &TopicRecord, partition: u32) -> CatalogResult<Option<u64>> {
        let expansions = self.expansions(&topic.name).await?;
        if expansions.is_empty() {
            return Ok(None);
        }
        let table = self.topic_table(&topic.name).await?;
        Ok(model::expanded_to(
            &expansions,
            table.as_ref(),
            topic.id,
            partition,
        ))
    }
    /// Batches from the one holding `from_offset` on, until `max_bytes` is reached (at
    /// least one batch is returned when any exists).
    async fn read_batches(
        &self,
        topic_id: u128,
        partition: u32,
        from_offset: u64,
        max_bytes: usize,
    ) -> CatalogResult<Vec<StoredBatch>>;

    /// Offsets and timestamps of up to `limit` batches from the one holding
    /// `from_offset` on, without reading their bytes.
    async fn batch_index(
        &self,
        topic_id: u128,
        partition: u32,
        from_offset: u64,
        limit: usize,
    ) -> CatalogResult<Vec<BatchInfo>>;
    /// An idempotent producer's state on one partition.
    async fn producer_state(
        &self,
        producer_id: i64,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<ProducerState>>;

    /// A committed offset.
    async fn offset(
        &self,
        group: &str,
        topic: &str,
        partition: u32,
    ) -> CatalogResult<Option<OffsetRecord>>;
    /// Every committed offset of a group as (topic, partition, offset).
    async fn offsets(&self, group: &str) -> CatalogResult<Vec<(String, u32, OffsetRecord)>>;
    /// A group's stored state.
    async fn group(&self, name: &str) -> CatalogResult<Option<GroupRecord>>;
    /// Every stored group.
    async fn groups(&self) -> CatalogResult<Vec<GroupRecord>>;
    /// A transactional id's stored coordinator state.
    async fn txn(&self, id: &str) -> CatalogResult<Option<TxnRecord>>;
    /// Every transactional id's stored state.
    async fn txns(&self) -> CatalogResult<Vec<(String, TxnRecord)>>;
    /// Every entity's client quotas.
    async fn client_quotas(&self) -> CatalogResult<Vec<ClientQuotas>>;
    /// Every user, by name.
    async fn users(&self) -> CatalogResult<Vec<UserRecord>>;
    /// Every named identity policy, by name.
    async fn policies(&self) -> CatalogResult<Vec<PolicyRecord>>;
    /// Every bucket policy, by bucket.
    async fn bucket_policies(&self) -> CatalogResult<Vec<BucketPolicy>>;
    /// One of a bucket's sub-resource configurations.
    async fn bucket_config(
        &self,
        bucket: &str,
        kind: BucketConfigKind,
    ) -> CatalogResult<Option<BucketConfig>>;
    /// Every bucket's configuration of one kind.
    async fn bucket_configs(&self, kind: BucketConfigKind) -> CatalogResult<Vec<BucketConfig>>;
    /// A partition's open transactions.
    async fn txn_partition(&self, topic_id: u128, partition: u32) -> CatalogResult<TxnPartition>;
    /// A partition's state and its last stable offset (the first offset of its earliest
    /// open transaction, or its end), read together.
    async fn stable_partition(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<(PartitionState, u64)>>;
    /// The aborted transactions with records in `from..to` of a partition, oldest marker
    /// first: what a read_committed fetch of that range must drop.
    async fn aborted_txns(
        &self,
        topic_id: u128,
        partition: u32,
        from: u64,
        to: u64,
    ) -> CatalogResult<Vec<AbortedTxn>>;
    /// Whether an open transaction holds an offset of this group's partition.
    async fn has_pending_txn_offset(
        &self,
        group: &str,
        topic: &str,
        partition: u32,
    ) -> CatalogResult<bool>;
    /// Every idempotent producer's state on one partition, by producer id.
    async fn producers_of(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Vec<(i64, ProducerState)>>;
}

/// What a catalog backend provides: commits, wakeups, blobs, and the bytes of its tables
/// and logs. [`Catalog`] is implemented once over it, so every backend answers every read
/// with the same code ([`read`]) and checks and applies every commit with the same rules
/// ([`apply`]).
pub trait Backend: Send + Sync {
    /// Queues a transaction: [`Catalog::commit`], with its ordering contract.
    fn submit(&self, txn: Transaction) -> CommitFuture;
    /// [`Catalog::watch_partitions`].
    fn watch(&self, partitions: &[wakeups::PartitionId]) -> wakeups::PartitionWaiter;
    /// [`Catalog::blobs`].
    fn blob_store(&self) -> &BlobStore;
    /// Snapshots of committed state.
    fn kv(&self) -> &dyn kv::KvRead;
    /// Where stored batches' bytes are.
    fn log(&self) -> &dyn read::BatchLog;
}

/// How to open an [`EmbeddedCatalog`].
#[derive(Debug, Clone)]
pub struct CatalogConfig {
    /// The drives and the erasure code.
    pub drives: DriveSetConfig,
    /// Directory of the embedded store's file; default: `catalog/` on the first drive
    /// that is online.
    pub meta_dir: Option<PathBuf>,
    /// Log tuning.
    pub wal: WalConfig,
    /// Bytes per shard in a full blob stripe.
    pub shard_size: usize,
    /// Log bytes after which a checkpoint is written.
    pub checkpoint_bytes: u64,
    /// Longest time between checkpoints while anything changes.
    pub checkpoint_interval: Duration,
    /// Shortest time between checkpoints: each one competes with commits for the
    /// drives' fsyncs, so a fast log does not get one every second.
    pub checkpoint_min_gap: Duration,
}

impl CatalogConfig {
    /// Defaults for these drives.
    pub fn new(drives: DriveSetConfig) -> Self {
        Self {
            drives,
            meta_dir: None,
            wal: WalConfig::default(),
            shard_size: storage::blob::DEFAULT_SHARD_SIZE,
            checkpoint_bytes: 1 << 30,
            checkpoint_interval: Duration::from_secs(600),
            checkpoint_min_gap: Duration::from_secs(30),
        }
    }
}

/// The embedded, single-process catalog.
pub struct EmbeddedCatalog {
    db: Arc<Database>,
    kv: kv::RedbRead,
    log: storage::wal::WalReader,
    blobs: BlobStore,
    tx: Mutex<Option<mpsc::Sender<Msg>>>,
    shared: Arc<Shared>,
    committer: Mutex<Option<JoinHandle<()>>>,
    checkpointer: Mutex<Option<(mpsc::Sender<()>, JoinHandle<()>)>>,
    checkpoint_lock: Mutex<()>,
    /// The freed-blob deleter: its sender (for barriers) and thread, until shutdown.
    reaper: Mutex<Option<reaper::Reaper>>,
    /// Blobs on the drives at open (and the checkpoint blob the store was opened with),
    /// until [`EmbeddedCatalog::collect_orphans`] takes them.
    orphan_candidates: Mutex<Option<(Vec<storage::BlobId>, Option<storage::BlobId>)>>,
    _locks: Vec<File>,
}

impl EmbeddedCatalog {
    /// Opens (or creates) the catalog: opens the drives, restores the store from the
    /// newest checkpoint if its file is missing or behind, replays the log, and starts
    /// the committer and checkpointer threads.
    pub fn open(config: CatalogConfig) -> CatalogResult<Arc<Self>> {
        let set = Arc::new(DriveSet::open(&config.drives)?);
        let locks = set.lock()?;
        let store = BlobStore::new(set.clone(), config.shard_size)?;
        let meta_dir = match &config.meta_dir {
            Some(d) => d.clone(),
            None => set
                .drives()
                .iter()
                .find(|d| d.is_online())
                .map(|d| d.join("catalog"))
                .ok_or_else(|| CatalogError::Invalid("no drive is online".into()))?,
        };
        std::fs::create_dir_all(&meta_dir)
            .map_err(|e| storage::StorageError::io("create dir", &meta_dir, e))?;
        let path = meta_dir.join("catalog.redb");
        let ptr = checkpoint::pointer(&store)?;
        // Nothing is written before the formats are known to be readable: the store is
        // checked read-only, and opened for writing once the first record to replay has
        // decoded (which checks its format).
        let mut opening = store_open::Store::prepare(&path, &store, ptr.as_ref())?;
        let from = opening.from;
        let started = Instant::now();
        let mut replayed = 0u64;
        let wal_config = storage::WalConfig {
            payload_format: format::RECORD_FORMAT,
            ..config.wal
        };
        let wal = Wal::open(set.clone(), wal_config, from, |record| {
            let lsn = record.lsn;
            record::decode(lsn, record.format, record.payload)
                .and_then(|txns| replay(opening.writable()?, lsn, record.position, &txns))
                .map_err(|e| match e {
                    CatalogError::Storage(e @ storage::StorageError::Format { .. }) => e,
                    e => storage::StorageError::Log(format!("replay {lsn}: {e}")),
                })?;
            replayed += 1;
            Ok(())
        })?;
        let db = Arc::new(opening.open()?);
        store.remove_spare_leftovers()?;
        // Listed before this process can write a blob: see `orphans`.
        let preexisting = store.list()?;
        let blobs = store.with_spares()?;
        let mut w = db.begin_write()?;
        w.set_durability(Durability::Immediate)?;
        w.commit()?;
        let applied_lsn = checkpoint::applied_lsn(db.as_ref())?;
        tracing::info!(
            records = replayed,
            applied_lsn,
            seconds = started.elapsed().as_secs_f64(),
            "catalog recovered"
        );
        let (applied, _) = watch::channel(applied_lsn);
        let shared = Arc::new(Shared {
            applied,
            log_bytes_since_checkpoint: AtomicU64::new(0),
            last_checkpoint_bytes: AtomicU64::new(ptr.as_ref().map_or(0, |p| p.blob.len)),
            failed: AtomicBool::new(false),
            metrics: CatalogMetrics::default(),
            wakeups: Default::default(),
            queue_peak: Default::default(),
        });
        let log = wal.reader();
        let (tx, rx) = mpsc::channel();
        let reaper =
            reaper::Reaper::start(blobs.clone(), shared.metrics.blob_deletes_pending.clone())?;
        let committer = Committer {
            db: db.clone(),
            wal,
            reaper: reaper.jobs.clone(),
            rx,
            shared: shared.clone(),
        };
        let handle = std::thread::Builder::new()
            .name("catalog-committer".into())
            .spawn(move || committer.run())
            .map_err(|e| CatalogError::Store(format!("spawn committer: {e}")))?;
        let catalog = Arc::new(Self {
            kv: kv::RedbRead(db.clone()),
            db,
            log,
            blobs,
            tx: Mutex::new(Some(tx)),
            shared,
            committer: Mutex::new(Some(handle)),
            checkpointer: Mutex::new(None),
            checkpoint_lock: Mutex::new(()),
            reaper: Mutex::new(Some(reaper)),
            orphan_candidates: Mutex::new(Some((preexisting, ptr.map(|p| p.blob.id)))),
            _locks: locks,
        });
        catalog.start_checkpointer(
            config.checkpoint_bytes,
            config.checkpoint_interval,
            config.checkpoint_min_gap,
        )?;
        Ok(catalog)
    }

    fn start_checkpointer(
        self: &Arc<Self>,
        bytes: u64,
        interval: Duration,
        min_gap: Duration,
    ) -> CatalogResult<()> {
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let weak = Arc::downgrade(self);
        let handle = std::thread::Builder::new()
            .name("catalog-checkpointer".into())
            .spawn(move || {
                let mut last = Instant::now();
                let mut last_lsn = None;
                while let Err(mpsc::RecvTimeoutError::Timeout) =
                    stop_rx.recv_timeout(Duration::from_secs(1))
                {
                    let Some(cat) = weak.upgrade() else { break };
                    let lsn = *cat.shared.applied.borrow();
                    let threshold =
                        bytes.max(cat.shared.last_checkpoint_bytes.load(Ordering::Relaxed));
                    let logged = cat
                        .shared
                        .log_bytes_since_checkpoint
                        .load(Ordering::Relaxed);
                    let due = last.elapsed() >= min_gap
                        && (logged >= threshold
                            || (last.elapsed() >= interval && last_lsn != Some(lsn)));
                    if due {
                        match cat.checkpoint() {
                            Ok(_) => {
                                last = Instant::now();
                                last_lsn = Some(lsn);
                            }
                            Err(e) => tracing::error!(error = %e, "checkpoint failed"),
                        }
                    }
                }
            })
            .map_err(|e| CatalogError::Store(format!("spawn checkpointer: {e}")))?;
        *self.checkpointer.lock().unwrap_or_else(|p| p.into_inner()) = Some((stop_tx, handle));
        Ok(())
    }

    fn send(&self, msg: Msg) -> CatalogResult<()> {
        let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        tx.as_ref()
            .ok_or(CatalogError::Closed)?
            .send(msg)
            .map_err(|_| CatalogError::Closed)
    }

    /// Writes a checkpoint now and trims the log it covers; returns its LSN.
    pub fn checkpoint(&self) -> CatalogResult<u64> {
        let _one = self
            .checkpoint_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let pending = self
            .shared
            .log_bytes_since_checkpoint
            .load(Ordering::Relaxed);
        let (reply, rx) = mpsc::channel();
        self.send(Msg::Flush(reply))?;
        let durable = rx.recv().map_err(|_| CatalogError::Closed)??;
        let ptr = checkpoint::write(&self.db, &self.blobs)?;
        let (reply, rx) = mpsc::channel();
        self.send(Msg::TrimLog(durable.min(ptr.lsn) + 1, reply))?;
        match rx.recv().map_err(|_| CatalogError::Closed)? {
            Ok(n) if n > 0 => tracing::debug!(segments = n, "trimmed log"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "log trim failed"),
        }
        self.shared
            .log_bytes_since_checkpoint
            .fetch_sub(pending, Ordering::Relaxed);
        self.shared
            .last_checkpoint_bytes
            .store(ptr.blob.len, Ordering::Relaxed);
        self.shared.metrics.checkpoints.inc();
        Ok(ptr.lsn)
    }

    /// Removes the blobs that were on the drives when the catalog opened and that no
    /// record references: leftovers of a crash between writing a blob and committing
    /// (or freeing) it. Only the first call does anything; it can run while serving.
    pub async fn collect_orphans(&self) -> CatalogResult<orphans::OrphanReport> {
        let taken = self
            .orphan_candidates
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let Some((candidates, opened_with)) = taken else {
            return Ok(orphans::OrphanReport::default());
        };
        let candidates = candidates
            .into_iter()
            .filter(|id| Some(*id) != opened_with)
            .collect();
        let report = orphans::collect(&self.kv, &self.blobs, candidates).await?;
        self.shared
            .metrics
            .orphan_blobs_removed
            .inc_by(report.removed as u64);
        Ok(report)
    }

    /// The commit path's metrics.
    pub fn metrics(&self) -> &CatalogMetrics {
        &self.shared.metrics
    }

    /// The drives under the catalog.
    pub fn drives(&self) -> &Arc<DriveSet> {
        self.blobs.drives()
    }

    /// Whether a failed commit has stopped the catalog taking writes.
    pub fn is_failed(&self) -> bool {
        self.shared.failed.load(Ordering::SeqCst)
    }

    /// Finishes the commits already queued, makes the store durable and stops the
    /// threads. Commits submitted afterwards fail with [`CatalogError::Closed`].
    pub fn shutdown(&self) {
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
        if let Some((stop, h)) = self
            .checkpointer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            drop(stop);
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
        // The committer is gone with its sender: the reaper finishes the queue and ends.
        if let Some(r) = self.reaper.lock().unwrap_or_else(|p| p.into_inner()).take() {
            drop(r.jobs);
            let _ = r.thread.join();
        }
        self.blobs.release_spares();
    }

    /// Returns once every blob freed by the commits acknowledged before this call has
    /// been deleted (frees are deleted in the background, after the commit's answer).
    pub async fn freed_blobs_deleted(&self) -> CatalogResult<()> {
        // The committer hands a commit's freed blobs over after answering it, and before
        // taking the next: once this empty commit is answered they are queued.
        self.commit(Transaction::new(Vec::new())).await?;
        let (done, wait) = mpsc::channel();
        {
            let reaper = self.reaper.lock().unwrap_or_else(|p| p.into_inner());
            let r = reaper.as_ref().ok_or(CatalogError::Closed)?;
            r.jobs
                .send(reaper::Job::Barrier(done))
                .map_err(|_| CatalogError::Closed)?;
        }
        tokio::task::spawn_blocking(move || wait.recv())
            .await
            .map_err(|e| CatalogError::Store(format!("waiting for the blob reaper: {e}")))?
            .map_err(|_| CatalogError::Closed)
    }
}

impl Drop for EmbeddedCatalog {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Applies one log record during recovery.
fn replay(
    db: &Database,
    lsn: u64,
    position: storage::wal::LogPosition,
    txns: &[Transaction],
) -> CatalogResult<()> {
    let mut w = db.begin_write()?;
    w.set_durability(Durability::None)?;
    {
        let mut kv = kv::RedbWrite::new(&w);
        let mut t = apply::Tables::new(&mut kv);
        let mut effects = apply::Effects::default();
        let mut log = apply::LogCursor::new(position, false);
        for txn in txns {
            for op in &txn.ops {
                t.apply(op, &mut effects, &mut log)?;
            }
        }
        t.set_counter(tables::APPLIED_LSN, lsn)?;
    }
    w.commit()?;
    Ok(())
}

impl Backend for EmbeddedCatalog {
    fn submit(&self, txn: Transaction) -> CommitFuture {
        let (reply, rx) = oneshot::channel();
        let bytes = self.shared.queue_in(&txn);
        let sent = self.send(Msg::Commit {
            txn,
            bytes,
            reply,
            queued: Instant::now(),
        });
        if sent.is_err() {
            self.shared.queue_out(bytes);
        }
        Box::pin(async move {
            sent?;
            rx.await.map_err(|_| CatalogError::Closed)?
        })
    }

    fn watch(&self, partitions: &[wakeups::PartitionId]) -> wakeups::PartitionWaiter {
        self.shared.wakeups.watch(partitions)
    }

    fn blob_store(&self) -> &BlobStore {
        &self.blobs
    }

    fn kv(&self) -> &dyn kv::KvRead {
        &self.kv
    }

    fn log(&self) -> &dyn read::BatchLog {
        &self.log
    }
}

/// The reads of [`Catalog`], written once for every [`Backend`].
#[async_trait::async_trait]
impl<B: Backend> Catalog for B {
    fn commit(&self, txn: Transaction) -> CommitFuture {
        self.submit(txn)
    }

    fn watch_partitions(&self, partitions: &[wakeups::PartitionId]) -> wakeups::PartitionWaiter {
        self.watch(partitions)
    }

    fn blobs(&self) -> &BlobStore {
        self.blob_store()
    }

    async fn bucket(&self, name: &str) -> CatalogResult<Option<BucketRecord>> {
        read::get(self.kv(), tables::BUCKETS, name.as_bytes()).await
    }

    async fn buckets(&self) -> CatalogResult<Vec<BucketRecord>> {
        read::scan(self.kv(), tables::BUCKETS, b"", usize::MAX)
            .await
            .map(|v| v.into_iter().map(|(_, b)| b).collect())
    }

    async fn object(&self, bucket: &str, key: &str) -> CatalogResult<Option<ObjectVersion>> {
        read::get(self.kv(), tables::OBJECTS, &tables::object_key(bucket, key)).await
    }

    async fn object_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: &str,
    ) -> CatalogResult<Option<ObjectVersion>> {
        let prefix = tables::versions_prefix(bucket, key);
        let versions: Vec<(Vec<u8>, ObjectVersion)> =
            read::scan(self.kv(), tables::VERSIONS, &prefix, usize::MAX).await?;
        Ok(versions
            .into_iter()
            .map(|(_, v)| v)
            .find(|v| v.version_id == version_id))
    }

    async fn list_objects(
        &self,
        bucket: &str,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> CatalogResult<Vec<(String, ObjectVersion)>> {
        read::list_objects(self.kv(), bucket, prefix, start_after, limit).await
    }

    async fn list_versions(
        &self,
        bucket: &str,
        prefix: &str,
        start_key: Option<&str>,
        limit: usize,
    ) -> CatalogResult<Vec<(String, ObjectVersion)>> {
        read::list_versions(self.kv(), bucket, prefix, start_key, limit).await
    }

    async fn upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> CatalogResult<Option<UploadRecord>> {
        read::get(
            self.kv(),
            tables::UPLOADS,
            &tables::upload_key(bucket, key, upload_id),
        )
        .await
    }

    async fn list_uploads(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<(&str, Option<&str>)>,
        limit: usize,
    ) -> CatalogResult<Vec<UploadRecord>> {
        read::list_uploads(self.kv(), bucket, prefix, after, limit).await
    }

    async fn parts(
        &self,
        upload_id: &str,
        after: u32,
        limit: usize,
    ) -> CatalogResult<Vec<PartRecord>> {
        read::parts(self.kv(), upload_id, after, limit).await
    }

    async fn topic(&self, name: &str) -> CatalogResult<Option<TopicRecord>> {
        read::get(self.kv(), tables::TOPICS, name.as_bytes()).await
    }

    async fn topic_by_id(&self, id: u128) -> CatalogResult<Option<TopicRecord>> {
        match read::get_raw(self.kv(), tables::TOPIC_IDS, &id.to_be_bytes()).await? {
            Some(name) => self.topic(&String::from_utf8_lossy(&name)).await,
            None => Ok(None),
        }
    }

    async fn topic_table(&self, topic: &str) -> CatalogResult<Option<TopicTable>> {
        read::get(self.kv(), tables::TOPIC_TABLES, topic.as_bytes()).await
    }

    async fn topics(&self) -> CatalogResult<Vec<TopicRecord>> {
        read::scan(self.kv(), tables::TOPICS, b"", usize::MAX)
            .await
            .map(|v| v.into_iter().map(|(_, t)| t).collect())
    }

    async fn compaction(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<CompactionState>> {
        read::get(
            self.kv(),
            tables::COMPACTION,
            &tables::partition_key(topic_id, partition),
        )
        .await
    }

    async fn expansions(&self, topic: &str) -> CatalogResult<Vec<(String, Expansion)>> {
        let found: Vec<(Vec<u8>, Expansion)> = read::scan(
            self.kv(),
            tables::EXPANSIONS,
            &tables::expansions_prefix(topic),
            usize::MAX,
        )
        .await?;
        Ok(found
            .into_iter()
            .filter_map(|(k, e)| Some((tables::expansion_source(topic, &k)?, e)))
            .collect())
    }

    async fn other_table(&self, namespace: &str, name: &str) -> CatalogResult<Option<TableRecord>> {
        read::get(
            self.kv(),
            tables::OTHER_TABLES,
            &tables::table_key(namespace, name),
        )
        .await
    }

    async fn other_tables(&self) -> CatalogResult<Vec<(String, String, TableRecord)>> {
        let found: Vec<(Vec<u8>, TableRecord)> =
            read::scan(self.kv(), tables::OTHER_TABLES, b"", usize::MAX).await?;
        Ok(found
            .into_iter()
            .filter_map(|(k, t)| {
                let (namespace, name) = tables::table_of_key(&k)?;
                Some((namespace, name, t))
            })
            .collect())
    }

    async fn partition(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<PartitionState>> {
        read::get(
            self.kv(),
            tables::PARTITIONS,
            &tables::partition_key(topic_id, partition),
        )
        .await
    }

    async fn read_batches(
        &self,
        topic_id: u128,
        partition: u32,
        from_offset: u64,
        max_bytes: usize,
    ) -> CatalogResult<Vec<StoredBatch>> {
        read::read_batches(
            self.kv(),
            self.log(),
            topic_id,
            partition,
            from_offset,
            max_bytes,
        )
        .await
    }

    async fn batch_index(
        &self,
        topic_id: u128,
        partition: u32,
        from_offset: u64,
        limit: usize,
    ) -> CatalogResult<Vec<BatchInfo>> {
        read::batch_index(self.kv(), topic_id, partition, from_offset, limit).await
    }

    async fn producer_state(
        &self,
        producer_id: i64,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<ProducerState>> {
        read::get(
            self.kv(),
            tables::PRODUCERS,
            &tables::producer_key(producer_id, topic_id, partition),
        )
        .await
    }

    async fn offset(
        &self,
        group: &str,
        topic: &str,
        partition: u32,
    ) -> CatalogResult<Option<OffsetRecord>> {
        read::get(
            self.kv(),
            tables::OFFSETS,
            &tables::offset_key(group, topic, partition),
        )
        .await
    }

    async fn offsets(&self, group: &str) -> CatalogResult<Vec<(String, u32, OffsetRecord)>> {
        read::offsets(self.kv(), group).await
    }

    async fn group(&self, name: &str) -> CatalogResult<Option<GroupRecord>> {
        read::get(self.kv(), tables::GROUPS, name.as_bytes()).await
    }

    async fn groups(&self) -> CatalogResult<Vec<GroupRecord>> {
        read::scan(self.kv(), tables::GROUPS, b"", usize::MAX)
            .await
            .map(|v| v.into_iter().map(|(_, g)| g).collect())
    }

    async fn txn(&self, id: &str) -> CatalogResult<Option<TxnRecord>> {
        read::get(self.kv(), tables::TXNS, id.as_bytes()).await
    }

    async fn txns(&self) -> CatalogResult<Vec<(String, TxnRecord)>> {
        read::scan(self.kv(), tables::TXNS, b"", usize::MAX)
            .await
            .map(|v| {
                v.into_iter()
                    .map(|(k, r)| (String::from_utf8_lossy(&k).into_owned(), r))
                    .collect()
            })
    }

    async fn client_quotas(&self) -> CatalogResult<Vec<ClientQuotas>> {
        read::scan(self.kv(), tables::CLIENT_QUOTAS, b"", usize::MAX)
            .await
            .map(|v| v.into_iter().map(|(_, q)| q).collect())
    }

    async fn users(&self) -> CatalogResult<Vec<UserRecord>> {
        read::scan(self.kv(), tables::USERS, b"", usize::MAX)
            .await
            .map(|v| v.into_iter().map(|(_, u)| u).collect())
    }

    async fn policies(&self) -> CatalogResult<Vec<PolicyRecord>> {
        read::scan(self.kv(), tables::POLICIES, b"", usize::MAX)
            .await
            .map(|v| v.into_iter().map(|(_, p)| p).collect())
    }

    async fn bucket_policies(&self) -> CatalogResult<Vec<BucketPolicy>> {
        read::scan(self.kv(), tables::BUCKET_POLICIES, b"", usize::MAX)
            .await
            .map(|v| v.into_iter().map(|(_, p)| p).collect())
    }

    async fn bucket_config(
        &self,
        bucket: &str,
        kind: BucketConfigKind,
    ) -> CatalogResult<Option<BucketConfig>> {
        read::get(
            self.kv(),
            tables::BUCKET_CONFIGS,
            &BucketConfig::key(bucket, kind),
        )
        .await
    }

    async fn bucket_configs(&self, kind: BucketConfigKind) -> CatalogResult<Vec<BucketConfig>> {
        read::scan::<BucketConfig>(self.kv(), tables::BUCKET_CONFIGS, b"", usize::MAX)
            .await
            .map(|v| {
                v.into_iter()
                    .map(|(_, c)| c)
                    .filter(|c| c.kind == kind)
                    .collect()
            })
    }

    async fn txn_partition(&self, topic_id: u128, partition: u32) -> CatalogResult<TxnPartition> {
        Ok(read::get(
            self.kv(),
            tables::TXN_PARTITIONS,
            &tables::partition_key(topic_id, partition),
        )
        .await?
        .unwrap_or_default())
    }

    async fn stable_partition(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<(PartitionState, u64)>> {
        read::stable_partition(self.kv(), &tables::partition_key(topic_id, partition)).await
    }

    async fn aborted_txns(
        &self,
        topic_id: u128,
        partition: u32,
        from: u64,
        to: u64,
    ) -> CatalogResult<Vec<AbortedTxn>> {
        // An aborted transaction with records in the range has its marker at or past
        // `from` and at most the longest span past `to`, so this range holds every one.
        let span = self
            .txn_partition(topic_id, partition)
            .await?
            .max_aborted_span;
        read::aborted_txns(
            self.kv(),
            tables::batch_key(topic_id, partition, from),
            tables::batch_key(
                topic_id,
                partition,
                to.saturating_add(span).saturating_add(1),
            ),
        )
        .await
        .map(|v| v.into_iter().filter(|a| a.first_offset < to).collect())
    }

    async fn has_pending_txn_offset(
        &self,
        group: &str,
        topic: &str,
        partition: u32,
    ) -> CatalogResult<bool> {
        let prefix = tables::offset_key(group, topic, partition);
        let found: Vec<(Vec<u8>, OffsetRecord)> =
            read::scan(self.kv(), tables::TXN_OFFSETS, &prefix, 1).await?;
        Ok(!found.is_empty())
    }

    async fn producers_of(
        &self,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Vec<(i64, ProducerState)>> {
        read::producers_of(self.kv(), &tables::partition_key(topic_id, partition)).await
    }
}
