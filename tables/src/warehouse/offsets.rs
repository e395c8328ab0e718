//! Kafka consumer offsets committed with a table commit: a sink that reads topics and
//! writes a table sends the offsets it read up to in the same `/v1/transactions/commit`,
//! so the rows and the offsets land in one catalog transaction. After a crash it resumes
//! from the committed offsets and finds exactly the rows they cover; a zombie writer's
//! commit fails its table requirement (the snapshot it built on moved) and takes its
//! offsets down with it. Offsets go to a group only these commits use: a group that
//! Kafka consumers coordinate through (it has coordinator state) is refused, as its
//! members' commits and these would overwrite each other.

use catalog::{GroupOp, OffsetRecord, Op};
use serde::Deserialize;

use crate::{TableError, TableResult};

/// The `eddy-kafka-offsets` member of a `CommitTransactionRequest`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct KafkaOffsets {
    /// The consumer group the offsets are committed for.
    pub group_id: String,
    /// One per partition.
    pub offsets: Vec<PartitionOffset>,
}

/// A partition's next offset to read.
#[derive(Debug, Deserialize)]
pub struct PartitionOffset {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// The next offset to read (Kafka's committed offset).
    pub offset: i64,
    /// Client metadata, returned by OffsetFetch as committed.
    #[serde(default)]
    pub metadata: Option<String>,
}

/// Most bytes of a partition's metadata (Kafka's `offset.metadata.max.bytes`).
const MAX_METADATA: usize = 4096;

/// The ops that commit `offsets`, after checking the group is not a coordinated one and
/// every partition exists. `may_read(kind, name)` says whether the caller may
/// `KafkaRead` the group (`kind` "group") or a topic ("topic"), as the broker decides it.
pub async fn ops(
    catalog: &dyn catalog::Catalog,
    offsets: KafkaOffsets,
    may_read: impl Fn(&str, &str) -> bool,
) -> TableResult<Vec<Op>> {
    let group = offsets.group_id;
    if group.is_empty() {
        return Err(TableError::BadRequest("group-id may not be empty".into()));
    }
    if !may_read("group", &group) {
        return Err(TableError::Forbidden(format!(
            "may not KafkaRead group {group} (a policy refuses it)"
        )));
    }
    if catalog.groups().group(&group).await?.is_some() {
        return Err(TableError::Conflict(format!(
            "group {group} is coordinated by Kafka consumers; commit table offsets under a group only table commits use"
        )));
    }
    let now = crate::now_ms();
    let mut ops = Vec::with_capacity(offsets.offsets.len());
    for p in offsets.offsets {
        if !may_read("topic", &p.topic) {
            return Err(TableError::Forbidden(format!(
                "may not KafkaRead topic {} (a policy refuses it)",
                p.topic
            )));
        }
        let topic = catalog.kafka().topic(&p.topic).await?;
        let Some(partition) = topic
            .filter(|t| t.has_partition(p.partition))
            .and_then(|_| u32::try_from(p.partition).ok())
        else {
            return Err(TableError::BadRequest(format!(
                "{}/{} is not a partition of an existing topic",
                p.topic, p.partition
            )));
        };
        if p.offset < 0 {
            return Err(TableError::BadRequest(format!(
                "offset {} of {}/{} is negative",
                p.offset, p.topic, p.partition
            )));
        }
        if p.metadata.as_ref().is_some_and(|m| m.len() > MAX_METADATA) {
            return Err(TableError::BadRequest(format!(
                "metadata of {}/{} is longer than {MAX_METADATA} bytes",
                p.topic, p.partition
            )));
        }
        ops.push(Op::Group(GroupOp::CommitOffset {
            group: group.clone(),
            topic: p.topic,
            partition,
            offset: OffsetRecord {
                offset: p.offset,
                leader_epoch: -1,
                metadata: p.metadata,
                commit_ms: now,
            },
        }));
    }
    Ok(ops)
}
