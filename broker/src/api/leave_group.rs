//! LeaveGroup: one member (v0-2) or a batch of members by member or instance id (v3+)
//! leave, and the others rebalance.

use crate::authz::*;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse, ResponseKind};

use crate::context::{Ctx, Reply, ready, sb};

/// Handles LeaveGroup.
pub async fn handle(ctx: Ctx, req: LeaveGroupRequest) -> Reply {
    let version = ctx.version;
    let group = req.group_id.to_string();
    let refuse = |e: ResponseError| {
        ready(ResponseKind::LeaveGroup(
            LeaveGroupResponse::default().with_error_code(e.code()),
        ))
    };
    if group.is_empty() {
        return refuse(ResponseError::InvalidGroupId);
    }
    if !ctx.coordinates(&group) {
        return refuse(ResponseError::NotCoordinator);
    }
    let members: Vec<(String, Option<String>)> = if version >= 3 {
        req.members
            .iter()
            .map(|m| {
                (
                    m.member_id.to_string(),
                    m.group_instance_id.as_ref().map(|s| s.to_string()),
                )
            })
            .collect()
    } else {
        vec![(req.member_id.to_string(), None)]
    };
    let left = ctx.broker.groups.leave(&group, members.clone()).await;
    Box::pin(async move {
        let response = match left.await {
            Err(e) => LeaveGroupResponse::default().with_error_code(e.code()),
            Ok(results) if version < 3 => LeaveGroupResponse::default().with_error_code(
                results
                    .first()
                    .and_then(|r| r.err())
                    .map_or(0, |e| e.code()),
            ),
            Ok(results) => LeaveGroupResponse::default().with_members(
                members
                    .into_iter()
                    .zip(results)
                    .map(|((id, instance), r)| {
                        MemberResponse::default()
                            .with_member_id(sb(&id))
                            .with_group_instance_id(instance.map(|s| sb(&s)))
                            .with_error_code(r.err().map_or(0, |e| e.code()))
                    })
                    .collect(),
            ),
        };
        Some(ResponseKind::LeaveGroup(response))
    })
}

authorize_whole! {
    /// LeaveGroup needs KafkaRead on the group.
    fn authorize(ctx, r: LeaveGroupRequest) if ctx.may_group(READ, &r.group_id.0);
    else ResponseKind::LeaveGroup(LeaveGroupResponse::default().with_error_code(GROUP_DENIED))
}
