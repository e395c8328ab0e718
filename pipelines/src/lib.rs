//! Function pipelines: bucket, topic and schedule triggers feeding chains of HTTP
//! functions over Eddy's own topics, with retries, a dead-letter topic, ordering,
//! batching and an exactly-once hand-off between hops (`docs/pipelines.md`).
//!
//! - [`spec`]: the definition users write (YAML or JSON) and its checks
//! - [`lifecycle`]: apply, deploy, delete and status: every change to a pipeline record
//! - [`runtime`]: starts and stops the deployed revisions of a server
//! - [`link`]: one link over one source partition: deliver, then hand on in one commit
//! - [`deliver`]: CloudEvents over HTTP (binary mode, batches)
//! - [`event`]: CloudEvents from records and replies, and back to records
//! - [`records`]: reading a source partition read_committed; encoding batches
//! - [`instances`]: functions Eddy runs itself (`command:`)
//! - [`ticks`] and [`schedule`]: schedule triggers and their cron expressions
//! - [`trace`] and [`traces`]: W3C trace context of events; spans read back
//! - [`metrics`]: Prometheus metrics per link and function
//! - [`ownership`]: which server of a cluster runs which cursor
//! - [`otlp`]: spans exported over OTLP when a collector is configured

pub mod deliver;
pub mod error;
pub mod event;
pub mod instances;
pub mod lifecycle;
pub mod link;
pub mod metrics;
pub mod otlp;
pub mod ownership;
pub mod records;
pub mod runtime;
pub mod schedule;
pub mod spec;
pub mod ticks;
pub mod trace;
pub mod traces;

pub use error::PipelineError;
pub use lifecycle::{Applied, Pipelines};
pub use metrics::PipelineMetrics;
pub use runtime::Runtime;
pub use spec::Pipeline;

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
