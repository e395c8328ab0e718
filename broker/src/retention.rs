//! Retention: deletes the oldest batches of a topic's partitions once they are older
//! than `retention.ms` or the partition holds more than `retention.bytes`, as Kafka does
//! for `cleanup.policy=delete`, at batch rather than segment granularity.
//!
//! A pass moves the log start offsets of a topic's due partitions in one catalog
//! transaction, the operation DeleteRecords uses, so fetches, ListOffsets and the topic's
//! Iceberg table see a partition lose its head at once, and the batches' log space is
//! released with them.

use catalog::KafkaOp;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use catalog::{BatchInfo, Catalog, CatalogResult, Op, PartitionState};
use tokio::sync::watch;

use crate::configs;
use crate::context::{commit_under, now_ms};
use crate::{Broker, Holdings};

/// Batch index entries read at a time while walking a partition's head.
const PAGE: usize = 1024;

/// What a topic keeps under `cleanup.policy=delete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// A batch whose newest timestamp is older than this many ms goes; `None`: no limit.
    pub max_age_ms: Option<i64>,
    /// The oldest batches go while the rest still hold at least this many bytes;
    /// `None`: no limit.
    pub max_bytes: Option<u64>,
}

impl Policy {
    /// The policy a topic's configs set, if any: none when its `cleanup.policy` lacks
    /// `delete` or both limits are -1.
    pub fn of(configs: &BTreeMap<String, String>) -> Option<Policy> {
        let cleanup = configs::value(configs, "cleanup.policy");
        if !cleanup.split(',').any(|p| p.trim() == "delete") {
            return None;
        }
        let limit = |name| {
            configs::value(configs, name)
                .parse::<i64>()
                .ok()
                .filter(|v| *v >= 0)
        };
        let policy = Policy {
            max_age_ms: limit("retention.ms"),
            max_bytes: limit("retention.bytes").map(|v| v as u64),
        };
        (policy.max_age_ms.is_some() || policy.max_bytes.is_some()).then_some(policy)
    }
}

/// A walk over a partition's batches from its head, deciding where it will start.
#[derive(Debug, Clone, Copy)]
pub struct Cut {
    /// The first offset kept so far.
    pub start: u64,
    /// Bytes of the batches from `start` on.
    pub remaining: u64,
    /// Batches older than this (ms since the epoch) are due; `i64::MIN` when the policy
    /// has no age limit.
    cutoff: i64,
    max_bytes: Option<u64>,
    /// Nothing from this offset on goes: the records a topic's expansion has not read.
    limit: u64,
}

impl Cut {
    /// A walk over a partition in `state` under `policy` at `now_ms`.
    pub fn new(state: &PartitionState, policy: Policy, now_ms: i64) -> Self {
        Self {
            start: state.log_start_offset,
            remaining: state.bytes,
            cutoff: policy
                .max_age_ms
                .map_or(i64::MIN, |ms| now_ms.saturating_sub(ms)),
            max_bytes: policy.max_bytes,
            limit: u64::MAX,
        }
    }

    /// Keeps every record from `limit` on (none: no limit), as an expansion needs until
    /// its table holds them.
    pub fn keeping_from(mut self, limit: Option<u64>) -> Self {
        self.limit = limit.unwrap_or(u64::MAX);
        self
    }

    /// Takes the next batch from the head: deletes it if it is too old or the size limit
    /// lets it go, and says whether the walk goes on. Batches go strictly in order, so a
    /// young batch keeps older-stamped ones behind it (as Kafka's segments do).
    pub fn step(&mut self, b: &BatchInfo) -> bool {
        if b.last_offset < self.start {
            return true;
        }
        if b.last_offset >= self.limit {
            return false;
        }
        let len = u64::from(b.len);
        let expired = b.max_timestamp < self.cutoff;
        let oversize = self
            .max_bytes
            .is_some_and(|m| self.remaining.saturating_sub(len) >= m);
        if !(expired || oversize) {
            return false;
        }
        self.start = b.last_offset + 1;
        self.remaining = self.remaining.saturating_sub(len);
        true
    }
}

