//! Prometheus metrics of the catalog's commit path.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
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
    /// apply.
    pub commit_stage_seconds: Family<StageLabel, Histogram>,
    /// Seconds from a transaction's submission to its acknowledgement.
    pub transaction_seconds: Histogram,
    /// Checkpoints written.
    pub checkpoints: Counter,
}

impl Default for CatalogMetrics {
    fn default() -> Self {
        Self {
            group_commits: Counter::default(),
            transactions: Counter::default(),
            log_bytes: Counter::default(),
            group_size: Histogram::new(exponential_buckets(1.0, 2.0, 12)),
            commit_seconds: Histogram::new(exponential_buckets(0.0001, 2.0, 16)),
            commit_stage_seconds: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.0001, 2.0, 16))
            }),
            transaction_seconds: Histogram::new(exponential_buckets(0.0001, 2.0, 16)),
            checkpoints: Counter::default(),
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
    /// Records how long one stage of a group commit took.
    pub fn stage(&self, stage: &'static str, since: std::time::Instant) {
        self.commit_stage_seconds
            .get_or_create(&StageLabel { stage })
            .observe(since.elapsed().as_secs_f64());
    }

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
    }
}
