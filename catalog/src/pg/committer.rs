//! The PostgreSQL catalog's group committer: one thread per node. Transactions that
//! arrive while a commit is in flight go into the next one together, as in the embedded
//! committer, but the group is one PostgreSQL transaction (`SERIALIZABLE`), and the
//! batches it appends go to this node's log on the shared drives first.
//!
//! Order within a group: check and apply every transaction through [`PgWrite`], send the
//! writes, append the batch bytes to the node's log (fsync'd), then `COMMIT`. A batch is
//! visible only once PostgreSQL has the index entry pointing at it, and that entry is
//! only committed once the bytes are durable. A serialization failure (another node
//! touched the same records) runs the whole group again, against the new state.

use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use storage::Wal;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;
use tokio_postgres::{Client, IsolationLevel};

use super::logs::position_of;
use super::statements::Statements;
use super::write::PgWrite;
use crate::apply::{Effects, LogCursor, Tables};
use crate::error::{CatalogError, CatalogResult};
use crate::metrics::observe_since;
use crate::txn::{CommitOutcome, OpOutcome, Transaction};
use crate::wakeups::Changed;

/// Times a group is run again after serialization failures before its transactions
/// fail with [`CatalogError::Conflict`].
const ATTEMPTS: u32 = 8;

/// A request to the committer thread.
pub(crate) enum Msg {
    Commit {
        txn: Transaction,
        reply: oneshot::Sender<CatalogResult<CommitOutcome>>,
    },
    Shutdown,
}

type Pending = (Transaction, oneshot::Sender<CatalogResult<CommitOutcome>>);

/// What one attempt at a group decided for each transaction.
type Decided = Vec<CatalogResult<Vec<OpOutcome>>>;

pub(crate) struct PgCommitter {
    pub rt: Runtime,
    pub client: Client,
    pub statements: Statements,
    /// This node's batch log.
    pub log: Wal,
    /// This node's number: the top 16 bits of its log positions.
    pub node: u16,
    /// This node's name, as its leases name it.
    pub name: String,
    /// Where PostgreSQL is, to reconnect.
    pub url: String,
    pub rx: Receiver<Msg>,
    /// Where freed blobs go to be deleted.
    pub reaper: std::sync::mpsc::Sender<crate::reaper::Job>,
    pub shared: Arc<super::Shared>,
    /// When the node's log was last trimmed.
    pub trimmed: Instant,
    /// Shortest time between two trims.
    pub trim_every: Duration,
    /// How long PostgreSQL lets this committer's transaction sit idle
    /// (`PgConfig::stalled_transaction_timeout`).
    pub stalled: Duration,
}

/// The committer's connection: one whose transaction PostgreSQL ends once it has sat
/// idle for `stalled` (the node stopped mid-commit), releasing what it holds. It is
/// named `eddy committer <node>` in `pg_stat_activity`.
pub(crate) async fn connect(url: &str, node: &str, stalled: Duration) -> CatalogResult<Client> {
    let client = super::connect(url).await?;
    client
        .execute(
            "SELECT set_config('application_name', $1, false), \
             set_config('idle_in_transaction_session_timeout', $2, false)",
            &[
                &format!("eddy committer {node}"),
                &stalled.as_millis().max(1).to_string(),
            ],
        )
        .await?;
    Ok(client)
}

/// Whether an error is the backend's (the group is not decided) rather than a refusal
/// of one transaction.
fn infrastructure(e: &CatalogError) -> bool {
    matches!(
        e,
        CatalogError::Store(_)
            | CatalogError::Storage(_)
            | CatalogError::Conflict(_)
            | CatalogError::Closed
            | CatalogError::Unsettled(_)
    )
}

impl PgCommitter {
    pub fn run(mut self) {
        loop {
            let Ok(first) = self.rx.recv() else { break };
            let mut group = Vec::new();
            let mut stop = false;
            let mut next = Some(first);
            while let Some(m) = next.take() {
                match m {
                    Msg::Commit { txn, reply } => group.push((txn, reply)),
                    Msg::Shutdown => stop = true,
                }
                if group.len() < 4096 {
                    next = self.rx.try_recv().ok();
                }
            }
            if !group.is_empty() {
                self.commit_group(group);
            }
            if self.trimmed.elapsed() >= self.trim_every {
                self.trimmed = Instant::now();
                match self.trim() {
                    Ok(0) => {}
                    Ok(n) => tracing::debug!(segments = n, "trimmed the node's log"),
                    Err(e) => tracing::warn!(error = %e, "trimming the node's log failed"),
                }
            }
            if stop {
                break;
            }
        }
    }

