//! InitProducerId for idempotent producers: a new durable producer id with epoch 0.
//! Transactions are not supported, so a transactional id is refused.

use catalog::{Op, OpOutcome, Transaction};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    InitProducerIdRequest, InitProducerIdResponse, ProducerId, ResponseKind,
};

use super::{Ctx, Reply};
use crate::error::from_catalog;

/// Handles InitProducerId.
pub fn handle(ctx: Ctx, req: InitProducerIdRequest) -> Reply {
    let refused = |e: ResponseError| {
        Some(ResponseKind::InitProducerId(
            InitProducerIdResponse::default()
                .with_error_code(e.code())
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        ))
    };
    if req.transactional_id.is_some() {
        return Box::pin(std::future::ready(refused(
            ResponseError::TransactionalIdAuthorizationFailed,
        )));
    }
    let commit = ctx
        .broker
        .catalog
        .commit(Transaction::new(vec![Op::AllocateProducerId]));
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
