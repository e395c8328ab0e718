//! Heartbeat: keeps a member's session alive and tells it when to rejoin.

use crate::authz::*;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::ResponseKind;
use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};

use crate::context::Ctx;

/// Handles Heartbeat.
pub async fn handle(ctx: &Ctx, req: HeartbeatRequest) -> HeartbeatResponse {
    let group = req.group_id.to_string();
    let result = if group.is_empty() {
        Err(ResponseError::InvalidGroupId)
    } else if !ctx.coordinates(&group) {
        Err(ResponseError::NotCoordinator)
    } else {
        ctx.broker
            .groups
            .heartbeat(
                &group,
                &req.member_id,
                req.group_instance_id.as_deref(),
                req.generation_id,
            )
            .await
    };
    HeartbeatResponse::default().with_error_code(result.err().map_or(0, |e| e.code()))
}

authorize_whole! {
    /// Heartbeat needs KafkaRead on the group.
    fn authorize(ctx, r: HeartbeatRequest) if ctx.may_group(READ, &r.group_id.0);
    else ResponseKind::Heartbeat(HeartbeatResponse::default().with_error_code(GROUP_DENIED))
}
