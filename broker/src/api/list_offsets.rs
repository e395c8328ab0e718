//! ListOffsets: earliest (-2), latest (-1: the high watermark at read_uncommitted, the
//! last stable offset at read_committed), max timestamp (-3), and the first offset whose
//! timestamp is at or after a given time.

use crate::authz::*;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::list_offsets_response;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse, ResponseKind};
use kafka_protocol::records::RecordBatchDecoder;

use crate::context::{Ctx, Reply, topic_name};
use crate::error::from_catalog;

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;

/// (offset, timestamp) for one partition.
async fn lookup(
    ctx: &Ctx,
    topic: &catalog::TopicRecord,
    partition: u32,
    ts: i64,
    read_committed: bool,
) -> Result<(i64, i64), ResponseError> {
    let catalog = &ctx.broker.catalog;
    let (state, lso) = catalog
        .kafka()
        .stable_partition(topic.id, partition)
        .await
        .map_err(|e| from_catalog(&e))?
        .ok_or(ResponseError::UnknownTopicOrPartition)?;
    match ts {
        LATEST if read_committed => Ok((lso as i64, -1)),
        LATEST => Ok((state.next_offset as i64, -1)),
        EARLIEST => Ok((state.log_start_offset as i64, -1)),
        MAX_TIMESTAMP => {
            let index = catalog
                .kafka()
                .batch_index(topic.id, partition, state.log_start_offset, usize::MAX)
                .await
                .map_err(|e| from_catalog(&e))?;
            let best = index
                .iter()
                .max_by_key(|b| (b.max_timestamp, std::cmp::Reverse(b.base_offset)));
            match best {
                Some(b) => {
                    exact(ctx, topic, partition, b.base_offset, |t| {
                        t == b.max_timestamp
                    })
                    .await
                }
                None => Ok((-1, -1)),
            }
        }
        ts if ts >= 0 => {
            let index = catalog
                .kafka()
                .batch_index(topic.id, partition, state.log_start_offset, usize::MAX)
                .await
                .map_err(|e| from_catalog(&e))?;
            match index.iter().find(|b| b.max_timestamp >= ts) {
                Some(b) => exact(ctx, topic, partition, b.base_offset, |t| t >= ts).await,
                None => Ok((-1, -1)),
            }
        }
        _ => Err(ResponseError::InvalidRequest),
    }
}

/// The first record of the batch at `base` whose timestamp satisfies `hit`.
async fn exact(
    ctx: &Ctx,
    topic: &catalog::TopicRecord,
    partition: u32,
    base: u64,
    hit: impl Fn(i64) -> bool,
) -> Result<(i64, i64), ResponseError> {
    let batches = ctx
        .broker
        .catalog
        .kafka()
        .read_batches(topic.id, partition, base, 1)
        .await
        .map_err(|e| from_catalog(&e))?;
    let Some(b) = batches.first() else {
        return Ok((-1, -1));
    };
    let mut bytes = b.bytes.clone();
    let set = RecordBatchDecoder::decode(&mut bytes).map_err(|_| ResponseError::CorruptMessage)?;
    Ok(set
        .records
        .iter()
        .find(|r| hit(r.timestamp))
        .map_or((b.base_offset as i64, b.max_timestamp), |r| {
            (r.offset, r.timestamp)
        }))
}

/// Handles ListOffsets.
pub async fn handle(ctx: Ctx, req: ListOffsetsRequest) -> Reply {
    Box::pin(async move {
        let c = ctx;
        let read_committed = req.isolation_level == 1;
        let mut topics = Vec::with_capacity(req.topics.len());
        for t in &req.topics {
            let (topic, unreadable) =
                crate::context::found(c.broker.catalog.kafka().topic(&t.name).await);
            let mut partitions = Vec::with_capacity(t.partitions.len());
            for p in &t.partitions {
                let r = ListOffsetsPartitionResponse::default()
                    .with_partition_index(p.partition_index)
                    .with_offset(-1)
                    .with_timestamp(-1);
                let found = match (&topic, unreadable) {
                    (_, Some(e)) => Err(e),
                    (None, None) => Err(ResponseError::UnknownTopicOrPartition),
                    (Some(topic), None)
                        if p.partition_index < 0
                            || p.partition_index as u32 >= topic.partitions =>
                    {
                        Err(ResponseError::UnknownTopicOrPartition)
                    }
                    (Some(topic), None) if !c.leads(&topic.name, p.partition_index) => {
                        Err(ResponseError::NotLeaderOrFollower)
                    }
                    (Some(topic), None) => {
                        lookup(
                            &c,
                            topic,
                            p.partition_index as u32,
                            p.timestamp,
                            read_committed,
                        )
                        .await
                    }
                };
                partitions.push(match found {
                    Ok((offset, ts)) => r.with_offset(offset).with_timestamp(ts),
                    Err(e) => r.with_error_code(e.code()),
                });
            }
            topics.push(
                ListOffsetsTopicResponse::default()
                    .with_name(topic_name(&t.name))
                    .with_partitions(partitions),
            );
        }
        Some(ResponseKind::ListOffsets(
            ListOffsetsResponse::default().with_topics(topics),
        ))
    })
}

authorize_each! {
    /// ListOffsets needs KafkaDescribe on each topic.
    fn authorize(ListOffsetsRequest, topics, keep, DESCRIBE)
}

answer_refused_topics! {
    /// The parts [`authorize`] refused, put back into the response with their errors.
    fn answer_refused(ListOffsetsResponse, topics)
    |name, parts| list_offsets_response::ListOffsetsTopicResponse::default()
        .with_name(name)
        .with_partitions(parts),
    |p| list_offsets_response::ListOffsetsPartitionResponse::default().with_partition_index(p)
        .with_error_code(TOPIC_DENIED).with_timestamp(-1).with_offset(-1)
}
