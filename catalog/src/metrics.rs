//! Prometheus metrics of the catalog's commit path.

use prometheus_client::metrics::counter::Counter;
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
            transaction_seconds: Histogram::new(exponential_buckets(0.0001, 2.0, 16)),
            checkpoints: Counter::default(),
        }
    }
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
