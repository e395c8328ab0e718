//! ElectLeaders: every partition's leader is its one replica, placed by hashing onto the
//! listeners, so there is never an election to run: existing partitions answer
//! `ELECTION_NOT_NEEDED`, as Kafka does for a partition already led by its preferred
//! replica.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse};

use super::{Ctx, sb, topic_name};

/// Answers ElectLeaders (every partition when none is named).
pub async fn handle(ctx: &Ctx, req: ElectLeadersRequest) -> ElectLeadersResponse {
    let catalog = &ctx.broker.catalog;
    let wanted: Vec<(String, Vec<i32>)> = match req.topic_partitions {
        Some(tps) => tps
            .into_iter()
            .map(|t| (t.topic.to_string(), t.partitions))
            .collect(),
        None => catalog
            .topics()
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|t| {
                let all = (0..t.partitions as i32).collect();
                (t.name, all)
            })
            .collect(),
    };
    let mut results = Vec::new();
    for (name, parts) in wanted {
        results.push({
            let topic = catalog.topic(&name).await.ok().flatten();
            let partition_result = parts
                .into_iter()
                .map(|p| {
                    let exists = topic.as_ref().is_some_and(|t| t.has_partition(p));
                    let (error, message) = if exists {
                        (
                            ResponseError::ElectionNotNeeded,
                            "the partition's only replica leads it",
                        )
                    } else {
                        (
                            ResponseError::UnknownTopicOrPartition,
                            "no such topic or partition",
                        )
                    };
                    PartitionResult::default()
                        .with_partition_id(p)
                        .with_error_code(error.code())
                        .with_error_message(Some(sb(message)))
                })
                .collect();
            ReplicaElectionResult::default()
                .with_topic(topic_name(&name))
                .with_partition_result(partition_result)
        });
    }
    ElectLeadersResponse::default().with_replica_election_results(results)
}
