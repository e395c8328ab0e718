//! Produce: the whole request is one catalog transaction across all its partitions.
//! Problems found checking one partition's batches (unknown partition, wrong leader,
//! size, CRC, bad records, a fenced idempotent batch, a transactional batch outside its
//! producer's open transaction) fail only that partition; a retry of an idempotent batch
//! already appended is answered with its first offset, as Kafka answers it, and appends
//! nothing, whether it is found here or in the commit (where the catalog leaves it out
//! of the transaction); an out-of-order sequence is found only when the commit is
//! applied (the stored state lags requests in flight), and fails the request's
//! transaction; everything else commits together or not at all. The response goes out
//! only once the transaction is durable; acks=0 gets none.

use crate::authz::*;
use catalog::KafkaOp;
use catalog::{Op, ProducerBatch, ProducerState, Transaction};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::produce_response;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, ResponseKind};

use crate::batch::{self, Batch};
use crate::configs;
use crate::context::{Ctx, Reply, sb, topic_name, uuid};
use crate::error::from_catalog;

enum Plan {
    Refused(ResponseError, Option<String>),
    /// Refused for the records named (index in their batch, why): `record_errors`.
    InvalidRecords(batch::Refusal),
    Duplicate(u64),
    /// Its batches are ops `first..first + count` of the transaction.
    Appending {
        first: usize,
        log_append_time: i64,
    },
}

struct Partition {
    index: i32,
    plan: Plan,
}

struct Topic {
    name: String,
    id: uuid::Uuid,
    partitions: Vec<Partition>,
}

fn producer_fields(b: &Batch) -> Option<ProducerBatch> {
    b.is_idempotent().then(|| ProducerBatch {
        producer_id: b.producer_id,
        epoch: b.producer_epoch,
        first_sequence: b.base_sequence,
        last_sequence: b.last_sequence(),
    })
}

/// The first Produce version of transaction version 2 (KIP-890).
const IMPLICIT_ADD_FROM: i16 = 12;

