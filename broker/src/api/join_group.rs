//! JoinGroup: the member waits until every member has (re)joined or the rebalance
//! timeout ends, then learns the generation, the chosen protocol and the leader; the
//! leader also gets every member's metadata. Protocols and metadata pass through
//! untouched, so any client-side assignor (eager, cooperative, Connect's) works.

use crate::authz::*;
use std::time::Duration;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse, ResponseKind};

use crate::context::{Ctx, Reply, ready, sb};
use crate::group::member::{JoinAnswer, JoinRequest};

/// Handles JoinGroup.
pub async fn handle(ctx: Ctx, req: JoinGroupRequest) -> Reply {
    let version = ctx.version;
    let group = req.group_id.to_string();
    let refuse = |e: ResponseError| {
        ready(ResponseKind::JoinGroup(response(
            JoinAnswer::refused(e, &req.member_id),
            version,
        )))
    };
    if group.is_empty() {
        return refuse(ResponseError::InvalidGroupId);
    }
    if !ctx.coordinates(&group) {
        return refuse(ResponseError::NotCoordinator);
    }
    let session = Duration::from_millis(req.session_timeout_ms.max(0) as u64);
    let rebalance = if version >= 1 && req.rebalance_timeout_ms >= 0 {
        Duration::from_millis(req.rebalance_timeout_ms as u64)
    } else {
        session
    };
    let join = JoinRequest {
        member_id: req.member_id.to_string(),
        instance_id: req.group_instance_id.as_ref().map(|s| s.to_string()),
        client_id: ctx.client_id.clone().unwrap_or_default(),
        client_host: format!("/{}", ctx.peer.ip()),
        session_timeout: session,
        rebalance_timeout: rebalance,
        protocol_type: req.protocol_type.to_string(),
        protocols: req
            .protocols
            .into_iter()
            .map(|p| (p.name.to_string(), p.metadata))
            .collect(),
        require_known_member_id: version >= 4,
    };
    let answer = ctx.broker.groups.join(&group, join).await;
    Box::pin(async move { Some(ResponseKind::JoinGroup(response(answer.await, version))) })
}

fn response(a: JoinAnswer, version: i16) -> JoinGroupResponse {
    // The protocol name is nullable only from v7.
    let protocol_name = match a.protocol_name {
        None if version < 7 => Some(sb("")),
        other => other.map(|s| sb(&s)),
    };
    JoinGroupResponse::default()
        .with_error_code(a.error.map_or(0, |e| e.code()))
        .with_generation_id(a.generation)
        .with_protocol_type(a.protocol_type.map(|s| sb(&s)))
        .with_protocol_name(protocol_name)
        .with_leader(sb(&a.leader))
        .with_skip_assignment(a.skip_assignment && version >= 9)
        .with_member_id(sb(&a.member_id))
        .with_members(
            a.members
                .into_iter()
                .map(|m| {
                    JoinGroupResponseMember::default()
                        .with_member_id(sb(&m.member_id))
                        .with_group_instance_id(m.instance_id.map(|s| sb(&s)))
                        .with_metadata(m.metadata)
                })
                .collect(),
        )
}

authorize_whole! {
    /// JoinGroup needs KafkaRead on the group.
    fn authorize(ctx, r: JoinGroupRequest) if ctx.may_group(READ, &r.group_id.0);
    else ResponseKind::JoinGroup(JoinGroupResponse::default()
        .with_error_code(GROUP_DENIED)
        .with_generation_id(-1))
}
