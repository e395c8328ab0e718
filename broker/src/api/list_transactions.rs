//! ListTransactions: every transactional id this node coordinates, filtered by state,
//! producer id and (v1+) how long the open transaction has run.

use std::time::{Duration, Instant};

use kafka_protocol::messages::list_transactions_response::TransactionState;
use kafka_protocol::messages::{
    ListTransactionsRequest, ListTransactionsResponse, ProducerId, TransactionalId,
};

use crate::context::{Ctx, sb};
use crate::txn::state::Phase;

/// Every state name Kafka reports.
const STATES: [Phase; 6] = [
    Phase::Empty,
    Phase::Ongoing,
    Phase::PrepareCommit,
    Phase::PrepareAbort,
    Phase::CompleteCommit,
    Phase::CompleteAbort,
];

/// Handles ListTransactions.
pub async fn handle(ctx: &Ctx, req: ListTransactionsRequest) -> ListTransactionsResponse {
    let unknown: Vec<_> = req
        .state_filters
        .iter()
        .filter(|f| !STATES.iter().any(|s| s.name() == f.as_str()))
        .cloned()
        .collect();
    let all = match ctx.broker.txns.list().await {
        Ok(all) => all,
        Err(e) => return ListTransactionsResponse::default().with_error_code(e.code()),
    };
    let now = Instant::now();
    let longer_than =
        (req.duration_filter >= 0).then(|| Duration::from_millis(req.duration_filter as u64));
    let states = all
        .into_iter()
        .filter(|(id, s)| {
            ctx.coordinates(id)
                && s.producer_id >= 0
                && (req.state_filters.is_empty()
                    || req
                        .state_filters
                        .iter()
                        .any(|f| f.as_str() == s.phase.name()))
                && (req.producer_id_filters.is_empty()
                    || req.producer_id_filters.contains(&ProducerId(s.producer_id)))
                && longer_than.is_none_or(|d| {
                    s.started
                        .is_some_and(|t| now.saturating_duration_since(t) > d)
                })
        })
        .map(|(id, s)| {
            TransactionState::default()
                .with_transactional_id(TransactionalId(sb(&id)))
                .with_producer_id(ProducerId(s.producer_id))
                .with_transaction_state(sb(s.phase.name()))
        })
        .collect();
    ListTransactionsResponse::default()
        .with_unknown_state_filters(unknown)
        .with_transaction_states(states)
}
