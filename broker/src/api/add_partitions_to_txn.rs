//! AddPartitionsToTxn (v0-3, the client's form): adds partitions to the producer's open
//! transaction, which begins it. Every partition must exist, or none is added (Kafka's
//! rule: the others answer OPERATION_NOT_ATTEMPTED).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ResponseKind,
};

use crate::context::{Ctx, Reply};
use crate::error::fenced_for;

/// Handles AddPartitionsToTxn.
pub async fn handle(ctx: Ctx, req: AddPartitionsToTxnRequest) -> Reply {
    let id = req.v3_and_below_transactional_id.to_string();
    let catalog = &ctx.broker.catalog;
    // (topic, partition, error if it cannot be added)
    let mut asked: Vec<(String, i32, Option<ResponseError>)> = Vec::new();
    for t in &req.v3_and_below_topics {
        let (topic, unreadable) = crate::context::found(catalog.kafka().topic(&t.name).await);
        for &p in &t.partitions {
            let error = match (&topic, unreadable) {
                (_, Some(e)) => Some(e),
                (Some(topic), None) if topic.has_partition(p) => None,
                _ => Some(ResponseError::UnknownTopicOrPartition),
            };
            asked.push((t.name.to_string(), p, error));
        }
    }
    let refused = asked.iter().any(|(_, _, e)| e.is_some());
    let outcome = if !ctx.coordinates(&id) {
        Err(ResponseError::NotCoordinator)
    } else if refused {
        Err(ResponseError::OperationNotAttempted)
    } else {
        Ok(ctx
            .broker
            .txns
            .add_partitions(
                &id,
                req.v3_and_below_producer_id.0,
                req.v3_and_below_producer_epoch,
                asked.iter().map(|(t, p, _)| (t.clone(), *p)).collect(),
            )
            .await)
    };
    let knows_fenced = ctx.version >= 2;
    Box::pin(async move {
        let result = match outcome {
            Ok(f) => f.await,
            Err(e) => Err(e),
        };
        let mut topics: Vec<AddPartitionsToTxnTopicResult> = Vec::new();
        for (name, p, own) in asked {
            let code = match (own, result) {
                (Some(e), _) => e.code(),
                (None, Err(e)) => fenced_for(e, knows_fenced).code(),
                (None, Ok(())) => 0,
            };
            let r = AddPartitionsToTxnPartitionResult::default()
                .with_partition_index(p)
                .with_partition_error_code(code);
            match topics.iter_mut().find(|t| *t.name == *name) {
                Some(t) => t.results_by_partition.push(r),
                None => topics.push(
                    AddPartitionsToTxnTopicResult::default()
                        .with_name(crate::context::topic_name(&name))
                        .with_results_by_partition(vec![r]),
                ),
            }
        }
        Some(ResponseKind::AddPartitionsToTxn(
            AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(topics),
        ))
    })
}
