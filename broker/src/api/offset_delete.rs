//! OffsetDelete: removes a group's committed offsets for some partitions, except for
//! topics its members are subscribed to (GROUP_SUBSCRIBED_TO_TOPIC).

use crate::authz::*;
use catalog::GroupOp;
use catalog::Op;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse, ResponseKind};

use crate::context::{Ctx, Reply, commit_under, ready, unless_failed};

/// Handles OffsetDelete.
pub async fn handle(ctx: Ctx, req: OffsetDeleteRequest) -> Reply {
    let group = req.group_id.to_string();
    let refuse = |e: ResponseError| {
        ready(ResponseKind::OffsetDelete(
            OffsetDeleteResponse::default().with_error_code(e.code()),
        ))
    };
    if group.is_empty() {
        return refuse(ResponseError::InvalidGroupId);
    }
    if !ctx.coordinates(&group) {
        return refuse(ResponseError::NotCoordinator);
    }
    let subscribed = match ctx.broker.groups.subscriptions(&group).await {
        Ok(Some(s)) => s,
        Ok(None) => return refuse(ResponseError::GroupIdNotFound),
        Err(e) => return refuse(e),
    };
    let catalog = &ctx.broker.catalog;
    let mut ops = Vec::new();
    let mut plan = Vec::new();
    for t in req.topics {
        let (topic, unreadable) = crate::context::found(catalog.kafka().topic(&t.name).await);
        let mut parts = Vec::new();
        for p in t.partitions {
            let r = match (&topic, unreadable) {
                (_, Some(e)) => Err(e),
                _ if subscribed.iter().any(|s| s.as_str() == t.name.as_str()) => {
                    Err(ResponseError::GroupSubscribedToTopic)
                }
                (Some(topic), None) if topic.has_partition(p.partition_index) => {
                    ops.push(Op::Group(GroupOp::DeleteOffset {
                        group: group.clone(),
                        topic: topic.name.clone(),
                        partition: p.partition_index as u32,
                    }));
                    Ok(())
                }
                _ => Err(ResponseError::UnknownTopicOrPartition),
            };
            parts.push((p.partition_index, r));
        }
        plan.push((t.name, parts));
    }
    let commit = commit_under(catalog.as_ref(), ops, ctx.leases());
    Box::pin(async move {
        let failed = commit.await;
        let topics = plan
            .into_iter()
            .map(|(name, parts)| {
                OffsetDeleteResponseTopic::default()
                    .with_name(name)
                    .with_partitions(
                        parts
                            .into_iter()
                            .map(|(index, r)| {
                                let r = unless_failed(r, failed);
                                OffsetDeleteResponsePartition::default()
                                    .with_partition_index(index)
                                    .with_error_code(r.err().map_or(0, |e| e.code()))
                            })
                            .collect(),
                    )
            })
            .collect();
        Some(ResponseKind::OffsetDelete(
            OffsetDeleteResponse::default().with_topics(topics),
        ))
    })
}

authorize_whole! {
    /// OffsetDelete needs KafkaDelete on the group.
    fn authorize(ctx, r: OffsetDeleteRequest) if ctx.may_group(DELETE, &r.group_id.0);
    else ResponseKind::OffsetDelete(OffsetDeleteResponse::default().with_error_code(GROUP_DENIED))
}
