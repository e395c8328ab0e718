//! Prometheus metrics of the catalog's commit path.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Counters and histograms of the group committer. Cheap to clone (shared handles).
#[derive(Clone)]
pub struct CatalogMetrics {
    /// Group commits (log records) written.
    pub group_commits: Counter,
    /// Transactions committed.
    pub transactions: Counter,
    /// Log payload bytes written (before erasure coding).
    pub log_bytes: Counter,
    /// Transactions per group commit.
    pub group_size: Histogram,
    /// Seconds per group commit (apply, log append with fsyncs, store commit).
    pub commit_seconds: Histogram,
    /// Seconds per stage of a group commit: `apply` (checks and store writes, record
    /// encoding), `log` (erasure coding, writes and fsyncs on every drive), `store`
    /// (making the store transaction visible); `flush` is the fsync'd store commit before
    /// a checkpoint, which holds up the commits behind it. Tells a slow disk from a slow
    /// apply. With the PostgreSQL catalog, `apply` runs from `BEGIN` to the group's
    /// writes sent (each read a round trip), `log` is the record's encoding and the node
    /// log's append, and `store` the wake-up for other nodes and PostgreSQL's `COMMIT`.
    pub commit_stage_seconds: Family<StageLabel, Histogram>,
    /// The four series of `commit_stage_seconds`, resolved once: the committer records
    /// them on every commit.
    pub stages: CommitStages,
    /// Seconds from a transaction's submission to its acknowledgement.
    pub transaction_seconds: Histogram,
    /// Checkpoints written.
    pub checkpoints: Counter,
    /// Blobs removed because nothing referenced them (crash leftovers).
    pub orphan_blobs_removed: Counter,
    /// Group commits run again because another node's transaction touched the same
    /// records (PostgreSQL catalog only).
    pub conflicts: Counter,
    /// Address lease rounds that failed because another node's round touched the same
    /// rows at once (PostgreSQL catalog only).
    pub lease_conflicts: Counter,
    /// Seconds per address lease round, failed ones too (PostgreSQL catalog only). A
    /// round slower than a third of the lease timeout renews late; one slower than the
    /// timeout lets the node's addresses go to others.
    pub lease_round_seconds: Histogram,
    /// Kafka addresses this node holds a lease on and serves (PostgreSQL catalog only).
    pub addresses_held: Gauge,
    /// Addresses this node took and began serving: its share at start, a dead or silent
    /// node's, or one given back (PostgreSQL catalog only).
    pub addresses_taken: Counter,
    /// Addresses this node stopped serving: taken by another node after its lease ran
    /// out, or given back to a node that joined (PostgreSQL catalog only).
    pub addresses_lost: Counter,
    /// Transactions refused because their node no longer held the address lease they
    /// were made under (PostgreSQL catalog only).
    pub fenced: Counter,
    /// Blobs freed by durable commits and not deleted yet.
    pub blob_deletes_pending: Gauge,
    /// Transaction bytes (`Transaction::approx_bytes`) queued for the committer and not
    /// taken into a group commit yet.
    pub commit_queue_bytes: Gauge,
    /// The most `commit_queue_bytes` has been since start.
    pub commit_queue_peak_bytes: Gauge,
}

/// Handles on the series of [`CatalogMetrics::commit_stage_seconds`].
#[derive(Clone)]
pub struct CommitStages {
    /// Checks, store writes and record encoding.
    pub apply: Histogram,
    /// Erasure coding, writes and fsyncs on every drive.
    pub log: Histogram,
    /// Making the store transaction visible.
    pub store: Histogram,
    /// The fsync'd store commit before a checkpoint.
    pub flush: Histogram,
}

impl CommitStages {
    fn of(family: &Family<StageLabel, Histogram>) -> Self {
        let series = |stage| family.get_or_create(&StageLabel { stage }).clone();
        Self {
            apply: series("apply"),
            log: series("log"),
            store: series("store"),
            flush: series("flush"),
        }
    }
}

/// Records the seconds since `since` in `h`.
pub fn observe_since(h: &Histogram, since: std::time::Instant) {
    h.observe(since.elapsed().as_secs_f64());
}

