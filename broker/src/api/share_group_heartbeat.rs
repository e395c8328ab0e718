//! ShareGroupHeartbeat (KIP-932): joins, keeps and leaves a member of a share group,
//! answering the group epoch and, when it is new to the member, the partitions it
//! should fetch from. Members choose their own ids.

use crate::authz::*;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::share_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{
    ResponseKind, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
};

use crate::api::consumer_group_heartbeat::assigned;
use crate::context::{Ctx, Reply, ready, sb};
use crate::group::share::state::ShareBeat;

fn refused(e: ResponseError, message: &str) -> ResponseKind {
    ResponseKind::ShareGroupHeartbeat(
        ShareGroupHeartbeatResponse::default()
            .with_error_code(e.code())
            .with_error_message((!message.is_empty()).then(|| sb(message)))
            .with_member_epoch(-1),
    )
}

/// Handles ShareGroupHeartbeat.
pub async fn handle(ctx: Ctx, req: ShareGroupHeartbeatRequest) -> Reply {
    let group = req.group_id.to_string();
    if group.is_empty() {
        return ready(refused(
            ResponseError::InvalidRequest,
            "GroupId can't be empty",
        ));
    }
    if req.member_id.is_empty() {
        return ready(refused(
            ResponseError::InvalidRequest,
            "MemberId can't be empty",
        ));
    }
    if !ctx.coordinates(&group) {
        return ready(refused(ResponseError::NotCoordinator, ""));
    }
    let beat = ShareBeat {
        member_id: req.member_id.to_string(),
        epoch: req.member_epoch,
        rack_id: req.rack_id.map(|s| s.to_string()),
        names: req
            .subscribed_topic_names
            .map(|ts| ts.into_iter().map(|t| t.to_string()).collect()),
        client_id: ctx.client_id.clone().unwrap_or_default(),
        client_host: format!("/{}", ctx.peer.ip()),
    };
    let answer = ctx.broker.groups.share_heartbeat(&group, beat).await;
    Box::pin(async move {
        Some(match answer.await {
            Err((e, message)) => refused(e, &message),
            Ok((a, interval)) => {
                if let Some(p) = &a.assignment {
                    tracing::debug!(group, member = %a.member_id, epoch = a.epoch, assignment = ?p, "share member assigned");
                }
                let assignment = a.assignment.map(|p| {
                    Assignment::default().with_topic_partitions(
                        assigned(p)
                            .map(|(id, ps)| {
                                TopicPartitions::default()
                                    .with_topic_id(id)
                                    .with_partitions(ps)
                            })
                            .collect(),
                    )
                });
                ResponseKind::ShareGroupHeartbeat(
                    ShareGroupHeartbeatResponse::default()
                        .with_member_id(Some(sb(&a.member_id)))
                        .with_member_epoch(a.epoch)
                        .with_heartbeat_interval_ms(interval.as_millis() as i32)
                        .with_assignment(assignment),
                )
            }
        })
    })
}

authorize_whole! {
    /// ShareGroupHeartbeat needs KafkaRead on the group.
    fn authorize(ctx, r: ShareGroupHeartbeatRequest) if ctx.may_group(READ, &r.group_id.0);
    else ResponseKind::ShareGroupHeartbeat(ShareGroupHeartbeatResponse::default()
        .with_error_code(GROUP_DENIED))
}
