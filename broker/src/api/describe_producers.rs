//! DescribeProducers: the idempotent and transactional producers a partition has seen,
//! with each one's epoch, last sequence and the first offset of its open transaction.

use crate::authz::{READ, TOPIC_DENIED, answer_refused_topics, authorize_each};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse, ProducerId};

use crate::context::{Ctx, topic_name};
use crate::error::from_catalog;

async fn producers(
    ctx: &Ctx,
    topic: &catalog::TopicRecord,
    p: i32,
) -> Result<Vec<ProducerState>, ResponseError> {
    if !topic.has_partition(p) {
        return Err(ResponseError::UnknownTopicOrPartition);
    }
    if !ctx.leads(&topic.name, p) {
        return Err(ResponseError::NotLeaderOrFollower);
    }
    let catalog = &ctx.broker.catalog;
    let open = catalog
        .txns()
        .txn_partition(topic.id, p as u32)
        .await
        .map_err(|e| from_catalog(&e))?
        .open;
    let states = catalog
        .kafka()
        .producers_of(topic.id, p as u32)
        .await
        .map_err(|e| from_catalog(&e))?;
    Ok(states
        .into_iter()
        .map(|(id, s)| {
            let start = open
                .iter()
                .find(|o| o.producer_id == id)
                .map_or(-1, |o| o.first_offset as i64);
            ProducerState::default()
                .with_producer_id(ProducerId(id))
                .with_producer_epoch(i32::from(s.epoch))
                .with_last_sequence(s.recent.last().map_or(-1, |r| r.1))
                // Eddy keeps no per-producer timestamp or coordinator epoch.
                .with_last_timestamp(-1)
                .with_coordinator_epoch(-1)
                .with_current_txn_start_offset(start)
        })
        .collect())
}

/// Handles DescribeProducers.
pub async fn handle(ctx: &Ctx, req: DescribeProducersRequest) -> DescribeProducersResponse {
    let topics = {
        let mut out = Vec::new();
        for t in req.topics.into_iter() {
            out.push({
                let (topic, unreadable) =
                    crate::context::found(ctx.broker.catalog.kafka().topic(&t.name).await);
                let partitions = {
                    let mut out = Vec::new();
                    for p in t.partition_indexes.into_iter() {
                        out.push({
                            let r = PartitionResponse::default().with_partition_index(p);
                            let found = match (&topic, unreadable) {
                                (_, Some(e)) => Err(e),
                                (None, None) => Err(ResponseError::UnknownTopicOrPartition),
                                (Some(topic), None) => producers(ctx, topic, p).await,
                            };
                            match found {
                                Ok(active) => r.with_active_producers(active),
                                Err(e) => r.with_error_code(e.code()),
                            }
                        });
                    }
                    out
                };
                TopicResponse::default()
                    .with_name(topic_name(&t.name))
                    .with_partitions(partitions)
            });
        }
        out
    };
    DescribeProducersResponse::default().with_topics(topics)
}

authorize_each! {
    /// DescribeProducers needs KafkaRead on each topic.
    fn authorize(DescribeProducersRequest, topics, keep, READ)
}

answer_refused_topics! {
    /// The topics [`authorize`] refused, put back into the response with their error.
    fn answer_refused(DescribeProducersResponse, topics)
    |name, parts| TopicResponse::default().with_name(name).with_partitions(parts),
    |p| PartitionResponse::default().with_partition_index(p).with_error_code(TOPIC_DENIED)
}
