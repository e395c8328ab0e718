//! InitProducerId: for an idempotent producer a new durable producer id with epoch 0; for
//! a transactional one the id's producer id with its epoch bumped, by the transaction
//! coordinator (which aborts the previous producer's open transaction first).

use catalog::KafkaOp;
use catalog::{Op, OpOutcome, Transaction};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    InitProducerIdRequest, InitProducerIdResponse, ProducerId, ResponseKind,
};

use crate::context::{Ctx, Reply};
use crate::error::from_catalog;

/// Handles InitProducerId.
pub async fn handle(ctx: Ctx, req: InitProducerIdRequest) -> Reply {
    let refused = |e: ResponseError| {
        Some(ResponseKind::InitProducerId(
            InitProducerIdResponse::default()
                .with_error_code(e.code())
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        ))
    };
    if let Some(id) = req.transactional_id.as_ref().map(|i| i.to_string()) {
        if id.is_empty() {
            return Box::pin(std::future::ready(refused(ResponseError::InvalidRequest)));
        }
        if !ctx.coordinates(&id) {
            return Box::pin(std::future::ready(refused(ResponseError::NotCoordinator)));
        }
        let init = ctx.broker.txns.init(id, req.transaction_timeout_ms).await;
        return Box::pin(async move {
            match init.await {
                Ok((producer_id, epoch)) => Some(ResponseKind::InitProducerId(
                    InitProducerIdResponse::default()
                        .with_producer_id(ProducerId(producer_id))
                        .with_producer_epoch(epoch),
                )),
                Err(e) => refused(e),
            }
        });
    }
    let commit = ctx.broker.catalog.commit(Transaction::new(vec![Op::Kafka(
        KafkaOp::AllocateProducerId,
    )]));
    Box::pin(async move {
        match commit.await {
            Ok(out) => match out.ops.first() {
                Some(OpOutcome::ProducerId(id)) => Some(ResponseKind::InitProducerId(
                    InitProducerIdResponse::default()
                        .with_producer_id(ProducerId(*id))
                        .with_producer_epoch(0),
                )),
                _ => refused(ResponseError::UnknownServerError),
            },
            Err(e) => refused(from_catalog(&e)),
        }
    })
}
