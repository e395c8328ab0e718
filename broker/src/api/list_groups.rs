//! ListGroups: the groups this address coordinates, filtered by state (v4+) and type
//! (v5+: `classic` or `consumer`, KIP-848).

use crate::authz::*;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};

use crate::context::{Ctx, sb};

/// Handles ListGroups.
pub async fn handle(ctx: &Ctx, req: ListGroupsRequest) -> ListGroupsResponse {
    let states: Vec<String> = req.states_filter.iter().map(|s| s.to_lowercase()).collect();
    let types: Vec<String> = req.types_filter.iter().map(|s| s.to_lowercase()).collect();
    match ctx.broker.groups.list(|g| ctx.coordinates(g)).await {
        Err(e) => ListGroupsResponse::default().with_error_code(e.code()),
        Ok(groups) => ListGroupsResponse::default().with_groups(
            groups
                .into_iter()
                .filter(|g| states.is_empty() || states.contains(&g.state.to_lowercase()))
                .filter(|g| types.is_empty() || types.iter().any(|t| t == g.group_type))
                .map(|g| {
                    ListedGroup::default()
                        .with_group_id(GroupId(sb(&g.name)))
                        .with_protocol_type(sb(&g.protocol_type))
                        .with_group_state(sb(g.state))
                        .with_group_type(sb(g.group_type))
                })
                .collect(),
        ),
    }
}

/// ListGroups needs KafkaDescribe on each group listed (the others are left out).
pub(crate) fn authorize(r: ListGroupsRequest, out: &mut Refused) -> Authorized<ListGroupsRequest> {
    out.hidden = true;
    Ok(r)
}

/// The parts [`authorize`] refused, put back into the response with their errors.
pub(crate) fn answer_refused(ctx: &Ctx, mut r: ListGroupsResponse) -> ListGroupsResponse {
    r.groups.retain(|g| ctx.may_group(DESCRIBE, &g.group_id.0));
    r
}
