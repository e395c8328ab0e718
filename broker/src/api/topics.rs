//! Topic admin: CreateTopics, DeleteTopics (by name or id) and CreatePartitions. Each
//! topic is its own transaction, so one bad topic does not fail the others.

use crate::authz::*;
use catalog::KafkaOp;
use kafka_protocol::messages::{
    create_partitions_response, create_topics_response, delete_topics_response,
};
use std::collections::BTreeMap;

use catalog::{CatalogError, Op, TopicRecord, Transaction};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse,
    DeleteTopicsRequest, DeleteTopicsResponse, ResponseKind,
};

use crate::configs;
use crate::context::{Ctx, Reply, sb, topic_name, uuid};
use crate::error::from_catalog;

/// Most partitions one topic may have.
pub const MAX_PARTITIONS: i32 = 20_000;

/// Kafka's topic name rules.
pub fn valid_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "." || name == ".." {
        return Err(format!("topic name {name:?} is illegal"));
    }
    if name.len() > 249 {
        return Err("topic name is longer than 249 characters".into());
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(format!(
            "topic name {name:?} may only contain ASCII letters, digits, '.', '_' and '-'"
        ));
    }
    Ok(())
}

fn failure(e: ResponseError, message: impl Into<String>) -> (i16, Option<String>) {
    (e.code(), Some(message.into()))
}

/// CreateTopics.
pub async fn create(ctx: Ctx, req: CreateTopicsRequest) -> Reply {
    let catalog = ctx.broker.catalog.clone();
    let default_partitions = ctx.broker.config.default_partitions as i32;
    let mut pending = Vec::new();
    for t in req.topics {
        let name = t.name.to_string();
        let partitions = if !t.assignments.is_empty() {
            t.assignments.len() as i32
        } else if t.num_partitions == -1 {
            default_partitions
        } else {
            t.num_partitions
        };
        let configs: BTreeMap<String, String> = t
            .configs
            .iter()
            .filter_map(|c| {
                c.value
                    .as_ref()
                    .map(|v| (c.name.to_string(), v.to_string()))
            })
            .collect();
        let check = if let Err(m) = valid_name(&name) {
            Err(failure(ResponseError::InvalidTopicException, m))
        } else if !(1..=MAX_PARTITIONS).contains(&partitions) {
            Err(failure(
                ResponseError::InvalidPartitions,
                format!("partitions must be between 1 and {MAX_PARTITIONS}, not {partitions}"),
            ))
        } else if t.replication_factor == 0 || t.replication_factor < -1 {
            Err(failure(
                ResponseError::InvalidReplicationFactor,
                "replication factor must be -1 or at least 1 (it is accepted and ignored)",
            ))
        } else if let Err(m) = configs::validate_all(&configs) {
            Err(failure(ResponseError::InvalidConfig, m))
        } else if matches!(catalog.kafka().topic(&name).await, Ok(Some(_))) {
            Err(failure(
                ResponseError::TopicAlreadyExists,
                format!("topic {name} already exists"),
            ))
        } else {
            Ok(())
        };
        let record = TopicRecord {
            name: name.clone(),
            id: uuid::Uuid::new_v4().as_u128(),
            partitions: partitions.max(0) as u32,
            configs,
            created_ms: crate::context::now_ms(),
        };
        let commit = match &check {
            Ok(()) if !req.validate_only => {
                Some(
                    catalog.commit(Transaction::new(vec![Op::Kafka(KafkaOp::CreateTopic(
                        record.clone(),
                    ))])),
                )
            }
            _ => None,
        };
        pending.push((record, check, commit));
    }
    Box::pin(async move {
        let mut topics = Vec::new();
        for (record, check, commit) in pending {
            let outcome = match (check, commit) {
                (Err(e), _) => Err(e),
                (Ok(()), None) => Ok(()),
                (Ok(()), Some(c)) => c.await.map(|_| ()).map_err(|e| match e {
                    CatalogError::TopicExists(n) => failure(
                        ResponseError::TopicAlreadyExists,
                        format!("topic {n} already exists"),
                    ),
                    e => failure(from_catalog(&e), e.to_string()),
                }),
            };
            let mut r = CreatableTopicResult::default().with_name(topic_name(&record.name));
            match outcome {
                Ok(()) => {
                    let configs = configs::TOPIC_CONFIGS
                        .iter()
                        .map(|d| {
                            let set = record.configs.get(d.name);
                            CreatableTopicConfigs::default()
                                .with_name(sb(d.name))
                                .with_value(Some(sb(set.map_or(d.default, String::as_str))))
                                .with_config_source(if set.is_some() { 1 } else { 5 })
                        })
                        .collect();
                    r = r
                        .with_topic_id(uuid(record.id))
                        .with_num_partitions(record.partitions as i32)
                        .with_replication_factor(1)
                        .with_configs(Some(configs));
                }
                Err((code, message)) => {
                    r = r
                        .with_error_code(code)
                        .with_error_message(message.as_deref().map(sb))
                        .with_num_partitions(-1)
                        .with_replication_factor(-1);
                }
            }
            topics.push(r);
        }
        Some(ResponseKind::CreateTopics(
            CreateTopicsResponse::default().with_topics(topics),
        ))
    })
}

