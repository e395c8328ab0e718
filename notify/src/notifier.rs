//! Turning an object change into the `KafkaOp::Append` rows of its events, to commit in the
//! same transaction as the change.

use catalog::KafkaOp;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use catalog::{BucketRecord, Catalog, CatalogError, Op, TopicRecord};

use crate::config::NotificationConfig;
use crate::metrics::NotifyMetrics;
use crate::partition::partition_for;
use crate::record::{Envelope, EventRecord, ObjectChange, Requester, encode_batch, event_record};

/// The default prefix of `ce_type`: Eddy's own. The VAST event format, whose types the
/// records follow, has `vastdata.com:` (`--notify-ce-type-prefix vastdata.com:`).
pub const DEFAULT_CE_TYPE_PREFIX: &str = "eddy:";

/// Settings of the event records.
#[derive(Debug, Clone)]
pub struct NotifySettings {
    /// Prefix of `ce_type`.
    pub ce_type_prefix: String,
}

impl Default for NotifySettings {
    fn default() -> Self {
        Self {
            ce_type_prefix: DEFAULT_CE_TYPE_PREFIX.into(),
        }
    }
}

/// The event rows of one change.
#[derive(Debug, Default)]
pub struct Rows {
    /// One `KafkaOp::Append` per (topic, partition).
    pub ops: Vec<Op>,
    /// Records in them.
    pub events: u64,
}

/// Builds event rows; one per server.
#[derive(Debug, Default)]
pub struct Notifier {
    settings: NotifySettings,
    metrics: NotifyMetrics,
    last_sequencer: AtomicU64,
    order: Mutex<()>,
}

/// What [`Notifier::targets`] read: the bucket's configuration (none without one) and
/// each topic its matching rules name (`None`: the topic does not exist).
#[derive(Debug, Default)]
pub struct Targets {
    config: Option<NotificationConfig>,
    topics: BTreeMap<String, Option<TopicRecord>>,
}

impl Notifier {
    /// A notifier with these settings.
    pub fn new(settings: NotifySettings) -> Self {
        Self {
            settings,
            metrics: NotifyMetrics::default(),
            last_sequencer: AtomicU64::new(0),
            order: Mutex::new(()),
        }
    }

    /// Held while a change's rows are built (taking their sequencers) and its
    /// transaction is queued for the committer, so that sequencers follow commit order.
    pub fn ordered(&self) -> MutexGuard<'_, ()> {
        self.order.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Its metrics.
    pub fn metrics(&self) -> &NotifyMetrics {
        &self.metrics
    }

    /// A sequencer above every one handed out before: the clock in nanoseconds, or the
    /// last one plus one when the clock has not moved on (or went back).
    fn next_sequencer(&self) -> u64 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let prev = self
            .last_sequencer
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
                Some(now.max(last + 1))
            })
            .unwrap_or_default();
        now.max(prev + 1)
    }

    /// The topics the rules of a bucket's notification configuration (`config`, as the
    /// request decoded it from the bucket's record) name for `changes`, read from the
    /// catalog: the first half of [`Notifier::rows`], done before the caller takes the
    /// ordering lock ([`Notifier::ordered`]), since catalog reads may wait on the network.
    pub async fn targets(
        &self,
        catalog: &dyn Catalog,
        config: Option<NotificationConfig>,
        changes: &[ObjectChange],
    ) -> Result<Targets, CatalogError> {
        let mut topics = BTreeMap::new();
        if let Some(config) = &config {
            for change in changes {
                for rule in config.matching(change.kind, &change.key) {
                    if !topics.contains_key(&rule.topic) {
                        let t = catalog.kafka().topic(&rule.topic).await?;
                        topics.insert(rule.topic.clone(), t);
                    }
                }
            }
        }
        Ok(Targets { config, topics })
    }

    /// The rows for `changes` (all in `bucket`, whose region is `region`) under the
    /// bucket's notification configuration, as `targets` read it for the same changes.
    /// Takes a sequencer per change. A configuration whose topic no longer exists loses
    /// its events (counted in `eddy_notify_dropped_events` and logged); the change
    /// itself goes on.
    pub fn rows(
        &self,
        targets: &Targets,
        bucket: &BucketRecord,
        region: &str,
        changes: &[ObjectChange],
        requester: &Requester,
    ) -> Result<Rows, CatalogError> {
        let Some(config) = &targets.config else {
            return Ok(Rows::default());
        };
        let mut batches: BTreeMap<(u128, u32), (bool, Vec<EventRecord>)> = BTreeMap::new();
        let time_ms = now_ms();
        for change in changes {
            let sequencer = self.next_sequencer();
            for rule in config.matching(change.kind, &change.key) {
                let Some(Some(topic)) = targets.topics.get(&rule.topic) else {
                    self.metrics.dropped.inc();
                    tracing::warn!(
                        bucket = %bucket.name,
                        configuration = %rule.id,
                        topic = %rule.topic,
                        "notification topic does not exist; event dropped"
                    );
                    continue;
                };
                let env = Envelope {
                    region,
                    ce_type_prefix: &self.settings.ce_type_prefix,
                    bucket_owner: &bucket.owner,
                    requester,
                    time_ms,
                    sequencer,
                    configuration_id: &rule.id,
                };
                let record = event_record(change, &env);
                let partition = partition_for(&record.key, topic.partitions);
                let log_append_time = topic
                    .configs
                    .get("message.timestamp.type")
                    .is_some_and(|t| t == "LogAppendTime");
                batches
                    .entry((topic.id, partition))
                    .or_insert_with(|| (log_append_time, Vec::new()))
                    .1
                    .push(record);
            }
        }
        let mut rows = Rows::default();
        for ((topic_id, partition), (log_append_time, records)) in batches {
            let batch = encode_batch(&records, log_append_time)
                .map_err(|e| CatalogError::Store(e.to_string()))?;
            rows.events += records.len() as u64;
            rows.ops.push(Op::Kafka(KafkaOp::Append {
                topic_id,
                partition,
                offset_count: batch.offset_count,
                max_timestamp: batch.max_timestamp,
                batch: batch.bytes,
                producer: None,
                transactional_id: None,
            }));
        }
        Ok(rows)
    }

    /// Counts the events of a committed change.
    pub fn committed(&self, rows: &Rows) {
        self.metrics.events.inc_by(rows.events);
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
