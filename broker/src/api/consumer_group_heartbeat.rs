//! ConsumerGroupHeartbeat (KIP-848): joins, leaves and keeps a member of a
//! consumer-protocol group, answering its epoch and, when it changed, the partitions it
//! should own. v1 members choose their own ids (KIP-1082); v0 members get one here.

use crate::authz::*;
use std::collections::BTreeSet;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, ResponseKind,
};

use crate::context::{Ctx, Reply, ready, sb, uuid};
use crate::group::consumer::assignor::Partitions;
use crate::group::consumer::state::Beat;

fn refused(e: ResponseError, message: &str) -> ResponseKind {
    ResponseKind::ConsumerGroupHeartbeat(
        ConsumerGroupHeartbeatResponse::default()
            .with_error_code(e.code())
            .with_error_message((!message.is_empty()).then(|| sb(message)))
            .with_member_epoch(-1),
    )
}

/// An assignment as heartbeat answers carry it (this one's and ShareGroupHeartbeat's):
/// each topic's id with its partitions.
pub(crate) fn assigned(p: Partitions) -> impl Iterator<Item = (uuid::Uuid, Vec<i32>)> {
    p.into_iter()
        .map(|(t, ps)| (uuid(t), ps.into_iter().map(|p| p as i32).collect()))
}

/// Handles ConsumerGroupHeartbeat.
pub async fn handle(ctx: Ctx, req: ConsumerGroupHeartbeatRequest) -> Reply {
    let group = req.group_id.to_string();
    if group.is_empty() {
        return ready(refused(
            ResponseError::InvalidRequest,
            "GroupId can't be empty",
        ));
    }
    if ctx.version >= 1 && req.member_id.is_empty() {
        return ready(refused(
            ResponseError::InvalidRequest,
            "MemberId can't be empty",
        ));
    }
    if !ctx.coordinates(&group) {
        return ready(refused(ResponseError::NotCoordinator, ""));
    }
    let owned = req.topic_partitions.map(|tps| {
        let mut out = Partitions::new();
        for tp in tps {
            let set: &mut BTreeSet<u32> = out.entry(tp.topic_id.as_u128()).or_default();
            set.extend(tp.partitions.iter().filter_map(|p| u32::try_from(*p).ok()));
        }
        out
    });
    let beat = Beat {
        member_id: req.member_id.to_string(),
        epoch: req.member_epoch,
        instance_id: req.instance_id.map(|s| s.to_string()),
        rack_id: req.rack_id.map(|s| s.to_string()),
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        names: req
            .subscribed_topic_names
            .map(|ts| ts.into_iter().map(|t| t.to_string()).collect()),
        regex: req.subscribed_topic_regex.map(|s| s.to_string()),
        assignor: req.server_assignor.map(|s| s.to_string()),
        owned,
        client_id: ctx.client_id.clone().unwrap_or_default(),
        client_host: format!("/{}", ctx.peer.ip()),
    };
    let answer = ctx.broker.groups.consumer_heartbeat(&group, beat).await;
    Box::pin(async move {
        Some(match answer.await {
            Err((e, message)) => refused(e, &message),
            Ok((a, interval)) => ResponseKind::ConsumerGroupHeartbeat(
                ConsumerGroupHeartbeatResponse::default()
                    .with_member_id(Some(sb(&a.member_id)))
                    .with_member_epoch(a.epoch)
                    .with_heartbeat_interval_ms(interval.as_millis() as i32)
                    .with_assignment(a.assignment.map(|p| {
                        Assignment::default().with_topic_partitions(
                            assigned(p)
                                .map(|(id, ps)| {
                                    TopicPartitions::default()
                                        .with_topic_id(id)
                                        .with_partitions(ps)
                                })
                                .collect(),
                        )
                    })),
            ),
        })
    })
}

authorize_whole! {
    /// ConsumerGroupHeartbeat needs KafkaRead on the group.
    fn authorize(ctx, r: ConsumerGroupHeartbeatRequest) if ctx.may_group(READ, &r.group_id.0);
    else ResponseKind::ConsumerGroupHeartbeat(ConsumerGroupHeartbeatResponse::default()
        .with_error_code(GROUP_DENIED))
}
