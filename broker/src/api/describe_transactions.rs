//! DescribeTransactions: each transactional id's state, timeout, start, producer and the
//! partitions of its open transaction, from its coordinator.

use std::collections::BTreeMap;
use std::time::Instant;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ProducerId,
};

use crate::context::{Ctx, now_ms, sb, topic_name};

/// Handles DescribeTransactions.
pub async fn handle(ctx: &Ctx, req: DescribeTransactionsRequest) -> DescribeTransactionsResponse {
    let states = {
        let mut out = Vec::new();
        for id in req.transactional_ids.into_iter() {
            out.push(
                async {
                    let r = TransactionState::default()
                        .with_transactional_id(id.clone())
                        .with_transaction_state(sb(""))
                        .with_transaction_start_time_ms(-1)
                        .with_producer_id(ProducerId(-1))
                        .with_producer_epoch(-1);
                    if !ctx.coordinates(&id) {
                        return r.with_error_code(ResponseError::NotCoordinator.code());
                    }
                    let s = match ctx.broker.txns.describe(&id).await {
                        Ok(Some(s)) if s.producer_id >= 0 => s,
                        Ok(_) => {
                            return r
                                .with_error_code(ResponseError::TransactionalIdNotFound.code());
                        }
                        Err(e) => return r.with_error_code(e.code()),
                    };
                    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
                    for (t, p) in &s.partitions {
                        topics.entry(t).or_default().push(*p);
                    }
                    let started = s.started.map_or(-1, |t| {
                        now_ms() - Instant::now().saturating_duration_since(t).as_millis() as i64
                    });
                    r.with_transaction_state(sb(s.phase.name()))
                        .with_transaction_timeout_ms(
                            i32::try_from(s.timeout.as_millis()).unwrap_or(i32::MAX),
                        )
                        .with_transaction_start_time_ms(started)
                        .with_producer_id(ProducerId(s.producer_id))
                        .with_producer_epoch(s.epoch)
                        .with_topics(
                            topics
                                .into_iter()
                                .map(|(t, ps)| {
                                    TopicData::default()
                                        .with_topic(topic_name(t))
                                        .with_partitions(ps)
                                })
                                .collect(),
                        )
                }
                .await,
            );
        }
        out
    };
    DescribeTransactionsResponse::default().with_transaction_states(states)
}
