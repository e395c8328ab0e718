//! TxnOffsetCommit: offsets a transaction holds for a group, committed with the
//! transaction's markers (and dropped if it aborts). Checked against the transaction
//! (open, this producer, the group added) and, from v3, against the group's generation
//! and member, as OffsetCommit is. From v5 (transaction version 2) the commit itself adds
//! the group to the transaction, without AddOffsetsToTxn.

use crate::authz::{
    Authorized, GROUP_DENIED, READ, Refused, TOPIC_DENIED, answer_refused_topics, refuse_whole,
};
use catalog::TxnOp;
use catalog::{Op, Transaction};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{ResponseKind, TxnOffsetCommitRequest, TxnOffsetCommitResponse};

use super::offset_commit::{creates_group, offset_record};
use crate::context::{Ctx, Reply, now_ms, unless_failed};
use crate::error::{fenced_for, from_catalog};

/// The first version of transaction version 2 (KIP-890).
const IMPLICIT_ADD_FROM: i16 = 5;

/// Handles TxnOffsetCommit.
pub async fn handle(ctx: Ctx, req: TxnOffsetCommitRequest) -> Reply {
    let id = req.transactional_id.to_string();
    let group = req.group_id.to_string();
    let broker = &ctx.broker;
    let (producer_id, epoch) = (req.producer_id.0, req.producer_epoch);
    let checked = async {
        if group.is_empty() {
            return Err(ResponseError::InvalidGroupId);
        }
        if !ctx.coordinates(&group) {
            return Err(ResponseError::NotCoordinator);
        }
        // From v5 the client follows transaction version 2 (KIP-890): the commit adds
        // the group to the transaction itself, where the transaction is coordinated
        // (adding checks the producer as the check of an explicitly added group does).
        if ctx.version >= IMPLICIT_ADD_FROM && broker.txns.coordinates(&id) {
            broker
                .txns
                .add_offsets(&id, producer_id, epoch, &group)
                .await
                .await?;
        } else {
            broker
                .txns
                .check_offset_commit(&id, producer_id, epoch, &group)
                .await?;
        }
        // Before v3 the request names no generation: nothing to fence.
        let generation = if ctx.version < 3 {
            -1
        } else {
            req.generation_id
        };
        broker
            .groups
            .check_commit(
                &group,
                generation,
                &req.member_id,
                req.group_instance_id.as_deref(),
            )
            .await
    }
    .await;
    let mut ops: Vec<Op> = creates_group(&checked, &group).into_iter().collect();
    let max_metadata = broker.groups.config().max_metadata_bytes;
    let now = now_ms();
    let mut plan = Vec::new();
    for t in req.topics {
        let (topic, unreadable) =
            crate::context::found(broker.catalog.kafka().topic(&t.name).await);
        let mut results = Vec::new();
        for p in t.partitions {
            let r = match (&checked, &topic, unreadable) {
                (Err(e), _, _) => Err(*e),
                (Ok(_), _, Some(e)) => Err(e),
                (Ok(_), Some(topic), None) if topic.has_partition(p.partition_index) => {
                    offset_record(
                        p.committed_offset,
                        p.committed_leader_epoch,
                        p.committed_metadata.as_deref(),
                        max_metadata,
                        now,
                    )
                    .map(|offset| {
                        ops.push(Op::Txn(TxnOp::TxnOffsetCommit {
                            id: id.clone(),
                            producer_id,
                            epoch,
                            group: group.clone(),
                            topic: topic.name.clone(),
                            partition: p.partition_index as u32,
                            offset,
                        }))
                    })
                }
                (Ok(_), _, None) => Err(ResponseError::UnknownTopicOrPartition),
            };
            results.push((p.partition_index, r));
        }
        plan.push((t.name, results));
    }
    let held = ops
        .iter()
        .any(|o| matches!(o, Op::Txn(TxnOp::TxnOffsetCommit { .. })));
    let leases = ctx.leases();
    let commit = held.then(|| broker.catalog.commit(Transaction::new(ops).under(leases)));
    let knows_fenced = ctx.version >= 3;
    Box::pin(async move {
        let failed = match commit {
            Some(c) => c.await.err().map(|e| from_catalog(&e)),
            None => None,
        };
        let topics = plan
            .into_iter()
            .map(|(name, results)| {
                TxnOffsetCommitResponseTopic::default()
                    .with_name(name)
                    .with_partitions(
                        results
                            .into_iter()
                            .map(|(p, r)| {
                                let code = unless_failed(r, failed)
                                    .err()
                                    .map_or(0, |e| fenced_for(e, knows_fenced).code());
                                TxnOffsetCommitResponsePartition::default()
                                    .with_partition_index(p)
                                    .with_error_code(code)
                            })
                            .collect(),
                    )
            })
            .collect();
        Some(ResponseKind::TxnOffsetCommit(
            TxnOffsetCommitResponse::default().with_topics(topics),
        ))
    })
}

/// TxnOffsetCommit needs KafkaRead on the group, then on each topic, as OffsetCommit does.
pub(crate) fn authorize(
    ctx: &Ctx,
    mut r: TxnOffsetCommitRequest,
    out: &mut Refused,
) -> Authorized<TxnOffsetCommitRequest> {
    if !ctx.may_group(READ, &r.group_id.0) {
        let topics = r
            .topics
            .iter()
            .map(|t| {
                TxnOffsetCommitResponseTopic::default()
                    .with_name(t.name.clone())
                    .with_partitions(
                        t.partitions
                            .iter()
                            .map(|p| denied_partition(p.partition_index, GROUP_DENIED))
                            .collect(),
                    )
            })
            .collect();
        return refuse_whole(ResponseKind::TxnOffsetCommit(
            TxnOffsetCommitResponse::default().with_topics(topics),
        ));
    }
    r.topics = out.keep(ctx, READ, r.topics);
    Ok(r)
}

answer_refused_topics! {
    /// The topics [`authorize`] refused, put back into the response with their error.
    fn answer_refused(TxnOffsetCommitResponse, topics)
    |name, parts| TxnOffsetCommitResponseTopic::default().with_name(name).with_partitions(parts),
    |p| denied_partition(p, TOPIC_DENIED)
}

fn denied_partition(index: i32, code: i16) -> TxnOffsetCommitResponsePartition {
    TxnOffsetCommitResponsePartition::default()
        .with_partition_index(index)
        .with_error_code(code)
}
