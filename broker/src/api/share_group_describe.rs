//! ShareGroupDescribe (KIP-932): a share group's state, epoch and members with their
//! subscriptions and assigned partitions. Another kind of group answers
//! GROUP_ID_NOT_FOUND, as in Kafka.

use crate::authz::{DESCRIBE, answer_refused_groups, authorize_each};
use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::share_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{GroupId, ShareGroupDescribeRequest, ShareGroupDescribeResponse};

use crate::context::{Ctx, sb, topic_name, uuid};
use crate::group::share::state::ShareGroup;

fn described(id: GroupId, g: &ShareGroup) -> DescribedGroup {
    let names: BTreeMap<u128, &str> = g.topics.iter().map(|t| (t.id, t.name.as_str())).collect();
    DescribedGroup::default()
        .with_group_id(id)
        .with_group_state(sb(g.state_name()))
        .with_group_epoch(g.epoch)
        .with_assignment_epoch(g.epoch)
        .with_assignor_name(sb("simple"))
        .with_authorized_operations(i32::MIN)
        .with_members(
            g.members
                .values()
                .map(|m| {
                    Member::default()
                        .with_member_id(sb(&m.id))
                        .with_rack_id(m.rack_id.as_deref().map(sb))
                        .with_member_epoch(m.epoch)
                        .with_client_id(sb(&m.client_id))
                        .with_client_host(sb(&m.client_host))
                        .with_subscribed_topic_names(
                            m.names.iter().map(|n| topic_name(n)).collect(),
                        )
                        .with_assignment(
                            Assignment::default().with_topic_partitions(
                                m.assignment
                                    .iter()
                                    .map(|(t, ps)| {
                                        TopicPartitions::default()
                                            .with_topic_id(uuid(*t))
                                            .with_topic_name(topic_name(
                                                names.get(t).copied().unwrap_or(""),
                                            ))
                                            .with_partitions(ps.iter().map(|p| *p as i32).collect())
                                    })
                                    .collect(),
                            ),
                        )
                })
                .collect(),
        )
}

/// Handles ShareGroupDescribe.
pub async fn handle(ctx: &Ctx, req: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse {
    let mut groups = Vec::with_capacity(req.group_ids.len());
    for id in req.group_ids {
        let refused = |e: ResponseError, message: String| {
            DescribedGroup::default()
                .with_group_id(id.clone())
                .with_error_code(e.code())
                .with_error_message((!message.is_empty()).then(|| sb(&message)))
                .with_group_state(sb("Dead"))
        };
        groups.push(if id.is_empty() {
            refused(ResponseError::InvalidGroupId, String::new())
        } else if !ctx.coordinates(&id) {
            refused(ResponseError::NotCoordinator, String::new())
        } else {
            match ctx.broker.groups.describe_share(&id).await {
                Err((e, message)) => refused(e, message),
                Ok(g) => described(id.clone(), &g),
            }
        });
    }
    ShareGroupDescribeResponse::default().with_groups(groups)
}

authorize_each! {
    /// ShareGroupDescribe needs KafkaDescribe on each group.
    fn authorize(ShareGroupDescribeRequest, group_ids, keep_groups, DESCRIBE)
}

answer_refused_groups! {
    /// The groups [`authorize`] refused, put back into the response with their error.
    fn answer_refused(ShareGroupDescribeResponse, groups, DescribedGroup)
}
