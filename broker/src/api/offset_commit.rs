//! OffsetCommit: checked against the group's generation and member, then committed in
//! one catalog transaction; the response goes out once the offsets are durable.
//! Standalone commits (generation -1) work for groups with no members and create the
//! group on first use.

use crate::authz::*;
use catalog::GroupOp;
use catalog::{GroupRecord, OffsetRecord, Op, Transaction};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_commit_response;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse, ResponseKind};

use crate::context::{Ctx, Reply, now_ms, unless_failed};
use crate::error::from_catalog;
use crate::group::CommitCheck;
use crate::group::durable::StoredGroup;

/// The op that creates a group on its first standalone commit, when the check says so.
pub(crate) fn creates_group(
    checked: &Result<CommitCheck, ResponseError>,
    group: &str,
) -> Option<Op> {
    (*checked == Ok(CommitCheck::CreatesGroup)).then(|| {
        Op::Group(GroupOp::PutGroup(GroupRecord {
            name: group.to_owned(),
            state: StoredGroup::default().encode(),
        }))
    })
}

/// A partition's committed offset, refused when its metadata is longer than `max`.
pub(crate) fn offset_record(
    offset: i64,
    leader_epoch: i32,
    metadata: Option<&str>,
    max: usize,
    now: i64,
) -> Result<OffsetRecord, ResponseError> {
    if metadata.is_some_and(|m| m.len() > max) {
        return Err(ResponseError::OffsetMetadataTooLarge);
    }
    Ok(OffsetRecord {
        offset,
        leader_epoch,
        metadata: metadata.map(str::to_owned),
        commit_ms: now,
    })
}

/// Appends the commits among `ops` to `__consumer_offsets`, in the same transaction
/// (a catalog that cannot say whether the topic exists mirrors nothing).
pub(crate) async fn mirror_to_offsets_topic(catalog: &dyn catalog::Catalog, ops: &mut Vec<Op>) {
    let Ok(Some(topic)) = catalog.kafka().topic(crate::offsets_topic::NAME).await else {
        return;
    };
    let commits: Vec<_> = ops
        .iter()
        .filter_map(|o| match o {
            Op::Group(GroupOp::CommitOffset {
                group,
                topic,
                partition,
                offset,
            }) => Some((
                group.clone(),
                topic.clone(),
                *partition,
                Some(offset.clone()),
            )),
            _ => None,
        })
        .collect();
    ops.extend(crate::offsets_topic::appends(&topic, &commits));
}

/// Handles OffsetCommit.
pub async fn handle(ctx: Ctx, req: OffsetCommitRequest) -> Reply {
    let group = req.group_id.to_string();
    let broker = &ctx.broker;
    let checked = if group.is_empty() {
        Err(ResponseError::InvalidGroupId)
    } else if !ctx.coordinates(&group) {
        Err(ResponseError::NotCoordinator)
    } else {
        broker
            .groups
            .check_commit(
                &group,
                req.generation_id_or_member_epoch,
                &req.member_id,
                req.group_instance_id.as_deref(),
            )
            .await
    };
    let mut ops: Vec<Op> = creates_group(&checked, &group).into_iter().collect();
    let max_metadata = broker.groups.config().max_metadata_bytes;
    let now = now_ms();
    let mut plan: Vec<(OffsetCommitResponseTopic, Vec<Result<(), ResponseError>>)> = Vec::new();
    for t in req.topics {
        let (topic, unreadable) =
            crate::context::found(broker.catalog.kafka().topic(&t.name).await);
        let mut results = Vec::new();
        let mut out = OffsetCommitResponseTopic::default()
            .with_name(t.name.clone())
            .with_topic_id(t.topic_id);
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
                        ops.push(Op::Group(GroupOp::CommitOffset {
                            group: group.clone(),
                            topic: topic.name.clone(),
                            partition: p.partition_index as u32,
                            offset,
                        }))
                    })
                }
                (Ok(_), _, None) => Err(ResponseError::UnknownTopicOrPartition),
            };
            out.partitions.push(
                OffsetCommitResponsePartition::default().with_partition_index(p.partition_index),
            );
            results.push(r);
        }
        plan.push((out, results));
    }
    let commits = ops
        .iter()
        .filter(|o| matches!(o, Op::Group(GroupOp::CommitOffset { .. })))
        .count() as u64;
    if broker.config.offsets_topic && commits > 0 {
        mirror_to_offsets_topic(broker.catalog.as_ref(), &mut ops).await;
    }
    let leases = ctx.leases();
    let commit = (commits > 0).then(|| broker.catalog.commit(Transaction::new(ops).under(leases)));
    let metrics = broker.metrics.clone();
    Box::pin(async move {
        let failed = match commit {
            Some(c) => match c.await {
                Ok(_) => {
                    metrics.offset_commits.inc_by(commits);
                    None
                }
                Err(e) => Some(from_catalog(&e)),
            },
            None => None,
        };
        let topics = plan
            .into_iter()
            .map(|(mut t, results)| {
                for (p, r) in t.partitions.iter_mut().zip(results) {
                    let r = unless_failed(r, failed);
                    p.error_code = r.err().map_or(0, |e| e.code());
                }
                t
            })
            .collect();
        Some(ResponseKind::OffsetCommit(
            OffsetCommitResponse::default().with_topics(topics),
        ))
    })
}

/// OffsetCommit needs KafkaRead on the group, then on each topic.
pub(crate) fn authorize(
    ctx: &Ctx,
    mut r: OffsetCommitRequest,
    out: &mut Refused,
) -> Authorized<OffsetCommitRequest> {
    if !ctx.may_group(READ, &r.group_id.0) {
        let mut resp = OffsetCommitResponse::default();
        resp.topics = r
            .topics
            .iter()
            .map(|t| {
                let mut rt = offset_commit_response::OffsetCommitResponseTopic::default();
                rt.name = t.name.clone();
                rt.topic_id = t.topic_id;
                rt.partitions = t
                    .partitions
                    .iter()
                    .map(|p| {
                        offset_commit_response::OffsetCommitResponsePartition::default()
                            .with_partition_index(p.partition_index)
                            .with_error_code(GROUP_DENIED)
                    })
                    .collect();
                rt
            })
            .collect();
        return refuse_whole(ResponseKind::OffsetCommit(resp));
    }
    r.topics = out.keep(ctx, READ, r.topics);
    Ok(r)
}

answer_refused_topics! {
    /// The parts [`authorize`] refused, put back into the response with their errors.
    fn answer_refused(OffsetCommitResponse, topics)
    |name, parts| offset_commit_response::OffsetCommitResponseTopic::default()
        .with_name(name)
        .with_partitions(parts),
    |p| offset_commit_response::OffsetCommitResponsePartition::default().with_partition_index(p)
        .with_error_code(TOPIC_DENIED)
}