/// DeleteTopics.
pub async fn delete(ctx: Ctx, req: DeleteTopicsRequest) -> Reply {
    let catalog = ctx.broker.catalog.clone();
    let mut wanted: Vec<(Option<String>, uuid::Uuid)> = req
        .topic_names
        .iter()
        .map(|n| (Some(n.to_string()), uuid::Uuid::nil()))
        .collect();
    wanted.extend(
        req.topics
            .iter()
            .map(|t| (t.name.as_ref().map(|n| n.to_string()), t.topic_id)),
    );
    let mut pending = Vec::new();
    for (name, id) in wanted {
        let found = match &name {
            Some(n) => catalog.kafka().topic(n).await,
            None => catalog.kafka().topic_by_id(id.as_u128()).await,
        };
        let doomed = match &found {
            Ok(Some(t)) => Ok(t.name.clone()),
            Ok(None) if name.is_none() => Err(ResponseError::UnknownTopicId),
            Ok(None) => Err(ResponseError::UnknownTopicOrPartition),
            Err(e) => Err(from_catalog(e)),
        };
        let id = found.ok().flatten().map_or(id, |t| uuid(t.id));
        pending.push((name, id, doomed));
    }
    Box::pin(async move {
        let mut responses = Vec::new();
        for (name, id, doomed) in pending {
            // A dropped expansion may not have read the topic's last records yet: the
            // table is sealed first, so its target keeps every row it was owed.
            if let Ok(topic) = &doomed {
                ctx.broker.seal_expanded(topic).await;
            }
            let commit = doomed.map(|topic| {
                catalog.commit(Transaction::new(vec![Op::Kafka(KafkaOp::DeleteTopic {
                    name: topic,
                })]))
            });
            // The catalog's message says why (an expansion holds the topic, say);
            // DeleteTopics v5 and later carry it.
            let (error, message) = match commit {
                Ok(c) => match c.await {
                    Ok(_) => (None, None),
                    Err(e) => (Some(from_catalog(&e)), Some(e.to_string())),
                },
                Err(e) => (Some(e), None),
            };
            responses.push(
                DeletableTopicResult::default()
                    .with_name(name.as_deref().map(topic_name))
                    .with_topic_id(id)
                    .with_error_code(error.map_or(0, |e| e.code()))
                    .with_error_message(message.map(Into::into)),
            );
        }
        Some(ResponseKind::DeleteTopics(
            DeleteTopicsResponse::default().with_responses(responses),
        ))
    })
}

