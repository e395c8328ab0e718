//! OffsetFetch: committed offsets of one group (v1-7) or several (v8+), for the
//! partitions asked or (null topics, v2+) every committed one. Partitions without a
//! committed offset get -1. With `require_stable` (v7+), a partition whose offset an open
//! transaction holds answers UNSTABLE_OFFSET_COMMIT (the client retries until the
//! transaction ends). From v9 a consumer-protocol member's fetch carries its member id
//! and epoch, checked as its commits are (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID).

use crate::authz::*;
use kafka_protocol::messages::ResponseKind;
use std::collections::BTreeMap;

use catalog::OffsetRecord;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{GroupId, OffsetFetchRequest, OffsetFetchResponse, TopicName};

use crate::context::{Ctx, sb, topic_name};
use crate::error::from_catalog;

/// Offsets by topic and partition; `None` offset = nothing committed; an error code for
/// an unstable one.
type Fetched = BTreeMap<String, Vec<(i32, Option<OffsetRecord>, i16)>>;

/// Handles OffsetFetch.
pub async fn handle(ctx: &Ctx, req: OffsetFetchRequest) -> OffsetFetchResponse {
    if ctx.version >= 8 {
        let groups = {
            let mut out = Vec::new();
            for g in req.groups.into_iter() {
                out.push({
                    let asked = g.topics.map(|ts| {
                        ts.into_iter()
                            .map(|t| (t.name, t.partition_indexes))
                            .collect()
                    });
                    // v9: a consumer-protocol member fetches under its member epoch.
                    let member = g.member_id.as_deref().filter(|m| !m.is_empty());
                    let checked = match member {
                        Some(m) => {
                            ctx.broker
                                .groups
                                .check_member_fetch(&g.group_id, m, g.member_epoch)
                                .await
                        }
                        None => Ok(()),
                    };
                    let fetched = match checked {
                        Err(e) => Err((e, Vec::new())),
                        Ok(()) => fetch(ctx, &g.group_id, asked, req.require_stable).await,
                    };
                    group_response(g.group_id, fetched)
                });
            }
            out
        };
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let asked = req.topics.map(|ts| {
        ts.into_iter()
            .map(|t| (t.name, t.partition_indexes))
            .collect()
    });
    match fetch(ctx, &req.group_id, asked, req.require_stable).await {
        Ok(f) => OffsetFetchResponse::default().with_topics(
            f.into_iter()
                .map(|(name, parts)| {
                    OffsetFetchResponseTopic::default()
                        .with_name(topic_name(&name))
                        .with_partitions(
                            parts
                                .into_iter()
                                .map(|(p, o, code)| {
                                    let (offset, epoch, meta) = fields(o);
                                    OffsetFetchResponsePartition::default()
                                        .with_partition_index(p)
                                        .with_error_code(code)
                                        .with_committed_offset(offset)
                                        .with_committed_leader_epoch(epoch)
                                        .with_metadata(meta)
                                })
                                .collect(),
                        )
                })
                .collect(),
        ),
        Err((e, asked)) => {
            // v1 has no top-level error: every partition asked carries it.
            OffsetFetchResponse::default()
                .with_error_code(e.code())
                .with_topics(
                    asked
                        .into_iter()
                        .map(|(name, parts)| {
                            OffsetFetchResponseTopic::default()
                                .with_name(name)
                                .with_partitions(
                                    parts
                                        .into_iter()
                                        .map(|p| {
                                            OffsetFetchResponsePartition::default()
                                                .with_partition_index(p)
                                                .with_committed_offset(-1)
                                                .with_metadata(Some(sb("")))
                                                .with_error_code(e.code())
                                        })
                                        .collect(),
                                )
                        })
                        .collect(),
                )
        }
    }
}

type Asked = Vec<(TopicName, Vec<i32>)>;

fn fields(o: Option<OffsetRecord>) -> (i64, i32, Option<kafka_protocol::protocol::StrBytes>) {
    match o {
        Some(o) => (
            o.offset,
            o.leader_epoch,
            Some(sb(o.metadata.as_deref().unwrap_or(""))),
        ),
        None => (-1, -1, Some(sb(""))),
    }
}

async fn fetch(
    ctx: &Ctx,
    group: &GroupId,
    asked: Option<Asked>,
    require_stable: bool,
) -> Result<Fetched, (ResponseError, Asked)> {
    let fail = |e, asked: Option<Asked>| Err((e, asked.unwrap_or_default()));
    if group.is_empty() {
        return fail(ResponseError::InvalidGroupId, asked);
    }
    if !ctx.coordinates(group) {
        return fail(ResponseError::NotCoordinator, asked);
    }
    let catalog = &ctx.broker.catalog;
    let mut out = Fetched::new();
    match asked {
        None => match catalog.groups().offsets(group).await {
            Ok(all) => {
                for (topic, p, o) in all {
                    out.entry(topic).or_default().push((p as i32, Some(o), 0));
                }
            }
            Err(e) => return fail(from_catalog(&e), None),
        },
        Some(asked) => {
            for (topic, parts) in &asked {
                let mut got = Vec::new();
                for p in parts {
                    let o = if *p < 0 {
                        Ok(None)
                    } else {
                        catalog.groups().offset(group, topic, *p as u32).await
                    };
                    match o {
                        Ok(o) => got.push((*p, o, 0)),
                        Err(e) => return fail(from_catalog(&e), Some(asked)),
                    }
                }
                out.entry(topic.to_string()).or_default().extend(got);
            }
        }
    }
    if require_stable {
        for (topic, parts) in out.iter_mut() {
            for (p, o, code) in parts.iter_mut() {
                let Ok(p) = u32::try_from(*p) else {
                    continue;
                };
                match catalog.txns().has_pending_txn_offset(group, topic, p).await {
                    Ok(true) => {
                        *o = None;
                        *code = ResponseError::UnstableOffsetCommit.code();
                    }
                    Err(e) => *code = from_catalog(&e).code(),
                    Ok(false) => {}
                }
            }
        }
    }
    Ok(out)
}

fn group_response(
    id: GroupId,
    fetched: Result<Fetched, (ResponseError, Asked)>,
) -> OffsetFetchResponseGroup {
    match fetched {
        Err((e, _)) => OffsetFetchResponseGroup::default()
            .with_group_id(id)
            .with_error_code(e.code()),
        Ok(f) => OffsetFetchResponseGroup::default()
            .with_group_id(id)
            .with_topics(
                f.into_iter()
                    .map(|(name, parts)| {
                        OffsetFetchResponseTopics::default()
                            .with_name(topic_name(&name))
                            .with_partitions(
                                parts
                                    .into_iter()
                                    .map(|(p, o, code)| {
                                        let (offset, epoch, meta) = fields(o);
                                        OffsetFetchResponsePartitions::default()
                                            .with_partition_index(p)
                                            .with_error_code(code)
                                            .with_committed_offset(offset)
                                            .with_committed_leader_epoch(epoch)
                                            .with_metadata(meta)
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            ),
    }
}

/// OffsetFetch needs KafkaDescribe on each group, and on each topic whose offsets it
/// returns.
pub(crate) fn authorize(
    ctx: &Ctx,
    r: OffsetFetchRequest,
    out: &mut Refused,
) -> Authorized<OffsetFetchRequest> {
    if r.groups.is_empty() && !ctx.may_group(DESCRIBE, &r.group_id.0) {
        return refuse_whole(ResponseKind::OffsetFetch(
            OffsetFetchResponse::default().with_error_code(GROUP_DENIED),
        ));
    }
    out.groups = r
        .groups
        .iter()
        .map(|g| g.group_id.0.to_string())
        .filter(|g| !ctx.may_group(DESCRIBE, g))
        .collect();
    // Offsets of topics the principal may not describe are left out.
    out.hidden = true;
    Ok(r)
}

/// The parts [`authorize`] refused, put back into the response with their errors.
pub(crate) fn answer_refused(
    ctx: &Ctx,
    mut r: OffsetFetchResponse,
    refused: Refused,
) -> OffsetFetchResponse {
    r.topics.retain(|t| ctx.may_topic(DESCRIBE, &t.name.0));
    for g in &mut r.groups {
        if refused.groups.iter().any(|d| *d == *g.group_id.0) {
            g.error_code = GROUP_DENIED;
            g.topics.clear();
        }
        g.topics.retain(|t| ctx.may_topic(DESCRIBE, &t.name.0));
    }
    r
}
