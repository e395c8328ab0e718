//! EndTxn: commits or aborts the producer's open transaction. Its markers in every
//! partition and its offset commits are one catalog transaction, so the transaction is
//! visible everywhere or nowhere; the answer goes out once that is durable. From v5 the
//! client follows KIP-890 (transaction version 2): the end bumps the epoch, and the
//! answer carries the producer id and epoch to go on with.

use kafka_protocol::messages::{EndTxnRequest, EndTxnResponse, ProducerId, ResponseKind};

use crate::context::{Ctx, Reply};
use crate::error::fenced_for;
use crate::txn::state::Flow;

/// The first version of the transaction version 2 protocol.
const V2_FROM: i16 = 5;

/// Handles EndTxn.
pub async fn handle(ctx: Ctx, req: EndTxnRequest) -> Reply {
    let id = req.transactional_id.to_string();
    let flow = if ctx.version >= V2_FROM {
        Flow::V2
    } else {
        Flow::V1
    };
    let outcome = if ctx.coordinates(&id) {
        Ok(ctx
            .broker
            .txns
            .end(
                &id,
                req.producer_id.0,
                req.producer_epoch,
                req.committed,
                flow,
            )
            .await)
    } else {
        Err(kafka_protocol::error::ResponseError::NotCoordinator)
    };
    let knows_fenced = ctx.version >= 2;
    Box::pin(async move {
        let result = match outcome {
            Ok(f) => f.await,
            Err(e) => Err(e),
        };
        let (error, (producer_id, epoch)) = match result {
            Ok(after) => (0, after),
            Err(e) => (fenced_for(e, knows_fenced).code(), (-1, -1)),
        };
        Some(ResponseKind::EndTxn(
            EndTxnResponse::default()
                .with_error_code(error)
                .with_producer_id(ProducerId(producer_id))
                .with_producer_epoch(epoch),
        ))
    })
}
