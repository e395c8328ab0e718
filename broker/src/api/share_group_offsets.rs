//! The share group offset admin APIs (KIP-932), which `kafka-share-groups` and the Admin
//! client use: DescribeShareGroupOffsets (each share partition's start offset, -1 where
//! the group never read), AlterShareGroupOffsets and DeleteShareGroupOffsets (move a
//! start offset or forget a partition's state, only while the group has no members).

use crate::authz::*;
use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_share_group_offsets_response::{
    AlterShareGroupOffsetsResponsePartition, AlterShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic;
use kafka_protocol::messages::describe_share_group_offsets_response::{
    DescribeShareGroupOffsetsResponseGroup, DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::{
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse, DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse, ResponseKind,
};

use crate::context::{Ctx, sb, topic_name, uuid};

/// A topic by name: its id and partition count, or the error to answer.
async fn topic(ctx: &Ctx, name: &str) -> Result<(u128, u32), ResponseError> {
    match crate::context::found(ctx.broker.catalog.kafka().topic(name).await) {
        (_, Some(e)) => Err(e),
        (None, None) => Err(ResponseError::UnknownTopicOrPartition),
        (Some(t), None) => Ok((t.id, t.partitions)),
    }
}

fn message(m: &str) -> Option<kafka_protocol::protocol::StrBytes> {
    (!m.is_empty()).then(|| sb(m))
}

/// Handles DescribeShareGroupOffsets.
pub async fn describe(
    ctx: &Ctx,
    req: DescribeShareGroupOffsetsRequest,
) -> DescribeShareGroupOffsetsResponse {
    let mut groups = Vec::with_capacity(req.groups.len());
    for g in req.groups {
        let mut out =
            DescribeShareGroupOffsetsResponseGroup::default().with_group_id(g.group_id.clone());
        // KafkaDescribe on each group, and on each topic (topics refused are left out).
        if !ctx.may_group(DESCRIBE, &g.group_id) {
            groups.push(out.with_error_code(GROUP_DENIED));
            continue;
        }
        if !ctx.coordinates(&g.group_id) {
            groups.push(out.with_error_code(ResponseError::NotCoordinator.code()));
            continue;
        }
        let starts = match ctx.broker.groups.share_offsets(&g.group_id).await {
            Ok(s) => s,
            Err((e, m)) => {
                groups.push(
                    out.with_error_code(e.code())
                        .with_error_message(message(&m)),
                );
                continue;
            }
        };
        let starts: BTreeMap<(u128, u32), u64> = starts.into_iter().collect();
        // The topics asked for, or every topic the group has state for.
        let wanted: Vec<(String, Option<Vec<i32>>)> = match g.topics {
            Some(ts) => ts
                .into_iter()
                .map(|t| (t.topic_name.to_string(), Some(t.partitions)))
                .collect(),
            None => {
                let mut names = Vec::new();
                for id in starts
                    .keys()
                    .map(|(t, _)| *t)
                    .collect::<std::collections::BTreeSet<_>>()
                {
                    if let Ok(Some(t)) = ctx.broker.catalog.kafka().topic_by_id(id).await {
                        names.push((t.name, None));
                    }
                }
                names
            }
        };
        for (name, partitions) in wanted {
            if !ctx.may_topic(DESCRIBE, &name) {
                continue;
            }
            let (id, count) = match topic(ctx, &name).await {
                Ok(t) => t,
                Err(e) => {
                    out.topics.push(
                        DescribeShareGroupOffsetsResponseTopic::default()
                            .with_topic_name(topic_name(&name))
                            .with_partitions(
                                partitions
                                    .unwrap_or_default()
                                    .into_iter()
                                    .map(|p| {
                                        DescribeShareGroupOffsetsResponsePartition::default()
                                            .with_partition_index(p)
                                            .with_start_offset(-1)
                                            .with_leader_epoch(-1)
                                            .with_error_code(e.code())
                                    })
                                    .collect(),
                            ),
                    );
                    continue;
                }
            };
            let partitions: Vec<i32> = partitions.unwrap_or_else(|| {
                starts
                    .keys()
                    .filter(|(t, _)| *t == id)
                    .map(|(_, p)| *p as i32)
                    .collect()
            });
            out.topics.push(
                DescribeShareGroupOffsetsResponseTopic::default()
                    .with_topic_name(topic_name(&name))
                    .with_topic_id(uuid(id))
                    .with_partitions(
                        partitions
                            .into_iter()
                            .map(|p| {
                                let r = DescribeShareGroupOffsetsResponsePartition::default()
                                    .with_partition_index(p)
                                    .with_leader_epoch(-1);
                                if p < 0 || p as u32 >= count {
                                    return r.with_start_offset(-1).with_error_code(
                                        ResponseError::UnknownTopicOrPartition.code(),
                                    );
                                }
                                r.with_start_offset(
                                    starts.get(&(id, p as u32)).map_or(-1, |o| *o as i64),
                                )
                            })
                            .collect(),
                    ),
            );
        }
        groups.push(out);
    }
    DescribeShareGroupOffsetsResponse::default().with_groups(groups)
}

/// Handles AlterShareGroupOffsets.
pub async fn alter(ctx: &Ctx, req: AlterShareGroupOffsetsRequest) -> ResponseKind {
    let refused = |e: ResponseError, m: &str| {
        ResponseKind::AlterShareGroupOffsets(
            AlterShareGroupOffsetsResponse::default()
                .with_error_code(e.code())
                .with_error_message(message(m)),
        )
    };
    if !ctx.coordinates(&req.group_id) {
        return refused(ResponseError::NotCoordinator, "");
    }
    let mut changes = Vec::new();
    let mut responses = Vec::new();
    for t in &req.topics {
        let found = if ctx.may_topic(READ, &t.topic_name) {
            topic(ctx, &t.topic_name).await
        } else {
            Err(ResponseError::TopicAuthorizationFailed)
        };
        let mut parts = Vec::new();
        for p in &t.partitions {
            let error = match found {
                Err(e) => Some(e),
                Ok((_, count)) if p.partition_index < 0 || p.partition_index as u32 >= count => {
                    Some(ResponseError::UnknownTopicOrPartition)
                }
                Ok(_) if p.start_offset < 0 => Some(ResponseError::InvalidRequest),
                Ok((id, _)) => {
                    changes.push(((id, p.partition_index as u32), Some(p.start_offset as u64)));
                    None
                }
            };
            parts.push(
                AlterShareGroupOffsetsResponsePartition::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(error.map_or(0, |e| e.code())),
            );
        }
        responses.push(
            AlterShareGroupOffsetsResponseTopic::default()
                .with_topic_name(t.topic_name.clone())
                .with_topic_id(found.map_or(uuid(0), |(id, _)| uuid(id)))
                .with_partitions(parts),
        );
    }
    match ctx
        .broker
        .groups
        .reset_share_offsets(&req.group_id, changes)
        .await
    {
        Err((e, m)) => refused(e, &m),
        Ok(()) => ResponseKind::AlterShareGroupOffsets(
            AlterShareGroupOffsetsResponse::default().with_responses(responses),
        ),
    }
}

/// Handles DeleteShareGroupOffsets.
pub async fn delete(ctx: &Ctx, req: DeleteShareGroupOffsetsRequest) -> ResponseKind {
    let refused = |e: ResponseError, m: &str| {
        ResponseKind::DeleteShareGroupOffsets(
            DeleteShareGroupOffsetsResponse::default()
                .with_error_code(e.code())
                .with_error_message(message(m)),
        )
    };
    if !ctx.coordinates(&req.group_id) {
        return refused(ResponseError::NotCoordinator, "");
    }
    let stored = match ctx.broker.groups.share_partitions(&req.group_id).await {
        Ok(s) => s,
        Err((e, m)) => return refused(e, &m),
    };
    let mut changes = Vec::new();
    let mut responses = Vec::new();
    for t in &req.topics {
        let found = if ctx.may_topic(READ, &t.topic_name) {
            topic(ctx, &t.topic_name).await
        } else {
            Err(ResponseError::TopicAuthorizationFailed)
        };
        if let Ok((id, _)) = found {
            changes.extend(
                stored
                    .iter()
                    .filter(|(t, _)| *t == id)
                    .map(|tp| (*tp, None)),
            );
        }
        responses.push(
            DeleteShareGroupOffsetsResponseTopic::default()
                .with_topic_name(t.topic_name.clone())
                .with_topic_id(found.map_or(uuid(0), |(id, _)| uuid(id)))
                .with_error_code(found.err().map_or(0, |e| e.code())),
        );
    }
    match ctx
        .broker
        .groups
        .reset_share_offsets(&req.group_id, changes)
        .await
    {
        Err((e, m)) => refused(e, &m),
        Ok(()) => ResponseKind::DeleteShareGroupOffsets(
            DeleteShareGroupOffsetsResponse::default().with_responses(responses),
        ),
    }
}

authorize_whole! {
    /// AlterShareGroupOffsets needs KafkaRead on the group (and on each topic, checked by
    /// the handler), as Kafka's READ.
    fn authorize_alter(ctx, r: AlterShareGroupOffsetsRequest) if ctx.may_group(READ, &r.group_id);
    else ResponseKind::AlterShareGroupOffsets(
        AlterShareGroupOffsetsResponse::default().with_error_code(GROUP_DENIED))
}

authorize_whole! {
    /// DeleteShareGroupOffsets needs KafkaDelete on the group (and KafkaRead on each
    /// topic, checked by the handler).
    fn authorize_delete(ctx, r: DeleteShareGroupOffsetsRequest) if ctx.may_group(DELETE, &r.group_id);
    else ResponseKind::DeleteShareGroupOffsets(
        DeleteShareGroupOffsetsResponse::default().with_error_code(GROUP_DENIED))
}
