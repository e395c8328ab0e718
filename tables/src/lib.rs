//! Every Kafka topic as an Iceberg table: committed log data becomes Parquet data files
//! and Iceberg v2 snapshots stored as objects of the broker bucket (so Eddy's S3
//! endpoint serves them), and an Iceberg REST catalog lists and loads those tables and
//! keeps users' own tables (`warehouse`).
//!
//! This crate sits between `catalog` and the `eddy` binary so the catalog stays free of
//! Arrow, Parquet and Iceberg: the catalog only keeps each table's state
//! (`TopicTable`) consistent with its topic.

pub mod background;
pub mod error;
pub mod expansion;
pub mod inventory;
pub mod metrics;
pub mod objects;
pub mod preview;
pub mod rest;
pub mod rows;
pub mod schema;
pub mod seal;
pub mod warehouse;

pub use error::{TableError, TableResult};
pub use metrics::TableMetrics;
pub use seal::{NAMESPACE, Tabler};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
