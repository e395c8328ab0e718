//! The group committer: the one thread that writes. Transactions that arrive while a
//! commit is in flight queue up and go into the next one together: one log record, one
//! round of fsyncs, one store commit for all of them.
//!
//! Order within a group commit: check and apply every transaction to a store write
//! transaction (not yet visible), append the accepted ones to the log (durable), then
//! commit the store transaction (visible) and answer. So a reader never sees a change
//! before it is durable, and a change that failed its checks never reaches the log.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use redb::{Database, Durability};
use storage::Wal;
use tokio::sync::{oneshot, watch};

use crate::apply::{Effects, LogCursor, Tables};
use crate::error::{CatalogError, CatalogResult};
use crate::metrics::{CatalogMetrics, observe_since};
use crate::tables::{APPLIED_LSN, SEGMENT_REFS};
use crate::txn::{CommitOutcome, Transaction};

/// Upper bound on the transaction bytes gathered into one group commit.
pub const MAX_GROUP_BYTES: usize = 64 << 20;

/// A request to the committer thread.
pub(crate) enum Msg {
    Commit {
        txn: Transaction,
        /// `txn.approx_bytes()`, counted into the commit queue when it was sent.
        bytes: usize,
        reply: oneshot::Sender<CatalogResult<CommitOutcome>>,
        queued: Instant,
    },
    /// Make the store durable (an fsync'd commit) and report the applied LSN.
    Flush(std::sync::mpsc::Sender<CatalogResult<u64>>),
    /// Take the log segments below this LSN (covered by a checkpoint) out of the log;
    /// replies with them, for the caller to delete off this thread.
    TrimLog(
        u64,
        std::sync::mpsc::Sender<CatalogResult<storage::wal::DetachedSegments>>,
    ),
    /// Finish what is queued, flush, and stop.
    Shutdown,
}

/// State shared between the committer and its callers.
pub(crate) struct Shared {
    pub applied: watch::Sender<u64>,
    pub log_bytes_since_checkpoint: AtomicU64,
    /// Size of the newest checkpoint: the next one waits for at least this much log, so
    /// checkpointing costs O(1) per logged byte however large the state grows.
    pub last_checkpoint_bytes: AtomicU64,
    pub failed: AtomicBool,
    pub metrics: CatalogMetrics,
    /// Fetches parked on partitions, woken by the commits that change them.
    pub wakeups: crate::wakeups::Wakeups,
    /// The exact peak behind `metrics.commit_queue_peak_bytes`.
    pub queue_peak: std::sync::atomic::AtomicI64,
}

impl Shared {
    /// Counts a transaction into the commit queue; returns its bytes. Nothing
    /// here limits the queue: its sources do (a Kafka request holds its share of the
    /// request budget until its response, after the commit; each S3 connection has one
    /// request at a time, under the connection cap). These gauges show that it holds.
    pub fn queue_in(&self, txn: &Transaction) -> usize {
        let bytes = txn.approx_bytes();
        let n = bytes as i64;
        let now = self.metrics.commit_queue_bytes.inc_by(n) + n;
        let peak = self.queue_peak.fetch_max(now, Ordering::Relaxed).max(now);
        self.metrics.commit_queue_peak_bytes.set(peak);
        bytes
    }

    /// Counts bytes out of the commit queue.
    pub fn queue_out(&self, bytes: usize) {
        self.metrics.commit_queue_bytes.dec_by(bytes as i64);
    }
}

pub(crate) struct Committer {
    pub db: Arc<Database>,
    pub wal: Wal,
    /// Where freed blobs go to be deleted.
    pub reaper: std::sync::mpsc::Sender<crate::reaper::Job>,
    pub rx: Receiver<Msg>,
    pub shared: Arc<Shared>,
}

type Pending = (
    Transaction,
    oneshot::Sender<CatalogResult<CommitOutcome>>,
    Instant,
);

