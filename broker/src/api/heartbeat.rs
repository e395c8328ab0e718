//! Heartbeat: keeps a member's session alive and tells it when to rejoin.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};

use super::Ctx;

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
