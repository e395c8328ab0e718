//! Prometheus metrics of the topic tables (how often and how fast topics are sealed,
//! and what it writes) and of users' own tables (commits, races lost, maintenance).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Labels of an expansion's metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ExpansionLabels {
    /// The expanded topic.
    pub topic: String,
    /// Its expanded column (`key` or `value`).
    pub source_column: String,
}

/// The tabler's metrics.
#[derive(Clone)]
pub struct TableMetrics {
    /// Rows written into expansions' target tables.
    pub expansion_rows: Family<ExpansionLabels, Counter>,
    /// Of those, rows whose source was not JSON of the expansion's shape.
    pub expansion_parse_errors: Family<ExpansionLabels, Counter>,
    /// Schema fields absent from the expanded JSON.
    pub expansion_missing_fields: Family<ExpansionLabels, Counter>,
    /// JSON fields not in the expansion schema.
    pub expansion_excess_fields: Family<ExpansionLabels, Counter>,
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
    /// Commits that create, change or rename users' tables and views.
    pub user_commits: Counter,
    /// Of users' commits, those refused because what they were built on moved (409).
    pub user_commit_conflicts: Counter,
    /// Snapshots of users' tables expired by maintenance.
    pub maintenance_expired_snapshots: Counter,
    /// Files of users' tables removed by maintenance.
    pub maintenance_removed_files: Counter,
    /// Rebuilds of buckets' inventory tables (loads after an object change).
    pub inventory_rebuilds: Counter,
}

impl Default for TableMetrics {
    fn default() -> Self {
        Self {
            expansion_rows: Family::default(),
            expansion_parse_errors: Family::default(),
            expansion_missing_fields: Family::default(),
            expansion_excess_fields: Family::default(),
            snapshots: Counter::default(),
            seal_errors: Counter::default(),
            rows: Counter::default(),
            bytes_written: Counter::default(),
            seal_seconds: Histogram::new(exponential_buckets(0.001, 2.0, 16)),
            user_commits: Counter::default(),
            user_commit_conflicts: Counter::default(),
            maintenance_expired_snapshots: Counter::default(),
            maintenance_removed_files: Counter::default(),
            inventory_rebuilds: Counter::default(),
        }
    }
}

impl TableMetrics {
    /// Counts what one committed snapshot of an expansion's target held; `label` is
    /// (topic, source column).
    pub fn expansion(&self, label: &(String, String), c: &crate::expansion::Counters) {
        let l = ExpansionLabels {
            topic: label.0.clone(),
            source_column: label.1.clone(),
        };
        self.expansion_rows.get_or_create(&l).inc_by(c.rows);
        self.expansion_parse_errors
            .get_or_create(&l)
            .inc_by(c.parse_errors);
        self.expansion_missing_fields
            .get_or_create(&l)
            .inc_by(c.missing);
        self.expansion_excess_fields
            .get_or_create(&l)
            .inc_by(c.excess);
    }

    /// Registers the metrics (prefix them with `eddy_tables`).
    pub fn register(&self, r: &mut Registry) {
        r.register(
            "expansion_rows",
            "Rows written into expansion target tables",
            self.expansion_rows.clone(),
        );
        r.register(
            "expansion_parse_errors",
            "Expanded rows whose source was not JSON of the expansion schema's shape",
            self.expansion_parse_errors.clone(),
        );
        r.register(
            "expansion_missing_fields",
            "Expansion schema fields absent from expanded JSON",
            self.expansion_missing_fields.clone(),
        );
        r.register(
            "expansion_excess_fields",
            "JSON fields of expanded records that the expansion schema does not name",
            self.expansion_excess_fields.clone(),
        );
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
        r.register(
            "user_commits",
            "Commits that create, change or rename users' own Iceberg tables and views",
            self.user_commits.clone(),
        );
        r.register(
            "user_commit_conflicts",
            "Commits to users' tables refused because the table moved since it was read (409)",
            self.user_commit_conflicts.clone(),
        );
        r.register(
            "maintenance_expired_snapshots",
            "Snapshots of users' tables expired by maintenance",
            self.maintenance_expired_snapshots.clone(),
        );
        r.register(
            "maintenance_removed_files",
            "Files of users' tables removed by maintenance",
            self.maintenance_removed_files.clone(),
        );
        r.register(
            "inventory_rebuilds",
            "Rebuilds of buckets' inventory tables (the first load after an object change)",
            self.inventory_rebuilds.clone(),
        );
    }
}
