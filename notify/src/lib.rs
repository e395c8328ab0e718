//! Bucket notifications: configurations, filters, and the event records written as topic
//! rows in the same transaction as the object change.
//!
//! - [`config`]: a bucket's configurations (topic, events, prefix/suffix filter), kept
//!   in the bucket record's settings
//! - [`event`]: the kinds of change and their names (AWS, MinIO, CloudEvents types)
//! - [`record`]: one event as a Kafka record (S3 event JSON + CloudEvents binary-mode
//!   headers) and records as a magic-v2 batch
//! - [`partition`]: Kafka's default partitioner, so one object's events share a partition
//! - [`metadata`]: a bucket's metadata configuration (its change journal topic and
//!   live inventory table)
//! - [`notifier`]: a change's `Op::Append` rows, for the S3 gateway to commit with it

pub mod config;
pub mod error;
pub mod event;
pub mod metadata;
pub mod metrics;
pub mod notifier;
pub mod partition;
pub mod record;

pub use config::{Destination, NotificationConfig, PIPELINE_KEY_PREFIX, Rule, RuleSpec};
pub use error::{ConfigError, RecordError};
pub use event::EventKind;
pub use metadata::MetadataConfig;
pub use metrics::NotifyMetrics;
pub use notifier::{DEFAULT_CE_TYPE_PREFIX, Notifier, NotifySettings, Rows, Targets};
pub use record::{ObjectChange, Requester};
