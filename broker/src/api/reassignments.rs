//! ListPartitionReassignments and AlterPartitionReassignments. A partition has one copy,
//! on the erasure-coded drives every listener shares, and its leader is placed by hashing;
//! there is nothing to move. So no reassignment is ever in progress, a reassignment to the
//! partition's leader alone is accepted as already done, and any other is refused with
//! `INVALID_REPLICA_ASSIGNMENT` and the reason.

use crate::authz::*;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::ResponseKind;
use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, BrokerId,
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
};

use crate::context::{Ctx, sb, topic_name};

/// Answers ListPartitionReassignments: none in progress.
pub fn list(req: ListPartitionReassignmentsRequest) -> ListPartitionReassignmentsResponse {
    let _ = req;
    ListPartitionReassignmentsResponse::default()
}

/// Answers AlterPartitionReassignments.
pub async fn alter(
    ctx: &Ctx,
    req: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    let catalog = &ctx.broker.catalog;
    let responses = {
        let mut out = Vec::new();
        for t in req.topics.into_iter() {
            out.push({
            let name = t.name.to_string();
            let topic = catalog.kafka().topic(&name).await;
            let partitions = t
                .partitions
                .into_iter()
                .map(|p| {
                    let i = p.partition_index;
                    let exists = match &topic {
                        Ok(topic) => topic.as_ref().is_some_and(|t| t.has_partition(i)),
                        // A read fault is not "no such topic": the client may retry.
                        Err(e) => {
                            return ReassignablePartitionResponse::default()
                                .with_partition_index(i)
                                .with_error_code(crate::error::from_catalog(e).code())
                                .with_error_message(Some(sb("the catalog could not be read")));
                        }
                    };
                    let leader = BrokerId(ctx.broker.cluster.leader(&name, i));
                    let (error, message) = match p.replicas {
                        _ if !exists => (Some(ResponseError::UnknownTopicOrPartition), None),
                        None => (
                            Some(ResponseError::NoReassignmentInProgress),
                            Some("no reassignment is ever in progress"),
                        ),
                        Some(r) if r == [leader] => (None, None),
                        Some(_) => (
                            Some(ResponseError::InvalidReplicaAssignment),
                            Some(
                                "each partition has one copy on the shared erasure-coded drives, led by the listener its name hashes to; it cannot be moved or replicated",
                            ),
                        ),
                    };
                    ReassignablePartitionResponse::default()
                        .with_partition_index(i)
                        .with_error_code(error.map_or(0, |e| e.code()))
                        .with_error_message(message.map(sb))
                })
                .collect();
            ReassignableTopicResponse::default()
                .with_name(topic_name(&name))
                .with_partitions(partitions)
        });
        }
        out
    };
    AlterPartitionReassignmentsResponse::default().with_responses(responses)
}

authorize_whole! {
    /// AlterPartitionReassignments needs KafkaAlter on the cluster.
    fn authorize_alter_partition_reassignments(ctx, r: AlterPartitionReassignmentsRequest)
        if ctx.may_cluster(ALTER);
    else ResponseKind::AlterPartitionReassignments(AlterPartitionReassignmentsResponse::default()
        .with_error_code(CLUSTER_DENIED))
}