/// Checks one partition's batches and adds their appends to `ops`.
async fn plan_partition(
    ctx: &Ctx,
    topic: &catalog::TopicRecord,
    index: i32,
    records: Option<bytes::Bytes>,
    txn: Option<&str>,
    ops: &mut Vec<Op>,
) -> Plan {
    if index < 0 || index as u32 >= topic.partitions {
        return Plan::Refused(ResponseError::UnknownTopicOrPartition, None);
    }
    if !ctx.leads(&topic.name, index) {
        return Plan::Refused(ResponseError::NotLeaderOrFollower, None);
    }
    let records = records.unwrap_or_default();
    let mut batches = match batch::parse(&records, configs::max_message_bytes(&topic.configs)) {
        Ok(b) => b,
        Err(r) => return Plan::Refused(r.error, Some(r.message)),
    };
    if configs::compacted(&topic.configs)
        && let Err(r) = batches.iter().try_for_each(Batch::require_keys)
    {
        return Plan::InvalidRecords(r);
    }
    let validator = ctx.broker.schema_validator.get().map(|v| v.as_ref());
    if let Err(r) = crate::schema_validation::check(validator, topic, &batches).await {
        return if r.records.is_empty() {
            Plan::Refused(r.error, Some(r.message))
        } else {
            Plan::InvalidRecords(r)
        };
    }
    // A transactional batch goes in only within its producer's open transaction holding
    // this partition (KIP-890's check; the catalog checks again at commit).
    let transactional = batches.iter().filter(|b| b.transactional).count();
    if transactional > 0 {
        let refuse = |m: &str| Plan::Refused(ResponseError::InvalidRecord, Some(m.to_owned()));
        if transactional != batches.len() {
            return refuse("a request mixes transactional and other batches");
        }
        let Some(id) = txn else {
            return refuse("transactional batches without a transactional id");
        };
        // From v12 the client follows transaction version 2 (KIP-890): its first
        // produce to a partition adds the partition to the transaction, where the
        // transaction is coordinated (in a cluster, which offers version 1 only, the
        // producer adds it explicitly). The coordinator submits that change before this
        // request's records, so they cannot be durable without it; adding checks the
        // producer as the check of an explicitly added partition does.
        let implicit = ctx.version >= IMPLICIT_ADD_FROM && ctx.broker.txns.coordinates(id);
        let tp = (topic.name.clone(), index);
        for b in &batches {
            if !b.is_idempotent() {
                return refuse("a transactional batch without a producer id and sequence");
            }
            let txns = &ctx.broker.txns;
            let in_txn = if implicit {
                txns.add_partitions(id, b.producer_id, b.producer_epoch, vec![tp.clone()])
                    .await
                    .await
            } else {
                txns.check_produce(id, b.producer_id, b.producer_epoch, &tp)
                    .await
            };
            if let Err(e) = in_txn {
                return Plan::Refused(crate::error::fenced_for(e, false), None);
            }
        }
    }
    let log_append_time = if configs::log_append_time(&topic.configs) {
        let now = crate::context::now_ms();
        batches
            .iter_mut()
            .for_each(|b| b.stamp_log_append_time(now));
        now
    } else {
        -1
    };
    // Idempotent sequences, checked in order against the stored state.
    let mut states: Vec<(i64, Option<ProducerState>)> = Vec::new();
    for b in &batches {
        let Some(p) = producer_fields(b) else {
            continue;
        };
        let pos = match states.iter().position(|(id, _)| *id == p.producer_id) {
            Some(i) => i,
            None => {
                let stored = match ctx
                    .broker
                    .catalog
                    .kafka()
                    .producer_state(p.producer_id, topic.id, index as u32)
                    .await
                {
                    Ok(stored) => stored,
                    // A read fault is not "no state": judging sequences without it could
                    // take a duplicate, so the partition is refused and retried.
                    Err(e) => return Plan::Refused(crate::error::from_catalog(&e), None),
                };
                states.push((p.producer_id, stored));
                states.len() - 1
            }
        };
        let state = &mut states[pos].1;
        match ProducerState::check(state.as_ref(), &p) {
            // The stored state lags this producer's batches still in the commit queue: a
            // client with several requests in flight (librdkafka sends up to 5) has its
            // next one planned before the previous one is applied, so a sequence ahead
            // of the stored one is no proof of a gap. The catalog checks it again when
            // it applies the commit, in commit order, and that check decides. (Refusing
            // here failed idempotent producers under load with a fatal
            // OUT_OF_ORDER_SEQUENCE_NUMBER: tests/idempotent_pipelining.rs.)
            Ok(()) | Err(catalog::CatalogError::OutOfOrderSequence) => state
                .get_or_insert_with(ProducerState::default)
                .record(&p, 0),
            Err(catalog::CatalogError::DuplicateSequence { base_offset }) if batches.len() == 1 => {
                return Plan::Duplicate(base_offset);
            }
            // Among several batches, the commit leaves out those appended before and
            // appends the rest.
            Err(catalog::CatalogError::DuplicateSequence { .. }) => {}
            Err(e) => {
                return Plan::Refused(from_catalog(&e), Some(e.to_string()));
            }
        }
    }
    let first = ops.len();
    for b in batches {
        ops.push(Op::Kafka(KafkaOp::Append {
            topic_id: topic.id,
            partition: index as u32,
            offset_count: b.offset_count,
            max_timestamp: b.max_timestamp,
            producer: producer_fields(&b),
            transactional_id: b.transactional.then(|| txn.unwrap_or_default().to_owned()),
            batch: b.bytes,
        }));
    }
    Plan::Appending {
        first,
        log_append_time,
    }
}