/// CreatePartitions: grows a topic (never shrinks it).
pub async fn create_partitions(ctx: Ctx, req: CreatePartitionsRequest) -> Reply {
    let catalog = ctx.broker.catalog.clone();
    let mut pending = Vec::new();
    for t in req.topics {
        let name = t.name.to_string();
        let commit = match catalog.kafka().topic(&name).await {
            Ok(Some(mut record)) => {
                if t.count <= record.partitions as i32 || t.count > MAX_PARTITIONS {
                    Err(failure(
                        ResponseError::InvalidPartitions,
                        format!(
                            "topic {name} has {} partitions; the new count must be larger and at most {MAX_PARTITIONS}, not {}",
                            record.partitions, t.count
                        ),
                    ))
                } else if req.validate_only {
                    Ok(None)
                } else {
                    record.partitions = t.count as u32;
                    Ok(Some(catalog.commit(Transaction::new(vec![Op::Kafka(
                        KafkaOp::UpdateTopic(record),
                    )]))))
                }
            }
            Ok(None) => Err(failure(
                ResponseError::UnknownTopicOrPartition,
                format!("unknown topic {name}"),
            )),
            Err(e) => Err(failure(from_catalog(&e), e.to_string())),
        };
        pending.push((name, commit));
    }
    Box::pin(async move {
        let mut results = Vec::new();
        for (name, commit) in pending {
            let outcome = match commit {
                Ok(Some(c)) => c
                    .await
                    .map(|_| ())
                    .map_err(|e| failure(from_catalog(&e), e.to_string())),
                Ok(None) => Ok(()),
                Err(e) => Err(e),
            };
            let (code, message) = outcome.err().unwrap_or((0, None));
            results.push(
                CreatePartitionsTopicResult::default()
                    .with_name(topic_name(&name))
                    .with_error_code(code)
                    .with_error_message(message.as_deref().map(sb)),
            );
        }
        Some(ResponseKind::CreatePartitions(
            CreatePartitionsResponse::default().with_results(results),
        ))
    })
}

authorize_each! {
    /// CreateTopics needs KafkaCreate on each topic.
    fn authorize_create_topics(CreateTopicsRequest, topics, keep, CREATE)
}

/// The parts [`authorize_create_topics`] refused, put back into the response with their
/// errors.
pub(crate) fn answer_refused_create_topics(
    mut r: CreateTopicsResponse,
    refused: Refused,
) -> CreateTopicsResponse {
    r.topics.extend(refused.topic_names().map(|name| {
        create_topics_response::CreatableTopicResult::default()
            .with_name(name)
            .with_error_code(TOPIC_DENIED)
            .with_error_message(Some(sb("not authorized to create this topic")))
            .with_num_partitions(-1)
            .with_replication_factor(-1)
    }));
    r
}

authorize_each! {
    /// CreatePartitions needs KafkaCreate on each topic.
    fn authorize_create_partitions(CreatePartitionsRequest, topics, keep, CREATE)
}

/// The parts [`authorize_create_partitions`] refused, put back into the response with
/// their errors.
pub(crate) fn answer_refused_create_partitions(
    mut r: CreatePartitionsResponse,
    refused: Refused,
) -> CreatePartitionsResponse {
    r.results.extend(refused.topic_names().map(|name| {
        create_partitions_response::CreatePartitionsTopicResult::default()
            .with_name(name)
            .with_error_code(TOPIC_DENIED)
    }));
    r
}

/// DeleteTopics needs KafkaDelete on each topic (topics named by id are looked up first).
pub(crate) async fn authorize_delete_topics(
    ctx: &Ctx,
    mut r: DeleteTopicsRequest,
    out: &mut Refused,
) -> Authorized<DeleteTopicsRequest> {
    let names = topic_names_by_id(ctx, r.topics.iter().map(|t| t.topic_id)).await;
    r.topic_names = out.keep(ctx, DELETE, r.topic_names);
    r.topics = split(
        r.topics,
        |t| {
            id_or_name(
                &names,
                t.name.as_ref().map_or("", |n| n.0.as_str()),
                t.topic_id,
            )
        },
        |_| Vec::new(),
        |n| ctx.may_topic(DELETE, n),
        out,
    );
    Ok(r)
}

/// The parts [`authorize_delete_topics`] refused, put back into the response with their
/// errors.
pub(crate) fn answer_refused_delete_topics(
    mut r: DeleteTopicsResponse,
    refused: Refused,
) -> DeleteTopicsResponse {
    r.responses.extend(refused.topic_names().map(|name| {
        delete_topics_response::DeletableTopicResult::default()
            .with_name(Some(name))
            .with_error_code(TOPIC_DENIED)
    }));
    r
}
