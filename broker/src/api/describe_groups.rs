//! DescribeGroups: state, protocol and members of each group; metadata and
//! assignments only for a stable group, as in Kafka. An unknown group is reported
//! `Dead` with no error.

use crate::authz::*;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_groups_response;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse};

use crate::context::{Ctx, sb};

/// Handles DescribeGroups.
pub async fn handle(ctx: &Ctx, req: DescribeGroupsRequest) -> DescribeGroupsResponse {
    let groups = {
        let mut out = Vec::new();
        for id in req.groups.into_iter() {
            out.push(
                async {
                    let refused = |e: ResponseError| {
                        DescribedGroup::default()
                            .with_group_id(id.clone())
                            .with_error_code(e.code())
                            .with_group_state(sb("Dead"))
                    };
                    if !ctx.coordinates(&id) {
                        return refused(ResponseError::NotCoordinator);
                    }
                    match ctx.broker.groups.describe(&id).await {
                        Err(e) => refused(e),
                        Ok(None) => DescribedGroup::default()
                            .with_group_id(id.clone())
                            .with_group_state(sb("Dead")),
                        Ok(Some(g)) => DescribedGroup::default()
                            .with_group_id(id.clone())
                            .with_group_state(sb(g.state))
                            .with_protocol_type(sb(&g.protocol_type))
                            .with_protocol_data(sb(&g.protocol_name))
                            .with_members(
                                g.members
                                    .into_iter()
                                    .map(|m| {
                                        DescribedGroupMember::default()
                                            .with_member_id(sb(&m.member_id))
                                            .with_group_instance_id(
                                                m.instance_id
                                                    .filter(|_| ctx.version >= 4)
                                                    .map(|s| sb(&s)),
                                            )
                                            .with_client_id(sb(&m.client_id))
                                            .with_client_host(sb(&m.client_host))
                                            .with_member_metadata(m.metadata)
                                            .with_member_assignment(m.assignment)
                                    })
                                    .collect(),
                            ),
                    }
                }
                .await,
            );
        }
        out
    };
    DescribeGroupsResponse::default().with_groups(groups)
}

authorize_each! {
    /// DescribeGroups needs KafkaDescribe on each group.
    fn authorize(DescribeGroupsRequest, groups, keep_groups, DESCRIBE)
}

answer_refused_groups! {
    /// The parts [`authorize`] refused, put back into the response with their errors.
    fn answer_refused(DescribeGroupsResponse, groups, describe_groups_response::DescribedGroup)
}
