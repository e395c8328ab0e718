//! The embedded catalog: one process's catalog, group-committed to the erasure-coded
//! write-ahead log and materialized in an embedded store (redb), with checkpoints; the
//! log is replayed into the store when it opens.

use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use redb::{Database, Durability};
use storage::{BlobStore, DriveSet, DriveSetConfig, Wal, WalConfig};
use tokio::sync::{oneshot, watch};

use super::*;
use crate::committer::{Committer, Msg, Shared};

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
        // The files are deleted here, on the checkpointer's thread: deleting them on the
        // committer held up every commit (`Wal::detach_before`).
        match rx
            .recv()
            .map_err(|_| CatalogError::Closed)?
            .and_then(|detached| Ok(detached.remove()?))
        {
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

impl Catalog for EmbeddedCatalog {
    fn commit(&self, txn: Transaction) -> CommitFuture {
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
        &self.kv
    }

    fn log(&self) -> &dyn read::BatchLog {
        &self.log
    }
}
