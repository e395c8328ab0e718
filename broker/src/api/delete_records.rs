//! DeleteRecords: moves partitions' log start offsets forward (-1: to the high
//! watermark), in one transaction per request, never past what a topic's expansion has
//! read.

use crate::authz::*;
use catalog::KafkaOp;
use catalog::Op;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::delete_records_response;
use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse, ResponseKind};

use crate::context::{Ctx, Reply, commit_under, unless_failed};
use crate::error::from_catalog;

/// Handles DeleteRecords. A topic with an expansion is sealed first, so its expansion has
/// read every record the request removes.
pub fn handle(ctx: Ctx, req: DeleteRecordsRequest) -> Reply {
    Box::pin(async move {
        for t in &req.topics {
            ctx.broker.seal_expanded(&t.name).await;
        }
        truncate(ctx, req).await.await
    })
}

async fn truncate(ctx: Ctx, req: DeleteRecordsRequest) -> Reply {
    let catalog = ctx.broker.catalog.clone();
    let mut ops = Vec::new();
    let mut plan = Vec::new();
    for t in req.topics {
        let (topic, unreadable) = crate::context::found(catalog.kafka().topic(&t.name).await);
        let mut parts = Vec::new();
        for p in t.partitions {
            let result = match (&topic, unreadable) {
                (_, Some(e)) => Err(e),
                (Some(topic), None) if topic.has_partition(p.partition_index) => {
                    if !ctx.leads(&topic.name, p.partition_index) {
                        Err(ResponseError::NotLeaderOrFollower)
                    } else {
                        match catalog
                            .kafka()
                            .partition(topic.id, p.partition_index as u32)
                            .await
                        {
                            Ok(Some(st)) => {
                                let target = if p.offset == -1 {
                                    st.next_offset as i64
                                } else {
                                    p.offset
                                };
                                if target < 0 || target as u64 > st.next_offset {
                                    Err(ResponseError::OffsetOutOfRange)
                                } else {
                                    let low = target.max(st.log_start_offset as i64);
                                    ops.push(Op::Kafka(KafkaOp::TruncateBefore {
                                        topic_id: topic.id,
                                        partition: p.partition_index as u32,
                                        offset: low as u64,
                                    }));
                                    Ok(low)
                                }
                            }
                            Ok(None) => Err(ResponseError::UnknownTopicOrPartition),
                            Err(e) => Err(from_catalog(&e)),
                        }
                    }
                }
                _ => Err(ResponseError::UnknownTopicOrPartition),
            };
            parts.push((p.partition_index, result));
        }
        plan.push((t.name, parts));
    }
    let commit = commit_under(catalog.as_ref(), ops, ctx.leases());
    Box::pin(async move {
        let failed = commit.await;
        let topics = plan
            .into_iter()
            .map(|(name, parts)| {
                let partitions = parts
                    .into_iter()
                    .map(|(index, r)| {
                        let r = unless_failed(r, failed);
                        let out =
                            DeleteRecordsPartitionResult::default().with_partition_index(index);
                        match r {
                            Ok(low) => out.with_low_watermark(low),
                            Err(e) => out.with_low_watermark(-1).with_error_code(e.code()),
                        }
                    })
                    .collect();
                DeleteRecordsTopicResult::default()
                    .with_name(name)
                    .with_partitions(partitions)
            })
            .collect();
        Some(ResponseKind::DeleteRecords(
            DeleteRecordsResponse::default().with_topics(topics),
        ))
    })
}

authorize_each! {
    /// DeleteRecords needs KafkaDelete on each topic.
    fn authorize(DeleteRecordsRequest, topics, keep, DELETE)
}

answer_refused_topics! {
    /// The parts [`authorize`] refused, put back into the response with their errors.
    fn answer_refused(DeleteRecordsResponse, topics)
    |name, parts| delete_records_response::DeleteRecordsTopicResult::default()
        .with_name(name)
        .with_partitions(parts),
    |p| delete_records_response::DeleteRecordsPartitionResult::default().with_partition_index(p)
        .with_error_code(TOPIC_DENIED).with_low_watermark(-1)
}
