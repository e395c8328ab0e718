//! AddOffsetsToTxn: adds a consumer group to the producer's open transaction, so its
//! TxnOffsetCommits are committed (or dropped) with it.

use crate::authz::{GROUP_DENIED, READ, authorize_whole};
use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, ResponseKind};

use crate::context::{Ctx, Reply};
use crate::error::fenced_for;

/// Handles AddOffsetsToTxn.
pub async fn handle(ctx: Ctx, req: AddOffsetsToTxnRequest) -> Reply {
    let id = req.transactional_id.to_string();
    let outcome = if !ctx.coordinates(&id) {
        Err(kafka_protocol::error::ResponseError::NotCoordinator)
    } else if req.group_id.is_empty() {
        Err(kafka_protocol::error::ResponseError::InvalidGroupId)
    } else {
        Ok(ctx
            .broker
            .txns
            .add_offsets(&id, req.producer_id.0, req.producer_epoch, &req.group_id)
            .await)
    };
    let knows_fenced = ctx.version >= 2;
    Box::pin(async move {
        let result = match outcome {
            Ok(f) => f.await,
            Err(e) => Err(e),
        };
        Some(ResponseKind::AddOffsetsToTxn(
            AddOffsetsToTxnResponse::default().with_error_code(
                result
                    .err()
                    .map_or(0, |e| fenced_for(e, knows_fenced).code()),
            ),
        ))
    })
}

authorize_whole! {
    /// AddOffsetsToTxn needs KafkaRead on the group whose offsets the transaction will hold.
    fn authorize(ctx, r: AddOffsetsToTxnRequest) if ctx.may_group(READ, &r.group_id.0);
    else ResponseKind::AddOffsetsToTxn(AddOffsetsToTxnResponse::default()
        .with_error_code(GROUP_DENIED))
}
