//! DescribeTopicPartitions (KIP-966), which the Java admin client's `describeTopics` uses
//! since 3.8: the partitions of the named topics (every topic when none is named), in name
//! order, at most `response_partition_limit` partitions per response, continued from a
//! cursor. Leaders as Metadata gives them; each partition's only replica is its leader.

use crate::authz::*;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_topic_partitions_response;
use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse,
};

use crate::context::{Ctx, topic_name, uuid};
use crate::error::from_catalog;

/// Partitions per response when the request asks for none or more (Kafka's
/// `max.request.partition.size.limit` default).
const MAX_PARTITIONS: i32 = 2000;

/// Answers DescribeTopicPartitions.
pub async fn handle(
    ctx: &Ctx,
    req: DescribeTopicPartitionsRequest,
) -> DescribeTopicPartitionsResponse {
    let catalog = &ctx.broker.catalog;
    let mut names: Vec<String> = if req.topics.is_empty() {
        match catalog.kafka().topics().await {
            Ok(ts) => ts.into_iter().map(|t| t.name).collect(),
            Err(e) => {
                tracing::warn!(error = %e, "listing topics failed");
                Vec::new()
            }
        }
    } else {
        req.topics.iter().map(|t| t.name.to_string()).collect()
    };
    names.sort();
    names.dedup();
    let (from_topic, from_partition) = req.cursor.as_ref().map_or((String::new(), 0), |c| {
        (c.topic_name.to_string(), c.partition_index.max(0))
    });
    let mut budget = if req.response_partition_limit <= 0 {
        MAX_PARTITIONS
    } else {
        req.response_partition_limit.min(MAX_PARTITIONS)
    };
    let mut topics = Vec::new();
    let mut next = None;
    for name in names.into_iter().filter(|n| *n >= from_topic) {
        let record = match catalog.kafka().topic(&name).await {
            Ok(Some(t)) => t,
            found => {
                let error = match found {
                    Err(e) => from_catalog(&e),
                    _ => ResponseError::UnknownTopicOrPartition,
                };
                topics.push(
                    DescribeTopicPartitionsResponseTopic::default()
                        .with_name(Some(topic_name(&name)))
                        .with_error_code(error.code()),
                );
                continue;
            }
        };
        let first = if name == from_topic {
            from_partition
        } else {
            0
        };
        if budget == 0 {
            next = Some(
                Cursor::default()
                    .with_topic_name(topic_name(&name))
                    .with_partition_index(first),
            );
            break;
        }
        let end = (record.partitions as i32).min(first.saturating_add(budget));
        let partitions: Vec<_> = (first..end)
            .map(|p| {
                let leader = BrokerId(ctx.broker.cluster.leader(&name, p));
                DescribeTopicPartitionsResponsePartition::default()
                    .with_partition_index(p)
                    .with_leader_id(leader)
                    .with_leader_epoch(0)
                    .with_replica_nodes(vec![leader])
                    .with_isr_nodes(vec![leader])
                    .with_eligible_leader_replicas(Some(Vec::new()))
                    .with_last_known_elr(Some(Vec::new()))
            })
            .collect();
        budget -= end - first;
        topics.push(
            DescribeTopicPartitionsResponseTopic::default()
                .with_name(Some(topic_name(&name)))
                .with_topic_id(uuid(record.id))
                .with_is_internal(crate::offsets_topic::is_internal(&name))
                .with_partitions(partitions)
                .with_topic_authorized_operations(i32::MIN),
        );
        if end < record.partitions as i32 {
            next = Some(
                Cursor::default()
                    .with_topic_name(topic_name(&name))
                    .with_partition_index(end),
            );
            break;
        }
    }
    DescribeTopicPartitionsResponse::default()
        .with_topics(topics)
        .with_next_cursor(next)
}

authorize_each! {
    /// DescribeTopicPartitions needs KafkaDescribe on each topic.
    fn authorize(DescribeTopicPartitionsRequest, topics, keep, DESCRIBE)
}

/// The parts [`authorize`] refused, put back into the response with their errors.
pub(crate) fn answer_refused(
    mut r: DescribeTopicPartitionsResponse,
    refused: Refused,
) -> DescribeTopicPartitionsResponse {
    r.topics.extend(refused.topic_names().map(|name| {
        describe_topic_partitions_response::DescribeTopicPartitionsResponseTopic::default()
            .with_name(Some(name))
            .with_error_code(TOPIC_DENIED)
    }));
    r
}
