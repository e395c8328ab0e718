//! ShareAcknowledge (KIP-932): acknowledgements without a fetch (a share consumer's
//! explicit commit, and its last word at close with session epoch -1, after which what
//! it still holds is given back). Acknowledged states are durable before the answer.
//! v2 (KIP-1222) carries renewals, which extend the locks of records still held, and
//! answers the lock duration.

use crate::authz::*;
use std::collections::{BTreeMap, HashMap};

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::share_acknowledge_response::{
    LeaderIdAndEpoch, PartitionData, ShareAcknowledgeTopicResponse,
};
use kafka_protocol::messages::{ResponseKind, ShareAcknowledgeRequest, ShareAcknowledgeResponse};

use crate::api::share_fetch::{group_and_member, resolve};
use crate::context::{Ctx, Reply, sb, uuid};
use crate::group::share::records::{AckBatch, PassSettings, Tp};
use crate::group::share::session::Step;

fn refused(e: ResponseError, message: &str) -> Option<ResponseKind> {
    Some(ResponseKind::ShareAcknowledge(
        ShareAcknowledgeResponse::default()
            .with_error_code(e.code())
            .with_error_message((!message.is_empty()).then(|| sb(message))),
    ))
}

/// Handles ShareAcknowledge.
pub fn handle(ctx: Ctx, req: ShareAcknowledgeRequest) -> Reply {
    Box::pin(async move {
        let Some((group, member)) =
            group_and_member(req.group_id.as_deref(), req.member_id.as_ref())
        else {
            return refused(
                ResponseError::InvalidRequest,
                "GroupId and MemberId must be set",
            );
        };
        let mut acks: HashMap<Tp, Vec<AckBatch>> = HashMap::new();
        let mut parts: Vec<Tp> = Vec::new();
        for t in &req.topics {
            for p in &t.partitions {
                let Ok(index) = u32::try_from(p.partition_index) else {
                    return refused(
                        ResponseError::InvalidRequest,
                        "a partition index is negative",
                    );
                };
                let tp = (t.topic_id.as_u128(), index);
                if !parts.contains(&tp) {
                    parts.push(tp);
                }
                acks.entry(tp).or_default().extend(
                    p.acknowledgement_batches
                        .iter()
                        .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone())),
                );
            }
        }
        let shares = &ctx.broker.groups.shares;
        let closing =
            match shares
                .sessions
                .step(&group, &member, req.share_session_epoch, &[], &[], false)
            {
                Ok(Step::Open(..)) => false,
                Ok(Step::Closed(_)) => true,
                Err(e) => return refused(e, ""),
            };
        let configs = match ctx.broker.groups.share_configs(&group).await {
            Ok(c) => c,
            Err((e, m)) => return refused(e, &m),
        };
        let limits = configs.limits(shares.config());
        let resolved = resolve(&ctx, &parts, acks, false).await;
        let settings = PassSettings {
            group: group.clone(),
            member: member.clone(),
            configs,
            limits,
            max_records: 0,
            max_bytes: 0,
            leases: ctx.leases(),
        };
        let pass = shares
            .partitions
            .pass(ctx.broker.catalog.as_ref(), &resolved.work, &settings)
            .await;
        if closing {
            ctx.broker
                .groups
                .release_at_close(&group, &member, limits)
                .await;
        }
        let mut outcomes = resolved.refused;
        outcomes.extend(pass.outcomes);
        ctx.broker
            .metrics
            .share_acknowledged
            .inc_by(outcomes.iter().map(|o| o.acknowledged).sum());
        let mut by_topic: BTreeMap<u128, Vec<PartitionData>> = BTreeMap::new();
        for o in outcomes {
            // A partition's error is its fetch error if it could not be worked on, else
            // its acknowledgement's.
            let (code, message) = o.error.or(o.ack_error).map_or((0, None), |(e, m)| {
                (e.code(), (!m.is_empty()).then(|| sb(&m)))
            });
            by_topic.entry(o.tp.0).or_default().push(
                PartitionData::default()
                    .with_partition_index(o.tp.1 as i32)
                    .with_error_code(code)
                    .with_error_message(message)
                    .with_current_leader(
                        LeaderIdAndEpoch::default()
                            .with_leader_id(ctx.node)
                            .with_leader_epoch(0),
                    ),
            );
        }
        Some(ResponseKind::ShareAcknowledge(
            ShareAcknowledgeResponse::default()
                .with_acquisition_lock_timeout_ms(limits.lock_ms.min(i32::MAX as i64) as i32)
                .with_responses(
                    by_topic
                        .into_iter()
                        .map(|(t, partitions)| {
                            ShareAcknowledgeTopicResponse::default()
                                .with_topic_id(uuid(t))
                                .with_partitions(partitions)
                        })
                        .collect(),
                ),
        ))
    })
}

authorize_whole! {
    /// ShareAcknowledge needs KafkaRead on the group (and on each topic, checked per
    /// partition by the handler).
    fn authorize(ctx, r: ShareAcknowledgeRequest)
        if ctx.may_group(READ, r.group_id.as_ref().map_or("", |g| &g.0));
    else ResponseKind::ShareAcknowledge(
        ShareAcknowledgeResponse::default().with_error_code(GROUP_DENIED))
}