/// Where a partition should start under `policy` now, if that is past its log start
/// (never past `limit`, the first record a topic's expansion has not read).
pub async fn new_start(
    catalog: &dyn Catalog,
    topic_id: u128,
    partition: u32,
    state: &PartitionState,
    policy: Policy,
    now_ms: i64,
    limit: Option<u64>,
) -> CatalogResult<Option<Cut>> {
    let mut cut = Cut::new(state, policy, now_ms).keeping_from(limit);
    loop {
        let page = catalog
            .kafka()
            .batch_index(topic_id, partition, cut.start, PAGE)
            .await?;
        let full = page.len() == PAGE;
        if !page.iter().all(|b| cut.step(b)) || !full {
            break;
        }
    }
    Ok((cut.start > state.log_start_offset).then_some(cut))
}

/// What a pass does to one topic: its truncations and what they delete.
struct TopicPlan {
    name: String,
    ops: Vec<Op>,
    /// The leases of the partitions' leaders, which the truncations are committed under.
    leases: Vec<catalog::Lease>,
    records: u64,
    bytes: u64,
}

/// The truncations every topic is due at `now_ms` (topics with nothing to delete left out).
async fn plan(
    catalog: &dyn Catalog,
    holdings: &Holdings,
    now_ms: i64,
) -> CatalogResult<Vec<TopicPlan>> {
    let mut plans = Vec::new();
    for topic in catalog.kafka().topics().await? {
        let Some(policy) = Policy::of(&topic.configs) else {
            continue;
        };
        let mut plan = TopicPlan {
            name: topic.name.clone(),
            ops: Vec::new(),
            leases: Vec::new(),
            records: 0,
            bytes: 0,
        };
        for partition in 0..topic.partitions {
            // A partition's retention is its leader's work.
            if !holdings.leads(&topic.name, partition as i32) {
                continue;
            }
            let Some(state) = catalog.kafka().partition(topic.id, partition).await? else {
                continue;
            };
            let limit = catalog.iceberg().expanded_to(&topic, partition).await?;
            let cut =
                new_start(catalog, topic.id, partition, &state, policy, now_ms, limit).await?;
            if let Some(cut) = cut {
                plan.records += cut.start - state.log_start_offset;
                plan.bytes += state.bytes - cut.remaining;
                plan.ops.push(Op::Kafka(KafkaOp::TruncateBefore {
                    topic_id: topic.id,
                    partition,
                    offset: cut.start,
                }));
                plan.leases
                    .extend(holdings.under_leader(&topic.name, partition as i32));
            }
        }
        if !plan.ops.is_empty() {
            plans.push(plan);
        }
    }
    Ok(plans)
}

/// Applies every topic's retention once; returns the records deleted.
pub async fn pass(broker: &Arc<Broker>) -> CatalogResult<u64> {
    let catalog = broker.catalog.clone();
    let now = now_ms();
    let plans = plan(catalog.as_ref(), &broker.holdings, now).await?;
    let mut deleted = 0;
    for mut p in plans {
        p.leases.sort_by(|a, b| a.address.cmp(&b.address));
        p.leases.dedup();
        // One transaction per topic: a topic deleted meanwhile fails only its own.
        match commit_under(catalog.as_ref(), p.ops, p.leases).await {
            None => {
                tracing::info!(topic = %p.name, records = p.records, bytes = p.bytes, "retention deleted records");
                broker.metrics.retention_deleted_records.inc_by(p.records);
                broker.metrics.retention_deleted_bytes.inc_by(p.bytes);
                deleted += p.records;
            }
            // Most likely the topic was deleted or recreated since planning; the next
            // pass plans it afresh.
            Some(e) => {
                tracing::warn!(topic = %p.name, error = ?e, "retention could not commit")
            }
        }
    }
    broker.metrics.retention_passes.inc();
    Ok(deleted)
}

