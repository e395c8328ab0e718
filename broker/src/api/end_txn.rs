//! EndTxn: commits or aborts the producer's open transaction. Its markers in every
//! partition and its offset commits are one catalog transaction, so the transaction is
//! visible everywhere or nowhere; the answer goes out once that is durable.

use kafka_protocol::messages::{EndTxnRequest, EndTxnResponse, ResponseKind};

use crate::context::{Ctx, Reply};
use crate::error::fenced_for;

/// Handles EndTxn.
pub async fn handle(ctx: Ctx, req: EndTxnRequest) -> Reply {
    let id = req.transactional_id.to_string();
    let outcome = if ctx.coordinates(&id) {
        Ok(ctx
            .broker
            .txns
            .end(&id, req.producer_id.0, req.producer_epoch, req.committed)
            .await)
    } else {
        Err(kafka_protocol::error::ResponseError::NotCoordinator)
    };
    let (producer_id, epoch) = (req.producer_id, req.producer_epoch);
    let knows_fenced = ctx.version >= 2;
    Box::pin(async move {
        let result = match outcome {
            Ok(f) => f.await,
            Err(e) => Err(e),
        };
        Some(ResponseKind::EndTxn(
            EndTxnResponse::default()
                .with_error_code(
                    result
                        .err()
                        .map_or(0, |e| fenced_for(e, knows_fenced).code()),
                )
                .with_producer_id(producer_id)
                .with_producer_epoch(epoch),
        ))
    })
}
