//! Metadata: every listener address is a broker; each partition's leader is hashed onto
//! them and is its only replica and in-sync replica. Topic ids are stable.

use crate::authz::*;
use catalog::KafkaOp;
use kafka_protocol::messages::metadata_response;
use std::collections::BTreeMap;

use catalog::{Op, TopicRecord, Transaction};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, ResponseKind};

use crate::context::{Ctx, Reply, sb, topic_name, uuid};
use crate::error::from_catalog;

/// The brokers as metadata lists them.
pub fn brokers(ctx: &Ctx) -> Vec<MetadataResponseBroker> {
    let cluster = &ctx.broker.cluster;
    (0..cluster.size() as i32)
        .map(|node| {
            let (host, port) = cluster.advertised(node, ctx.local);
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(node))
                .with_host(sb(&host))
                .with_port(i32::from(port))
        })
        .collect()
}

fn describe(ctx: &Ctx, t: &TopicRecord) -> MetadataResponseTopic {
    let partitions = (0..t.partitions as i32)
        .map(|p| {
            let leader = BrokerId(ctx.broker.cluster.leader(&t.name, p));
            MetadataResponsePartition::default()
                .with_partition_index(p)
                .with_leader_id(leader)
                .with_leader_epoch(0)
                .with_replica_nodes(vec![leader])
                .with_isr_nodes(vec![leader])
        })
        .collect();
    MetadataResponseTopic::default()
        .with_name(Some(topic_name(&t.name)))
        .with_topic_id(uuid(t.id))
        .with_is_internal(crate::offsets_topic::is_internal(&t.name))
        .with_partitions(partitions)
}

fn missing(name: Option<&str>, id: uuid::Uuid, error: ResponseError) -> MetadataResponseTopic {
    MetadataResponseTopic::default()
        .with_name(name.map(topic_name))
        .with_topic_id(id)
        .with_error_code(error.code())
}

/// Answers Metadata; creates unknown topics first when auto-create is on and asked for.
pub async fn handle(ctx: Ctx, req: MetadataRequest) -> Reply {
    let catalog = ctx.broker.catalog.clone();
    let auto =
        ctx.broker.config.auto_create_topics && (ctx.version < 4 || req.allow_auto_topic_creation);
    let mut creating = Vec::new();
    if auto && let Some(topics) = &req.topics {
        for t in topics {
            if let Some(name) = &t.name
                && super::topics::valid_name(name).is_ok()
                && matches!(catalog.kafka().topic(name).await, Ok(None))
            {
                let record = TopicRecord {
                    name: name.to_string(),
                    id: uuid::Uuid::new_v4().as_u128(),
                    partitions: ctx.broker.config.default_partitions,
                    configs: BTreeMap::new(),
                    created_ms: crate::context::now_ms(),
                };
                creating.push(catalog.commit(Transaction::new(vec![Op::Kafka(
                    KafkaOp::CreateTopic(record),
                )])));
            }
        }
    }
    Box::pin(async move {
        for c in creating {
            // Created here or concurrently elsewhere: either way it exists now.
            let _ = c.await;
        }
        // In v0 an empty list asks for every topic (null came with v1), as Sarama's
        // ClusterAdmin.ListTopics asks.
        let every = req.topics.is_none()
            || (ctx.version == 0 && req.topics.as_ref().is_some_and(|t| t.is_empty()));
        let topics = match req.topics.as_ref().filter(|_| !every) {
            None => match catalog.kafka().topics().await {
                Ok(all) => all.iter().map(|t| describe(&ctx, t)).collect(),
                Err(e) => {
                    tracing::error!(error = %e, "metadata: listing topics failed");
                    Vec::new()
                }
            },
            Some(wanted) => {
                let mut out = Vec::new();
                for w in wanted.iter() {
                    out.push({
                        let found = match &w.name {
                            Some(name) => catalog.kafka().topic(name).await,
                            None => catalog.kafka().topic_by_id(w.topic_id.as_u128()).await,
                        };
                        match found {
                            Ok(Some(t)) => describe(&ctx, &t),
                            Ok(None) if w.name.is_none() => {
                                missing(None, w.topic_id, ResponseError::UnknownTopicId)
                            }
                            Ok(None) => {
                                let name = w.name.as_ref().map(|n| n.0.as_str());
                                // Not retriable, unlike an unknown topic: it can never exist.
                                let error = if name
                                    .is_some_and(|n| super::topics::valid_name(n).is_err())
                                {
                                    ResponseError::InvalidTopicException
                                } else {
                                    ResponseError::UnknownTopicOrPartition
                                };
                                missing(name, w.topic_id, error)
                            }
                            Err(e) => missing(
                                w.name.as_ref().map(|n| n.0.as_str()),
                                w.topic_id,
                                from_catalog(&e),
                            ),
                        }
                    });
                }
                out
            }
        };
        Some(ResponseKind::Metadata(
            MetadataResponse::default()
                .with_brokers(brokers(&ctx))
                .with_cluster_id(Some(sb(&ctx.broker.config.cluster_id)))
                .with_controller_id(BrokerId(0))
                .with_topics(topics),
        ))
    })
}

/// Metadata needs KafkaDescribe on each topic (an all-topics request lists only those).
pub(crate) fn authorize(
    ctx: &Ctx,
    mut r: MetadataRequest,
    out: &mut Refused,
) -> Authorized<MetadataRequest> {
    match r.topics.take() {
        Some(topics) => r.topics = Some(out.keep(ctx, DESCRIBE, topics)),
        None => out.hidden = true,
    }
    Ok(r)
}

/// The parts [`authorize`] refused, put back into the response with their errors.
pub(crate) fn answer_refused(
    ctx: &Ctx,
    mut r: MetadataResponse,
    refused: Refused,
) -> MetadataResponse {
    if refused.hidden {
        r.topics.retain(|t| {
            t.name
                .as_ref()
                .is_none_or(|n| ctx.may_topic(DESCRIBE, &n.0))
        });
    }
    r.topics.extend(refused.topic_names().map(|name| {
        metadata_response::MetadataResponseTopic::default()
            .with_name(Some(name))
            .with_error_code(TOPIC_DENIED)
    }));
    r
}
