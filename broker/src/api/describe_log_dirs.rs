//! DescribeLogDirs: the node's one "log dir" (Eddy's data dir, shared by every listener
//! over the same erasure-coded drives) with the partitions this node leads and their
//! stored bytes (record batches as stored, before erasure coding). Capacity is not
//! reported (-1): the drives are shared and `/health` and the drive metrics say more.

use crate::authz::{CLUSTER_DENIED, DESCRIBE, authorize_whole};
use kafka_protocol::messages::ResponseKind;
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse};

use crate::context::{Ctx, sb, topic_name};

/// Answers DescribeLogDirs (every topic when none is named).
pub async fn handle(ctx: &Ctx, req: DescribeLogDirsRequest) -> DescribeLogDirsResponse {
    let catalog = &ctx.broker.catalog;
    let wanted: Vec<(String, Option<Vec<i32>>)> = match req.topics {
        Some(ts) => ts
            .into_iter()
            .map(|t| (t.topic.to_string(), Some(t.partitions)))
            .collect(),
        None => match catalog.kafka().topics().await {
            Ok(ts) => ts.into_iter().map(|t| (t.name, None)).collect(),
            Err(e) => {
                return DescribeLogDirsResponse::default()
                    .with_error_code(crate::error::from_catalog(&e).code());
            }
        },
    };
    let mut topics = Vec::new();
    // A read fault is the dir's error (as a failed disk is Kafka's), not a missing topic
    // or an empty partition.
    let mut fault = None;
    for (name, parts) in wanted {
        let t = match catalog.kafka().topic(&name).await {
            Ok(Some(t)) => t,
            Ok(None) => continue,
            Err(e) => {
                fault = Some(crate::error::from_catalog(&e));
                continue;
            }
        };
        let indexes = parts.unwrap_or_else(|| (0..t.partitions as i32).collect());
        let partitions: Vec<_> = {
            let mut out = Vec::new();
            for p in indexes
                .into_iter()
                .filter(|p| t.has_partition(*p) && ctx.leads(&t.name, *p))
            {
                out.push({
                    let size = match catalog.kafka().partition(t.id, p as u32).await {
                        Ok(state) => state.map_or(0, |s| s.bytes as i64),
                        Err(e) => {
                            fault = Some(crate::error::from_catalog(&e));
                            -1
                        }
                    };
                    DescribeLogDirsPartition::default()
                        .with_partition_index(p)
                        .with_partition_size(size)
                        .with_offset_lag(0)
                        .with_is_future_key(false)
                });
            }
            out
        };
        if !partitions.is_empty() {
            topics.push(
                DescribeLogDirsTopic::default()
                    .with_name(topic_name(&t.name))
                    .with_partitions(partitions),
            );
        }
    }
    let dir = DescribeLogDirsResult::default()
        .with_error_code(fault.map_or(0, |e| e.code()))
        .with_log_dir(sb(&ctx.broker.config.log_dir))
        .with_topics(topics)
        .with_total_bytes(-1)
        .with_usable_bytes(-1);
    DescribeLogDirsResponse::default().with_results(vec![dir])
}

authorize_whole! {
    /// DescribeLogDirs needs KafkaDescribe on the cluster.
    fn authorize(ctx, r: DescribeLogDirsRequest) if ctx.may_cluster(DESCRIBE);
    else ResponseKind::DescribeLogDirs(DescribeLogDirsResponse::default()
        .with_error_code(CLUSTER_DENIED))
}