    fn commit_group(&mut self, group: Vec<Pending>) {
        let started = Instant::now();
        let txns: Vec<&Transaction> = group.iter().map(|(t, _)| t).collect();
        let mut attempt = 0;
        let result = loop {
            attempt += 1;
            match self.attempt(&txns) {
                Err(CatalogError::Conflict(why)) if attempt < ATTEMPTS => {
                    self.shared.metrics.conflicts.inc();
                    tracing::debug!(attempt, why, "catalog group conflicted; running it again");
                    // Back off a little, growing, so the other node's group gets through.
                    std::thread::sleep(Duration::from_millis(1 << attempt.min(6)));
                }
                other => break other,
            }
        };
        let (decided, lsn, effects, changed) = match result {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "catalog group commit failed");
                for (_, reply) in group {
                    let _ = reply.send(Err(clone_error(&e)));
                }
                return;
            }
        };
        self.shared.wakeups.wake_changed(&changed);
        let m = &self.shared.metrics;
        m.group_commits.inc();
        m.group_size.observe(group.len() as f64);
        m.commit_seconds.observe(started.elapsed().as_secs_f64());
        for ((_, reply), d) in group.into_iter().zip(decided) {
            if d.is_ok() {
                m.transactions.inc();
            }
            let _ = reply.send(d.map(|ops| CommitOutcome { lsn, ops }));
        }
        if !effects.freed_blobs.is_empty() {
            let freed = effects.freed_blobs;
            m.blob_deletes_pending.inc_by(freed.len() as i64);
            let _ = self.reaper.send(crate::reaper::Job::Delete(freed));
        }
    }

    /// One run of a group: what each transaction got, and the LSN of the log record.
    fn attempt(
        &mut self,
        txns: &[&Transaction],
    ) -> CatalogResult<(Decided, u64, Effects, Changed)> {
        if self.client.is_closed() {
            // PostgreSQL restarted or the connection dropped: a new one, whose
            // statements are prepared anew.
            self.client = self
                .rt
                .block_on(connect(&self.url, &self.name, self.stalled))?;
            self.statements = Statements::default();
            tracing::info!("catalog committer reconnected to postgresql");
        }
        let position = self.log.next_position()?;
        let mut log = LogCursor::new(position_of(self.node, position), true);
        let mut effects = Effects::default();
        let mut decided: Decided = Vec::with_capacity(txns.len());
        // Transactions with duplicate batches left out, as the log records them (by
        // their index in `txns`).
        let mut trimmed: Vec<(usize, Transaction)> = Vec::new();
        let started = Instant::now();
        let pg = self.rt.block_on(
            self.client
                .build_transaction()
                .isolation_level(IsolationLevel::Serializable)
                .start(),
        )?;
        let held = leases_held(&self.rt, &self.name, &pg, txns)?;
        let mut kv = PgWrite::new(&self.rt, &pg, &mut self.statements);
        {
            let mut t = Tables::new(&mut kv);
            for txn in txns {
                if let Some(l) = txn
                    .leases
                    .iter()
                    .find(|l| held.get(&l.address) != Some(&l.epoch))
                {
                    self.shared.metrics.fenced.inc();
                    decided.push(Err(CatalogError::Fenced(format!(
                        "{} at epoch {}",
                        l.address, l.epoch
                    ))));
                    continue;
                }
                match t.check_transaction(&txn.ops) {
                    Err(e) if infrastructure(&e) => return Err(e),
                    Err(e) => decided.push(Err(e)),
                    Ok(checked) => {
                        let outcomes =
                            t.apply_checked(&txn.ops, &checked, &mut effects, &mut log)?;
                        if let Some(recorded) = checked.recorded(txn) {
                            trimmed.push((decided.len(), recorded));
                        }
                        decided.push(Ok(outcomes));
                    }
                }
            }
        }
        kv.flush()?;
        let accepted: Vec<&Transaction> = txns
            .iter()
            .enumerate()
            .zip(&decided)
            .filter(|(_, d)| d.is_ok())
            .map(|((i, t), _)| {
                trimmed
                    .iter()
                    .find(|(at, _)| *at == i)
                    .map_or(*t, |(_, trimmed)| trimmed)
            })
            .collect();
        let stages = &self.shared.metrics.stages;
        observe_since(&stages.apply, started);
        let logging = Instant::now();
        if !log.data.is_empty() {
            // The record carries the group's transactions too, as the embedded log's
            // do: the node's log is a readable history of what it committed.
            let payload = crate::record::encode(std::mem::take(&mut log.data), &accepted)?;
            let at = self.log.append(payload)?;
            if at != position {
                return Err(CatalogError::Store(format!(
                    "node log record landed at {at:?}, not {position:?}"
                )));
            }
        }
        observe_since(&stages.log, logging);
        let storing = Instant::now();
        // Other nodes' fetches parked on these partitions wake once this commits.
        let changed = crate::wakeups::changed(
            txns.iter()
                .zip(&decided)
                .filter(|(_, d)| d.is_ok())
                .map(|(t, _)| *t),
        );
        if !matches!(&changed, Changed::Partitions(ps) if ps.is_empty()) {
            let payload = super::notify::payload(self.node, &changed);
            self.rt.block_on(pg.execute(
                "SELECT pg_notify($1, $2)",
                &[&super::notify::CHANNEL, &payload],
            ))?;
        }
        self.rt.block_on(pg.commit()).map_err(commit_failed)?;
        observe_since(&stages.store, storing);
        Ok((decided, position.lsn, effects, changed))
    }

    /// Takes this node's sealed log segments that no batch references any more out of its
    /// log and has their files deleted on another thread. Only
    /// this thread adds references to this node's segments (every batch it commits goes
    /// into its own log's current segment), so one with none now never gets one again.
    fn trim(&mut self) -> CatalogResult<usize> {
        let sealed: Vec<u64> = match self.log.segments().split_last() {
            Some((_, sealed)) => sealed.to_vec(),
            None => return Ok(0),
        };
        if sealed.is_empty() {
            return Ok(0);
        }
        let keys: Vec<Vec<u8>> = sealed
            .iter()
            .map(|s| {
                let stored = position_of(
                    self.node,
                    storage::wal::LogPosition {
                        lsn: 0,
                        segment: *s,
                        offset: 0,
                    },
                );
                stored.segment.to_be_bytes().to_vec()
            })
            .collect();
        let rows = self.rt.block_on(self.client.query(
            "SELECT k FROM eddy_kv WHERE t = $1 AND k = ANY($2)",
            &[&crate::tables::SEGMENT_REFS_NAME, &keys],
        ))?;
        let referenced: std::collections::HashSet<u64> = rows
            .iter()
            .filter_map(|r| {
                let k: Vec<u8> = r.get(0);
                let stored = u64::from_be_bytes(k.try_into().ok()?);
                Some(
                    super::logs::split(&storage::wal::LogPosition {
                        lsn: 0,
                        segment: stored,
                        offset: 0,
                    })
                    .1
                    .segment,
                )
            })
            .collect();
        let next = self.log.next_lsn();
        // The files go on another thread: deleting them here would hold up the commits
        // queued behind (`Wal::detach_before`).
        let detached = self
            .log
            .detach_before(next, |segment| !referenced.contains(&segment));
        let n = detached.segments();
        detached.remove_in_background();
        Ok(n)
    }
}

