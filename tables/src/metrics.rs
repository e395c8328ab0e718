//! Prometheus metrics of the topic tables: how often and how fast topics are sealed,
//! and what it writes.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The tabler's metrics.
#[derive(Clone)]
pub struct TableMetrics {
    /// Snapshots committed (appends, deletions).
    pub snapshots: Counter,
    /// Seals that failed.
    pub seal_errors: Counter,
    /// Rows written into data files.
    pub rows: Counter,
    /// Bytes of table files written (data and metadata).
    pub bytes_written: Counter,
    /// Time of one seal (all its snapshots), from lock to commit.
    pub seal_seconds: Histogram,
}

impl Default for TableMetrics {
    fn default() -> Self {
        Self {
            snapshots: Counter::default(),
            seal_errors: Counter::default(),
            rows: Counter::default(),
            bytes_written: Counter::default(),
            seal_seconds: Histogram::new(exponential_buckets(0.001, 2.0, 16)),
        }
    }
}

impl TableMetrics {
    /// Registers the metrics (prefix them with `eddy_tables`).
    pub fn register(&self, r: &mut Registry) {
        r.register(
            "snapshots",
            "Topic table snapshots committed",
            self.snapshots.clone(),
        );
        r.register(
            "seal_errors",
            "Failed table seals",
            self.seal_errors.clone(),
        );
        r.register(
            "rows",
            "Rows written into Parquet data files",
            self.rows.clone(),
        );
        r.register(
            "written_bytes",
            "Bytes of table files written (Parquet, Avro, JSON)",
            self.bytes_written.clone(),
        );
        r.register(
            "seal_seconds",
            "Time to bring a topic table up to date",
            self.seal_seconds.clone(),
        );
    }
}
