//! SyncGroup: the leader sends every member's assignment; once it is durable each
//! member gets its own, untouched.

use crate::authz::*;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{ResponseKind, SyncGroupRequest, SyncGroupResponse};

use crate::context::{Ctx, Reply, ready, sb};

/// Handles SyncGroup.
pub async fn handle(ctx: Ctx, req: SyncGroupRequest) -> Reply {
    let group = req.group_id.to_string();
    let refuse = |e: ResponseError| {
        ready(ResponseKind::SyncGroup(
            SyncGroupResponse::default().with_error_code(e.code()),
        ))
    };
    if group.is_empty() {
        return refuse(ResponseError::InvalidGroupId);
    }
    if !ctx.coordinates(&group) {
        return refuse(ResponseError::NotCoordinator);
    }
    let assignments = req
        .assignments
        .into_iter()
        .map(|a| (a.member_id.to_string(), a.assignment))
        .collect();
    let answer = ctx
        .broker
        .groups
        .sync(
            &group,
            &req.member_id,
            req.group_instance_id.as_deref(),
            req.generation_id,
            req.protocol_type.as_deref(),
            req.protocol_name.as_deref(),
            assignments,
        )
        .await;
    Box::pin(async move {
        let response = match answer.await {
            Ok(a) => SyncGroupResponse::default()
                .with_protocol_type(a.protocol_type.map(|s| sb(&s)))
                .with_protocol_name(a.protocol_name.map(|s| sb(&s)))
                .with_assignment(a.assignment),
            Err(e) => SyncGroupResponse::default().with_error_code(e.code()),
        };
        Some(ResponseKind::SyncGroup(response))
    })
}

authorize_whole! {
    /// SyncGroup needs KafkaRead on the group.
    fn authorize(ctx, r: SyncGroupRequest) if ctx.may_group(READ, &r.group_id.0);
    else ResponseKind::SyncGroup(SyncGroupResponse::default().with_error_code(GROUP_DENIED))
}
