//! ElectLeaders: every partition's leader is its one replica, placed by hashing onto the
//! listeners, so there is never an election to run: existing partitions answer
//! `ELECTION_NOT_NEEDED`, as Kafka does for a partition already led by its preferred
//! replica.

use crate::authz::*;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::ResponseKind;
use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse};

use crate::context::{Ctx, sb, topic_name};

/// Answers ElectLeaders (every partition when none is named).
pub async fn handle(ctx: &Ctx, req: ElectLeadersRequest) -> ElectLeadersResponse {
    let catalog = &ctx.broker.catalog;
    let wanted: Vec<(String, Vec<i32>)> = match req.topic_partitions {
        Some(tps) => tps
            .into_iter()
            .map(|t| (t.topic.to_string(), t.partitions))
            .collect(),
        None => match catalog.kafka().topics().await {
            Ok(topics) => topics
                .into_iter()
                .map(|t| {
                    let all = (0..t.partitions as i32).collect();
                    (t.name, all)
                })
                .collect(),
            // A read fault is the request's error, not an empty cluster.
            Err(e) => {
                return ElectLeadersResponse::default()
                    .with_error_code(crate::error::from_catalog(&e).code());
            }
        },
    };
    let mut results = Vec::new();
    for (name, parts) in wanted {
        results.push({
            let topic = catalog.kafka().topic(&name).await;
            let partition_result = parts
                .into_iter()
                .map(|p| {
                    let (error, message) = match &topic {
                        Ok(Some(t)) if t.has_partition(p) => (
                            ResponseError::ElectionNotNeeded,
                            "the partition's only replica leads it",
                        ),
                        Ok(_) => (
                            ResponseError::UnknownTopicOrPartition,
                            "no such topic or partition",
                        ),
                        // A read fault is not "no such topic": the client may retry.
                        Err(e) => (
                            crate::error::from_catalog(e),
                            "the catalog could not be read",
                        ),
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

authorize_whole! {
    /// ElectLeaders needs KafkaAlter on the cluster.
    fn authorize(ctx, r: ElectLeadersRequest) if ctx.may_cluster(ALTER);
    else ResponseKind::ElectLeaders(ElectLeadersResponse::default().with_error_code(CLUSTER_DENIED))
}
