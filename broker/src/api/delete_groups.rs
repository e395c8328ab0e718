//! DeleteGroups: groups without members are deleted with their committed offsets, in
//! one transaction.

use crate::authz::*;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::delete_groups_response;
use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse, GroupId, ResponseKind};

use crate::context::{Ctx, Reply, sb};

/// Handles DeleteGroups.
pub async fn handle(ctx: Ctx, req: DeleteGroupsRequest) -> Reply {
    let mut refused = Vec::new();
    let mut ours = Vec::new();
    for g in req.groups_names {
        if g.is_empty() {
            refused.push((g.to_string(), ResponseError::InvalidGroupId));
        } else if !ctx.coordinates(&g) {
            refused.push((g.to_string(), ResponseError::NotCoordinator));
        } else {
            ours.push(g.to_string());
        }
    }
    let deleted = ctx.broker.groups.delete(ours).await;
    Box::pin(async move {
        let results = deleted
            .await
            .into_iter()
            .chain(refused.into_iter().map(|(g, e)| (g, Err(e))))
            .map(|(g, r)| {
                DeletableGroupResult::default()
                    .with_group_id(GroupId(sb(&g)))
                    .with_error_code(r.err().map_or(0, |e| e.code()))
            })
            .collect();
        Some(ResponseKind::DeleteGroups(
            DeleteGroupsResponse::default().with_results(results),
        ))
    })
}

authorize_each! {
    /// DeleteGroups needs KafkaDelete on each group.
    fn authorize(DeleteGroupsRequest, groups_names, keep_groups, DELETE)
}

answer_refused_groups! {
    /// The parts [`authorize`] refused, put back into the response with their errors.
    fn answer_refused(DeleteGroupsResponse, results, delete_groups_response::DeletableGroupResult)
}