/// Handles a produce request.
pub async fn handle(ctx: Ctx, req: ProduceRequest) -> Reply {
    let catalog = ctx.broker.catalog.clone();
    let mut ops = Vec::new();
    let mut topics = Vec::new();
    let txn = req.transactional_id.as_ref().map(|t| t.to_string());
    for t in req.topic_data {
        let found = if ctx.version >= 13 {
            catalog.kafka().topic_by_id(t.topic_id.as_u128()).await
        } else {
            catalog.kafka().topic(&t.name).await
        };
        let (record, unreadable) = crate::context::found(found);
        let unknown = if ctx.version >= 13 {
            ResponseError::UnknownTopicId
        } else if super::topics::valid_name(&t.name).is_err() {
            // Not retriable: no such topic can ever exist.
            ResponseError::InvalidTopicException
        } else {
            ResponseError::UnknownTopicOrPartition
        };
        let mut partitions = Vec::with_capacity(t.partition_data.len());
        for p in t.partition_data {
            partitions.push(Partition {
                index: p.index,
                plan: match (&record, unreadable) {
                    (_, Some(e)) => Plan::Refused(e, None),
                    // Only the group coordinator writes the offsets topic.
                    (Some(topic), None) if crate::offsets_topic::is_internal(&topic.name) => {
                        Plan::Refused(
                            ResponseError::InvalidTopicException,
                            Some(format!("{} is written by the broker only", topic.name)),
                        )
                    }
                    (Some(topic), None) => {
                        plan_partition(&ctx, topic, p.index, p.records, txn.as_deref(), &mut ops)
                            .await
                    }
                    (None, None) => Plan::Refused(unknown, None),
                },
            });
        }
        topics.push(Topic {
            name: record
                .as_ref()
                .map_or_else(|| t.name.to_string(), |r| r.name.clone()),
            id: record.as_ref().map_or(t.topic_id, |r| uuid(r.id)),
            partitions,
        });
    }
    let bytes: usize = ops
        .iter()
        .map(|op| match op {
            Op::Kafka(KafkaOp::Append { batch, .. }) => batch.len(),
            _ => 0,
        })
        .sum();
    let commit =
        (!ops.is_empty()).then(|| catalog.commit(Transaction::new(ops).under(ctx.leases())));
    let metrics = ctx.broker.metrics.clone();
    let view_metrics = ctx
        .broker
        .config
        .view_metrics
        .clone()
        .map(|m| (m, ctx.broker.config.view.clone()));
    let acks = req.acks;
    Box::pin(async move {
        let outcome = match commit {
            Some(c) => Some(c.await),
            None => None,
        };
        if matches!(outcome, Some(Ok(_))) {
            metrics.produced_bytes.inc_by(bytes as u64);
            if let Some(v) = &view_metrics {
                v.0.produced_bytes
                    .get_or_create(&crate::metrics::ViewLabels { view: v.1.clone() })
                    .inc_by(bytes as u64);
            }
        }
        if acks == 0 {
            return None;
        }
        let responses = {
            let mut out = Vec::new();
            for t in topics.into_iter() {
                out.push({
                    let partitions = {
                        let mut out = Vec::new();
                        for p in t.partitions.into_iter() {
                            out.push({
                                let r = PartitionProduceResponse::default()
                                    .with_index(p.index)
                                    .with_base_offset(-1)
                                    .with_log_append_time_ms(-1)
                                    .with_log_start_offset(-1);
                                match p.plan {
                                    Plan::Refused(e, message) => r
                                        .with_error_code(e.code())
                                        .with_error_message(message.as_deref().map(sb)),
                                    Plan::InvalidRecords(refusal) => r
                                        .with_error_code(refusal.error.code())
                                        .with_error_message(Some(sb(&refusal.message)))
                                        .with_record_errors(
                                            refusal
                                                .records
                                                .iter()
                                                .map(|(i, m)| {
                                                    produce_response::BatchIndexAndErrorMessage::default()
                                                        .with_batch_index(*i)
                                                        .with_batch_index_error_message(Some(sb(m)))
                                                })
                                                .collect(),
                                        ),
                                    // As Kafka answers a retry it still remembers: a
                                    // success at the offset it was first given.
                                    Plan::Duplicate(base) => r.with_base_offset(base as i64),
                                    Plan::Appending {
                                        first,
                                        log_append_time,
                                    } => match &outcome {
                                        Some(Ok(out)) => {
                                            let (base, start) = match out.ops.get(first) {
                                                Some(catalog::OpOutcome::Appended {
                                                    base_offset,
                                                    log_start_offset,
                                                }) => {
                                                    (*base_offset as i64, *log_start_offset as i64)
                                                }
                                                // Appended by a request still in the commit
                                                // queue when this one was planned.
                                                Some(catalog::OpOutcome::Duplicate {
                                                    base_offset,
                                                }) => (*base_offset as i64, -1),
                                                _ => (-1, -1),
                                            };
                                            r.with_base_offset(base)
                                                .with_log_append_time_ms(log_append_time)
                                                .with_log_start_offset(start)
                                        }
                                        Some(Err(e)) => r
                                            .with_error_code(from_catalog(e).code())
                                            .with_error_message(Some(sb(&e.to_string()))),
                                        None => r,
                                    },
                                }
                            });
                        }
                        out
                    };
                    TopicProduceResponse::default()
                        .with_name(topic_name(&t.name))
                        .with_topic_id(t.id)
                        .with_partition_responses(partitions)
                });
            }
            out
        };
        Some(ResponseKind::Produce(
            ProduceResponse::default().with_responses(responses),
        ))
    })
}

authorize_each! {
    /// Produce needs KafkaWrite on each topic.
    fn authorize(ProduceRequest, topic_data, keep, WRITE)
}

answer_refused_topics! {
    /// The parts [`authorize`] refused, put back into the response with their errors.
    fn answer_refused(ProduceResponse, responses)
    |name, parts| produce_response::TopicProduceResponse::default()
        .with_name(name)
        .with_partition_responses(parts),
    |p| produce_response::PartitionProduceResponse::default()
        .with_index(p)
        .with_error_code(TOPIC_DENIED)
        .with_base_offset(-1).with_log_append_time_ms(-1).with_log_start_offset(-1)
}