/// The leases the group's transactions were made under that this node still holds,
/// unexpired, with their epochs: read in the group's own transaction, so a takeover
/// that commits first fails this group, and one that commits later waits for it.
fn leases_held(
    rt: &Runtime,
    name: &str,
    pg: &tokio_postgres::Transaction<'_>,
    txns: &[&Transaction],
) -> CatalogResult<std::collections::HashMap<String, i64>> {
    let mut addresses: Vec<&str> = txns
        .iter()
        .flat_map(|t| t.leases.iter().map(|l| l.address.as_str()))
        .collect();
    if addresses.is_empty() {
        return Ok(Default::default());
    }
    addresses.sort_unstable();
    addresses.dedup();
    let rows = rt.block_on(pg.query(
        "SELECT address, epoch FROM eddy_leases \
         WHERE address = ANY($1) AND node = $2 AND expires_at > now()",
        &[&addresses, &name],
    ))?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// A failed COMMIT: PostgreSQL's own error refused it, but a connection that ended
/// before the answer leaves its outcome unknown (the server may have committed).
fn commit_failed(e: tokio_postgres::Error) -> CatalogError {
    if e.as_db_error().is_some() {
        e.into()
    } else {
        CatalogError::Unsettled(format!("postgresql: {e}"))
    }
}

/// The same error for every transaction of a failed group.
fn clone_error(e: &CatalogError) -> CatalogError {
    match e {
        CatalogError::Conflict(m) => CatalogError::Conflict(m.clone()),
        CatalogError::Unsettled(m) => CatalogError::Unsettled(m.clone()),
        CatalogError::Fenced(m) => CatalogError::Fenced(m.clone()),
        CatalogError::Closed => CatalogError::Closed,
        e => CatalogError::Store(e.to_string()),
    }
}
