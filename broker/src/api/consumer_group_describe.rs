//! ConsumerGroupDescribe (KIP-848): a consumer-protocol group's epochs, assignor and
//! members with their subscriptions, current and target assignments. A classic group
//! answers GROUP_ID_NOT_FOUND, as in Kafka (admin clients then fall back to
//! DescribeGroups).

use crate::authz::{DESCRIBE, answer_refused_groups, authorize_each};
use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, GroupId,
};

use crate::context::{Ctx, sb, topic_name, uuid};
use crate::group::consumer::assignor::Partitions;
use crate::group::consumer::state::ConsumerGroup;

/// `MemberType` of a consumer-protocol member (v1).
const CONSUMER_MEMBER: i8 = 1;

fn assignment(p: &Partitions, names: &BTreeMap<u128, String>) -> Assignment {
    Assignment::default().with_topic_partitions(
        p.iter()
            .map(|(t, ps)| {
                TopicPartitions::default()
                    .with_topic_id(uuid(*t))
                    .with_topic_name(topic_name(names.get(t).map_or("", String::as_str)))
                    .with_partitions(ps.iter().map(|p| *p as i32).collect())
            })
            .collect(),
    )
}

fn described(id: GroupId, g: &ConsumerGroup) -> DescribedGroup {
    let names: BTreeMap<u128, String> = g.topics.values().map(|t| (t.id, t.name.clone())).collect();
    DescribedGroup::default()
        .with_group_id(id)
        .with_group_state(sb(g.state_name()))
        .with_group_epoch(g.epoch)
        .with_assignment_epoch(g.assignment_epoch)
        .with_assignor_name(sb(g.assignor.name()))
        .with_authorized_operations(i32::MIN)
        .with_members(
            g.members
                .values()
                .map(|m| {
                    Member::default()
                        .with_member_id(sb(&m.id))
                        .with_instance_id(m.instance_id.as_deref().map(sb))
                        .with_rack_id(m.rack_id.as_deref().map(sb))
                        .with_member_epoch(m.epoch)
                        .with_client_id(sb(&m.client_id))
                        .with_client_host(sb(&m.client_host))
                        .with_subscribed_topic_names(
                            m.subscription.names.iter().map(|n| topic_name(n)).collect(),
                        )
                        .with_subscribed_topic_regex(m.subscription.regex.as_deref().map(sb))
                        .with_assignment(assignment(&m.assigned, &names))
                        .with_target_assignment(assignment(
                            g.target.get(&m.id).unwrap_or(&Partitions::new()),
                            &names,
                        ))
                        .with_member_type(CONSUMER_MEMBER)
                })
                .collect(),
        )
}

/// Handles ConsumerGroupDescribe.
pub async fn handle(ctx: &Ctx, req: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse {
    let groups = {
        let mut out = Vec::new();
        for id in req.group_ids.into_iter() {
            out.push(
                async {
                    let refused = |e: ResponseError, message: String| {
                        DescribedGroup::default()
                            .with_group_id(id.clone())
                            .with_error_code(e.code())
                            .with_error_message((!message.is_empty()).then(|| sb(&message)))
                            .with_group_state(sb("Dead"))
                    };
                    if id.is_empty() {
                        return refused(ResponseError::InvalidGroupId, String::new());
                    }
                    if !ctx.coordinates(&id) {
                        return refused(ResponseError::NotCoordinator, String::new());
                    }
                    match ctx.broker.groups.describe_consumer(&id).await {
                        Err((e, message)) => refused(e, message),
                        Ok(g) => described(id.clone(), &g),
                    }
                }
                .await,
            );
        }
        out
    };
    ConsumerGroupDescribeResponse::default().with_groups(groups)
}

authorize_each! {
    /// ConsumerGroupDescribe needs KafkaDescribe on each group.
    fn authorize(ConsumerGroupDescribeRequest, group_ids, keep_groups, DESCRIBE)
}

answer_refused_groups! {
    /// The groups [`authorize`] refused, put back into the response with their error.
    fn answer_refused(ConsumerGroupDescribeResponse, groups, DescribedGroup)
}