/// Runs a retention pass every `every` until `shutdown` flips.
pub async fn run(broker: Arc<Broker>, every: Duration, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = shutdown.changed() => return,
        }
        if let Err(e) = pass(&broker).await {
            tracing::warn!(error = %e, "retention pass failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(base: u64, last: u64, ts: i64, len: u32) -> BatchInfo {
        BatchInfo {
            base_offset: base,
            last_offset: last,
            max_timestamp: ts,
            len,
        }
    }

    fn state(log_start_offset: u64, next_offset: u64, bytes: u64) -> PartitionState {
        PartitionState {
            next_offset,
            log_start_offset,
            bytes,
        }
    }

    fn by_age(ms: i64) -> Policy {
        Policy {
            max_age_ms: Some(ms),
            max_bytes: None,
        }
    }

    fn by_size(bytes: u64) -> Policy {
        Policy {
            max_age_ms: None,
            max_bytes: Some(bytes),
        }
    }

    fn configs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn policy_follows_cleanup_policy_and_limits() {
        // Kafka's defaults: seven days, no size limit.
        assert_eq!(Policy::of(&configs(&[])), Some(by_age(604_800_000)));
        assert_eq!(Policy::of(&configs(&[("cleanup.policy", "compact")])), None);
        assert_eq!(Policy::of(&configs(&[("retention.ms", "-1")])), None);
        assert_eq!(
            Policy::of(&configs(&[
                ("cleanup.policy", "compact,delete"),
                ("retention.ms", "-1"),
                ("retention.bytes", "100"),
            ])),
            Some(by_size(100))
        );
    }

    fn walk(state: PartitionState, policy: Policy, now: i64, batches: &[BatchInfo]) -> u64 {
        walk_keeping(state, policy, now, batches, None)
    }

    fn walk_keeping(
        state: PartitionState,
        policy: Policy,
        now: i64,
        batches: &[BatchInfo],
        limit: Option<u64>,
    ) -> u64 {
        let mut cut = Cut::new(&state, policy, now).keeping_from(limit);
        for b in batches {
            if !cut.step(b) {
                break;
            }
        }
        cut.start
    }

    #[test]
    fn records_an_expansion_has_not_read_are_kept() {
        let (policy, state) = (by_age(1000), state(0, 30, 300));
        let batches = [
            batch(0, 9, 100, 100),
            batch(10, 19, 100, 100),
            batch(20, 29, 100, 100),
        ];
        assert_eq!(walk_keeping(state, policy, 5000, &batches, None), 30);
        // Read up to 15: the batch holding 15 and those after it stay.
        assert_eq!(walk_keeping(state, policy, 5000, &batches, Some(15)), 10);
        assert_eq!(walk_keeping(state, policy, 5000, &batches, Some(20)), 20);
        assert_eq!(walk_keeping(state, policy, 5000, &batches, Some(0)), 0);
    }

    #[test]
    fn age_deletes_the_old_head_and_stops_at_the_first_young_batch() {
        let (policy, state) = (by_age(1000), state(0, 40, 400));
        let batches = [
            batch(0, 9, 100, 100),
            batch(10, 19, 200, 100),
            batch(20, 29, 5000, 100),
            // older-stamped, but behind a young batch: kept
            batch(30, 39, 100, 100),
        ];
        assert_eq!(walk(state, policy, 5500, &batches), 20);
        // A batch exactly at the cutoff is kept.
        assert_eq!(walk(state, policy, 1100, &batches), 0);
        assert_eq!(walk(state, policy, 1101, &batches), 10);
        // Everything expired: the partition becomes empty.
        assert_eq!(walk(state, policy, 10_000, &batches[..3]), 30);
    }

    #[test]
    fn size_keeps_the_smallest_suffix_holding_the_limit() {
        let state = state(0, 50, 500);
        let batches: Vec<_> = (0..5).map(|i| batch(i * 10, i * 10 + 9, 0, 100)).collect();
        // 500 -> 400 -> 300 bytes: one more would leave 200 < 250.
        assert_eq!(walk(state, by_size(250), 0, &batches), 20);
        assert_eq!(walk(state, by_size(300), 0, &batches), 20);
    }

    #[test]
    fn a_head_inside_a_batch_counts_that_batch() {
        // DeleteRecords left the start inside the first stored batch.
        let batches = [batch(0, 9, 0, 100), batch(10, 19, 1000, 100)];
        assert_eq!(walk(state(5, 20, 200), by_age(10), 100, &batches), 10);
    }
}