impl Default for CatalogMetrics {
    fn default() -> Self {
        let commit_stage_seconds: Family<StageLabel, Histogram> =
            Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.0001, 2.0, 16)));
        Self {
            group_commits: Counter::default(),
            transactions: Counter::default(),
            log_bytes: Counter::default(),
            group_size: Histogram::new(exponential_buckets(1.0, 2.0, 12)),
            commit_seconds: Histogram::new(exponential_buckets(0.0001, 2.0, 16)),
            stages: CommitStages::of(&commit_stage_seconds),
            commit_stage_seconds,
            transaction_seconds: Histogram::new(exponential_buckets(0.0001, 2.0, 16)),
            checkpoints: Counter::default(),
            orphan_blobs_removed: Counter::default(),
            conflicts: Counter::default(),
            lease_conflicts: Counter::default(),
            lease_round_seconds: Histogram::new(exponential_buckets(0.001, 2.0, 14)),
            addresses_held: Gauge::default(),
            addresses_taken: Counter::default(),
            addresses_lost: Counter::default(),
            fenced: Counter::default(),
            blob_deletes_pending: Gauge::default(),
            commit_queue_bytes: Gauge::default(),
            commit_queue_peak_bytes: Gauge::default(),
        }
    }
}

/// The `stage` label of [`CatalogMetrics::commit_stage_seconds`].
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StageLabel {
    /// `apply`, `log`, `store` or `flush`.
    pub stage: &'static str,
}

impl CatalogMetrics {
    /// Registers every metric under `registry` (prefix it with `eddy_catalog`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "group_commits",
            "Group commits (log records) written",
            self.group_commits.clone(),
        );
        registry.register(
            "transactions",
            "Transactions committed",
            self.transactions.clone(),
        );
        registry.register(
            "log_bytes",
            "Log payload bytes written, before erasure coding",
            self.log_bytes.clone(),
        );
        registry.register(
            "group_size",
            "Transactions per group commit",
            self.group_size.clone(),
        );
        registry.register(
            "commit_seconds",
            "Seconds per group commit",
            self.commit_seconds.clone(),
        );
        registry.register(
            "commit_stage_seconds",
            "Seconds per stage of a group commit (apply, log, store) and per store flush",
            self.commit_stage_seconds.clone(),
        );
        registry.register(
            "transaction_seconds",
            "Seconds from submission to acknowledgement",
            self.transaction_seconds.clone(),
        );
        registry.register(
            "checkpoints",
            "Checkpoints written",
            self.checkpoints.clone(),
        );
        registry.register(
            "orphan_blobs_removed",
            "Blobs removed at start-up because no catalog record referenced them",
            self.orphan_blobs_removed.clone(),
        );
        registry.register(
            "conflicts",
            "Group commits run again after a serialization failure (PostgreSQL catalog)",
            self.conflicts.clone(),
        );
        registry.register(
            "lease_conflicts",
            "Serialization failures of address lease rounds, each run again until a third of the lease timeout has passed (PostgreSQL catalog)",
            self.lease_conflicts.clone(),
        );
        registry.register(
            "lease_round_seconds",
            "Seconds per address lease round, failed ones too (PostgreSQL catalog)",
            self.lease_round_seconds.clone(),
        );
        registry.register(
            "addresses_held",
            "Kafka addresses this node holds a lease on and serves (PostgreSQL catalog)",
            self.addresses_held.clone(),
        );
        registry.register(
            "addresses_taken",
            "Kafka addresses this node took a lease on and began serving (PostgreSQL catalog)",
            self.addresses_taken.clone(),
        );
        registry.register(
            "addresses_lost",
            "Kafka addresses this node stopped serving, lost to another node or given back (PostgreSQL catalog)",
            self.addresses_lost.clone(),
        );
        registry.register(
            "fenced",
            "Transactions refused because their node lost the address lease they were made under",
            self.fenced.clone(),
        );
        registry.register(
            "blob_deletes_pending",
            "Blobs freed by durable commits and not deleted yet",
            self.blob_deletes_pending.clone(),
        );
        registry.register(
            "commit_queue_bytes",
            "Transaction bytes queued for the committer, not yet in a group commit",
            self.commit_queue_bytes.clone(),
        );
        registry.register(
            "commit_queue_peak_bytes",
            "The most transaction bytes queued for the committer since start",
            self.commit_queue_peak_bytes.clone(),
        );
    }
}