impl Committer {
    pub fn run(mut self) {
        let mut stopping = false;
        loop {
            let first = if stopping {
                match self.rx.try_recv() {
                    Ok(m) => m,
                    Err(_) => break,
                }
            } else {
                match self.rx.recv_timeout(Duration::from_secs(3600)) {
                    Ok(m) => m,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            };
            let mut group: Vec<Pending> = Vec::new();
            let mut bytes = 0usize;
            let mut next = Some(first);
            let mut after = Vec::new();
            while let Some(m) = next.take() {
                match m {
                    Msg::Commit {
                        txn,
                        bytes: n,
                        reply,
                        queued,
                    } => {
                        self.shared.queue_out(n);
                        bytes += n;
                        group.push((txn, reply, queued));
                    }
                    Msg::Shutdown => stopping = true,
                    other => after.push(other),
                }
                if bytes < MAX_GROUP_BYTES {
                    next = self.rx.try_recv().ok();
                }
            }
            if !group.is_empty() {
                self.commit_group(group);
            }
            for m in after {
                match m {
                    Msg::Flush(reply) => {
                        let _ = reply.send(self.flush());
                    }
                    Msg::TrimLog(lsn, reply) => {
                        let _ = reply.send(self.trim_log(lsn));
                    }
                    Msg::Commit { .. } | Msg::Shutdown => {}
                }
            }
        }
        if let Err(e) = self.flush() {
            tracing::error!(error = %e, "final flush failed; the log will be replayed at start");
        }
    }

    /// Detaches the segments below `lsn` that no stored batch points into.
    fn trim_log(&mut self, lsn: u64) -> CatalogResult<storage::wal::DetachedSegments> {
        use redb::{ReadableDatabase, ReadableTable};
        let r = self.db.begin_read()?;
        let referenced: std::collections::BTreeSet<u64> = match r.open_table(SEGMENT_REFS) {
            Ok(t) => t
                .iter()?
                .filter_map(|e| e.ok())
                .filter_map(|(k, _)| k.value().try_into().ok().map(u64::from_be_bytes))
                .collect(),
            Err(redb::TableError::TableDoesNotExist(_)) => Default::default(),
            Err(e) => return Err(e.into()),
        };
        Ok(self
            .wal
            .detach_before(lsn, |segment| !referenced.contains(&segment)))
    }

    /// An fsync'd empty commit: everything applied so far survives without the log.
    fn flush(&self) -> CatalogResult<u64> {
        let started = Instant::now();
        let mut w = self.db.begin_write()?;
        w.set_durability(Durability::Immediate)?;
        w.commit()?;
        observe_since(&self.shared.metrics.stages.flush, started);
        Ok(*self.shared.applied.borrow())
    }

    /// Aborts the store transaction (if not already consumed) and fails what it held:
    /// refused before its log record was written, `unsettled` once the record may be on
    /// the drives (the append failed part way, or the store after it), where a restart
    /// may apply it, so its writers hear the outcome is unknown.
    fn fail_accepted(
        &self,
        w: Option<redb::WriteTransaction>,
        accepted: Vec<(Pending, Vec<crate::txn::OpOutcome>)>,
        why: &str,
        unsettled: bool,
    ) {
        if let Some(w) = w {
            let _ = w.abort();
        }
        self.fail_with(accepted.into_iter().map(|(p, _)| p), why, || {
            if unsettled {
                CatalogError::Unsettled(format!("the catalog's log: {why}"))
            } else {
                CatalogError::Closed
            }
        });
    }

    fn fail_all(&self, group: impl IntoIterator<Item = Pending>, why: &str) {
        self.fail_with(group, why, || CatalogError::Closed);
    }

    fn fail_with(
        &self,
        group: impl IntoIterator<Item = Pending>,
        why: &str,
        error: impl Fn() -> CatalogError,
    ) {
        self.shared.failed.store(true, Ordering::SeqCst);
        tracing::error!(
            why,
            "group commit failed; the catalog refuses writes until restart"
        );
        for (_, reply, _) in group {
            let _ = reply.send(Err(error()));
        }
    }

    fn commit_group(&mut self, group: Vec<Pending>) {
        if self.shared.failed.load(Ordering::SeqCst) {
            return self.fail_all(group, "earlier failure");
        }
        let started = Instant::now();
        let position = match self.wal.next_position() {
            Ok(p) => p,
            Err(e) => return self.fail_all(group, &e.to_string()),
        };
        let lsn = position.lsn;
        let data_bytes: usize = group.iter().map(|(t, _, _)| t.approx_bytes()).sum();
        let mut log = LogCursor::new(position, true);
        // Room for the header too, so encoding the record never reallocates the data.
        log.data.reserve(data_bytes + (64 << 10));
        let mut effects = Effects::default();
        let mut accepted: Vec<(Pending, Vec<crate::txn::OpOutcome>)> = Vec::new();
        let mut w = match self.db.begin_write() {
            Ok(w) => w,
            Err(e) => return self.fail_all(group, &e.to_string()),
        };
        if let Err(e) = w.set_durability(Durability::None) {
            return self.fail_all(group, &e.to_string());
        }
        let applied: CatalogResult<()> = (|| {
            let mut kv = crate::kv::RedbWrite::new(&w);
            let mut t = Tables::new(&mut kv);
            for (txn, reply, queued) in group {
                let checked = match t.check_transaction(&txn.ops) {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = reply.send(Err(e));
                        continue;
                    }
                };
                let outcomes = t.apply_checked(&txn.ops, &checked, &mut effects, &mut log)?;
                // Recovery replays the log without checks: it holds only what applied.
                let txn = checked.recorded(&txn).unwrap_or(txn);
                accepted.push(((txn, reply, queued), outcomes));
            }
            t.set_counter(APPLIED_LSN, lsn)
        })();
        if let Err(e) = applied {
            return self.fail_accepted(Some(w), accepted, &e.to_string(), false);
        }
        if accepted.is_empty() {
            let _ = w.abort();
            return;
        }
        let txns: Vec<&Transaction> = accepted.iter().map(|((t, _, _), _)| t).collect();
        let payload = match crate::record::encode(std::mem::take(&mut log.data), &txns) {
            Ok(p) => p,
            Err(e) => return self.fail_accepted(Some(w), accepted, &e.to_string(), false),
        };
        let payload_len = payload.len() as u64;
        observe_since(&self.shared.metrics.stages.apply, started);
        let logging = Instant::now();
        match self.wal.append(payload) {
            Ok(p) if p == position => {}
            result => {
                let why = match result {
                    Err(e) => e.to_string(),
                    Ok(p) => format!("log record landed at {p:?}, not {position:?}"),
                };
                return self.fail_accepted(Some(w), accepted, &why, true);
            }
        }
        observe_since(&self.shared.metrics.stages.log, logging);
        let storing = Instant::now();
        if let Err(e) = w.commit() {
            // Durable in the log but not applied here: a restart replays it.
            return self.fail_accepted(None, accepted, &e.to_string(), true);
        }
        observe_since(&self.shared.metrics.stages.store, storing);
        self.shared.applied.send_replace(lsn);
        self.shared.wakeups.wake_changed(&crate::wakeups::changed(
            accepted.iter().map(|((t, _, _), _)| t),
        ));
        self.shared
            .log_bytes_since_checkpoint
            .fetch_add(payload_len, Ordering::Relaxed);
        let m = &self.shared.metrics;
        m.group_commits.inc();
        m.log_bytes.inc_by(payload_len);
        m.group_size.observe(accepted.len() as f64);
        m.commit_seconds.observe(started.elapsed().as_secs_f64());
        for ((_, reply, queued), ops) in accepted {
            m.transactions.inc();
            m.transaction_seconds
                .observe(queued.elapsed().as_secs_f64());
            let _ = reply.send(Ok(CommitOutcome { lsn, ops }));
        }
        if !effects.freed_blobs.is_empty() {
            let freed = effects.freed_blobs;
            self.shared
                .metrics
                .blob_deletes_pending
                .inc_by(freed.len() as i64);
            // The reaper outlives the committer, so this only fails if it panicked; the
            // blobs are then orphans for the next start.
            let _ = self.reaper.send(crate::reaper::Job::Delete(freed));
        }
    }
}
