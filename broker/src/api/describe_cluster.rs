//! DescribeCluster: the brokers (every listener address) and the cluster id.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};

use crate::context::{Ctx, sb};

/// Answers DescribeCluster.
pub fn handle(ctx: &Ctx, _req: DescribeClusterRequest) -> DescribeClusterResponse {
    let brokers = super::metadata::brokers(ctx)
        .into_iter()
        .map(|b| {
            DescribeClusterBroker::default()
                .with_broker_id(b.node_id)
                .with_host(b.host)
                .with_port(b.port)
        })
        .collect();
    DescribeClusterResponse::default()
        .with_cluster_id(sb(&ctx.broker.config.cluster_id))
        .with_controller_id(BrokerId(0))
        .with_brokers(brokers)
}
