//! ShareFetch (KIP-932): a share consumer's fetch. It steps the member's share session
//! (`crate::group::share::session`), applies the acknowledgements it carries, and
//! acquires records of the session's partitions for the member
//! (`crate::group::share::records`): the stored batches holding them and which offsets
//! it holds with their delivery counts. Acquisitions and acknowledgements are durable
//! before the answer. A fetch that acquires nothing parks until `MaxWaitMs`, woken by
//! commits to its partitions, by records coming back, and by the next lock to run out.
//! v2 (KIP-1206, KIP-1222): a fetch with renewals only acknowledges; either acquire
//! mode gets at most `MaxRecords` (the record-limit mode's promise, which Eddy keeps in
//! both).

use crate::authz::*;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::share_fetch_response::{
    AcquiredRecords, LeaderIdAndEpoch, PartitionData, ShareFetchableTopicResponse,
};
use kafka_protocol::messages::{ResponseKind, ShareFetchRequest, ShareFetchResponse};
use kafka_protocol::protocol::StrBytes;
use tokio::time::Instant;

use crate::context::{Ctx, Reply, sb, uuid};
use crate::group::share::records::{AckBatch, PartOutcome, PartWork, PassSettings, Tp};
use crate::group::share::session::Step;

/// What a request's partitions resolve to: their work, and the outcomes of those
/// refused before any work (unknown topic, not led here, not allowed).
pub(crate) struct Resolved {
    pub(crate) work: Vec<PartWork>,
    pub(crate) refused: Vec<PartOutcome>,
}

/// Resolves `parts` (with the acknowledgements sent for some) to work: each topic
/// looked up by id, read access and leadership checked.
pub(crate) async fn resolve(
    ctx: &Ctx,
    parts: &[Tp],
    mut acks: HashMap<Tp, Vec<AckBatch>>,
    fetch: bool,
) -> Resolved {
    let mut names: HashMap<u128, Result<String, ResponseError>> = HashMap::new();
    let mut out = Resolved {
        work: Vec::new(),
        refused: Vec::new(),
    };
    for &tp in parts {
        if let std::collections::hash_map::Entry::Vacant(v) = names.entry(tp.0) {
            let (topic, unreadable) =
                crate::context::found(ctx.broker.catalog.kafka().topic_by_id(tp.0).await);
            v.insert(match (topic, unreadable) {
                (_, Some(e)) => Err(e),
                (None, None) => Err(ResponseError::UnknownTopicId),
                (Some(t), None) if !ctx.may_topic(READ, &t.name) => {
                    Err(ResponseError::TopicAuthorizationFailed)
                }
                (Some(t), None) if tp.1 >= t.partitions => {
                    Err(ResponseError::UnknownTopicOrPartition)
                }
                (Some(t), None) => Ok(t.name),
            });
        }
        match &names[&tp.0] {
            Err(e) => out.refused.push(PartOutcome::failed(tp, *e, "")),
            Ok(name) if !ctx.leads(name, tp.1 as i32) => out.refused.push(PartOutcome::failed(
                tp,
                ResponseError::NotLeaderOrFollower,
                "",
            )),
            Ok(name) => out.work.push(PartWork {
                tp,
                topic: name.clone(),
                acks: acks.remove(&tp).unwrap_or_default(),
                fetch,
            }),
        }
    }
    out
}

/// The outcomes by topic id, as ShareFetch answers them.
fn responses(ctx: &Ctx, outcomes: Vec<PartOutcome>) -> Vec<ShareFetchableTopicResponse> {
    let mut by_topic: BTreeMap<u128, Vec<PartitionData>> = BTreeMap::new();
    for o in outcomes {
        let leader = LeaderIdAndEpoch::default()
            .with_leader_id(
                if o.error.as_ref().map(|e| e.0) == Some(ResponseError::NotLeaderOrFollower) {
                    -1
                } else {
                    ctx.node
                },
            )
            .with_leader_epoch(0);
        let (code, message) = o.error.map_or((0, None), |(e, m)| {
            (e.code(), (!m.is_empty()).then(|| sb(&m)))
        });
        let (ack_code, ack_message) = o.ack_error.map_or((0, None), |(e, m)| {
            (e.code(), (!m.is_empty()).then(|| sb(&m)))
        });
        by_topic.entry(o.tp.0).or_default().push(
            PartitionData::default()
                .with_partition_index(o.tp.1 as i32)
                .with_error_code(code)
                .with_error_message(message)
                .with_acknowledge_error_code(ack_code)
                .with_acknowledge_error_message(ack_message)
                .with_current_leader(leader)
                .with_records(Some(o.records))
                .with_acquired_records(
                    o.acquired
                        .into_iter()
                        .map(|(first, last, d)| {
                            AcquiredRecords::default()
                                .with_first_offset(first as i64)
                                .with_last_offset(last as i64)
                                .with_delivery_count(d.min(i16::MAX as u16) as i16)
                        })
                        .collect(),
                ),
        );
    }
    by_topic
        .into_iter()
        .map(|(t, partitions)| {
            ShareFetchableTopicResponse::default()
                .with_topic_id(uuid(t))
                .with_partitions(partitions)
        })
        .collect()
}

fn refused(e: ResponseError, message: &str) -> Option<ResponseKind> {
    Some(ResponseKind::ShareFetch(
        ShareFetchResponse::default()
            .with_error_code(e.code())
            .with_error_message((!message.is_empty()).then(|| sb(message))),
    ))
}

/// A share request's group and member ids, both set (a request without them is
/// refused with INVALID_REQUEST).
pub(crate) fn group_and_member(
    group: Option<&StrBytes>,
    member: Option<&StrBytes>,
) -> Option<(String, String)> {
    let group = group.map(|g| g.to_string()).unwrap_or_default();
    let member = member.map(|m| m.to_string()).unwrap_or_default();
    (!group.is_empty() && !member.is_empty()).then_some((group, member))
}

/// The acknowledgement batches of a request's partitions.
fn acks_of(req: &ShareFetchRequest) -> HashMap<Tp, Vec<AckBatch>> {
    let mut out: HashMap<Tp, Vec<AckBatch>> = HashMap::new();
    for t in &req.topics {
        for p in &t.partitions {
            let Ok(index) = u32::try_from(p.partition_index) else {
                continue;
            };
            if !p.acknowledgement_batches.is_empty() {
                out.entry((t.topic_id.as_u128(), index))
                    .or_default()
                    .extend(
                        p.acknowledgement_batches
                            .iter()
                            .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone())),
                    );
            }
        }
    }
    out
}

/// The partitions a request adds to its session and those it forgets.
fn session_changes(req: &ShareFetchRequest) -> Result<(Vec<Tp>, Vec<Tp>), &'static str> {
    let mut add = Vec::new();
    for t in &req.topics {
        for p in &t.partitions {
            let index =
                u32::try_from(p.partition_index).map_err(|_| "a partition index is negative")?;
            add.push((t.topic_id.as_u128(), index));
        }
    }
    let mut forget = Vec::new();
    for f in &req.forgotten_topics_data {
        for p in &f.partitions {
            let index = u32::try_from(*p).map_err(|_| "a partition index is negative")?;
            forget.push((f.topic_id.as_u128(), index));
        }
    }
    Ok((add, forget))
}

/// Handles ShareFetch, long-polling when nothing is acquired.
pub fn handle(ctx: Ctx, req: ShareFetchRequest) -> Reply {
    Box::pin(async move {
        let Some((group, member)) =
            group_and_member(req.group_id.as_deref(), req.member_id.as_ref())
        else {
            return refused(
                ResponseError::InvalidRequest,
                "GroupId and MemberId must be set",
            );
        };
        let (add, forget) = match session_changes(&req) {
            Ok(c) => c,
            Err(m) => return refused(ResponseError::InvalidRequest, m),
        };
        let shares = &ctx.broker.groups.shares;
        let (parts, closing, gone) = match shares.sessions.step(
            &group,
            &member,
            req.share_session_epoch,
            &add,
            &forget,
            true,
        ) {
            Ok(Step::Open(p, gone)) => (p, false, gone),
            Ok(Step::Closed(p)) => (p, true, Vec::new()),
            Err(e) => return refused(e, ""),
        };
        let configs = match ctx.broker.groups.share_configs(&group).await {
            Ok(c) => c,
            Err((e, m)) => return refused(e, &m),
        };
        let limits = configs.limits(shares.config());
        let mut acks = acks_of(&req);
        // Acknowledgements of partitions outside the session (one it forgets in this
        // request, as a client does when its assignment moves) are applied too, first.
        let outside: Vec<Tp> = acks
            .keys()
            .filter(|tp| !parts.contains(tp))
            .copied()
            .collect();
        let outside_acks: HashMap<Tp, Vec<AckBatch>> = outside
            .iter()
            .filter_map(|tp| acks.remove_entry(tp))
            .collect();
        // A v2 fetch carrying renewals (KIP-1222) only acknowledges, and is answered at
        // once, so the renewal lands before the locks it extends run out.
        let renewing = req.is_renew_ack;
        let settings = PassSettings {
            group: group.clone(),
            member: member.clone(),
            configs,
            limits,
            max_records: if req.max_records > 0 {
                req.max_records as u64
            } else {
                500
            },
            max_bytes: req.max_bytes.max(1) as usize,
            leases: ctx.leases(),
        };
        // The first pass's outcomes hold the acknowledgements' results; later passes
        // only fetch.
        let mut answered: HashMap<Tp, PartOutcome> = HashMap::new();
        if !outside.is_empty() {
            let early = resolve(&ctx, &outside, outside_acks, false).await;
            let pass = shares
                .partitions
                .pass(ctx.broker.catalog.as_ref(), &early.work, &settings)
                .await;
            for o in early.refused.into_iter().chain(pass.outcomes) {
                answered.insert(o.tp, o);
            }
        }
        // Partitions the session no longer has went to other members: what this member
        // still holds there is given back at once, as Kafka does, instead of at lock
        // expiry.
        if !gone.is_empty() {
            tracing::debug!(group, member, ?gone, acked_outside = ?outside, "share session forgets partitions");
            ctx.broker
                .groups
                .release_forgotten(&group, &member, &gone, limits)
                .await;
        }
        let resolved = resolve(&ctx, &parts, acks, !closing && !renewing).await;
        let deadline = Instant::now() + Duration::from_millis(req.max_wait_ms.max(0) as u64);
        let min_bytes = req.min_bytes.max(1) as usize;
        let watched: Vec<catalog::wakeups::PartitionId> =
            resolved.work.iter().map(|w| w.tp).collect();
        let mut work = resolved.work;
        let mut waiter = None;
        loop {
            let released = shares.partitions.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            let (broker, w, s) = (ctx.broker.clone(), work.clone(), settings.clone());
            // The embedded catalog reads batches from the drives synchronously: off the
            // async threads, waiting there for the catalog's reads.
            let runtime = tokio::runtime::Handle::current();
            let Ok(pass) = tokio::task::spawn_blocking(move || {
                runtime.block_on(async {
                    let catalog = broker.catalog.as_ref();
                    broker.groups.shares.partitions.pass(catalog, &w, &s).await
                })
            })
            .await
            else {
                return refused(ResponseError::UnknownServerError, "");
            };
            let mut bytes = 0;
            let mut errors = false;
            for o in pass.outcomes {
                bytes += o.records.len();
                errors |= o.error.is_some();
                match answered.get_mut(&o.tp) {
                    Some(prev) => {
                        prev.error = o.error;
                        prev.records = o.records;
                        prev.acquired = o.acquired;
                    }
                    None => {
                        answered.insert(o.tp, o);
                    }
                }
            }
            for w in &mut work {
                w.acks.clear();
            }
            if closing || renewing || bytes >= min_bytes || errors || Instant::now() >= deadline {
                if closing {
                    ctx.broker
                        .groups
                        .release_at_close(&group, &member, limits)
                        .await;
                }
                let mut outcomes: Vec<PartOutcome> = resolved.refused;
                outcomes.extend(answered.into_values().filter(|o| {
                    !o.records.is_empty()
                        || o.error.is_some()
                        || o.ack_error.is_some()
                        || acks_sent(&req, o.tp)
                }));
                for o in outcomes.iter().filter(|o| !o.acquired.is_empty()) {
                    tracing::debug!(group, member, epoch = req.share_session_epoch, partition = ?o.tp, acquired = ?o.acquired, "share records acquired");
                }
                let n: u64 = outcomes
                    .iter()
                    .flat_map(|o| o.acquired.iter().map(|(f, l, _)| l - f + 1))
                    .sum();
                ctx.broker.metrics.share_acquired.inc_by(n);
                ctx.broker
                    .metrics
                    .share_acknowledged
                    .inc_by(outcomes.iter().map(|o| o.acknowledged).sum());
                return Some(
                    ResponseKind::ShareFetch(
                        ShareFetchResponse::default()
                            .with_acquisition_lock_timeout_ms(
                                limits.lock_ms.min(i32::MAX as i64) as i32
                            )
                            .with_responses(responses(&ctx, outcomes)),
                    ),
                );
            }
            let wake_at = pass
                .next_expiry
                .map(|ms| {
                    let wait = (ms - crate::context::now_ms()).max(0) as u64;
                    Instant::now() + Duration::from_millis(wait)
                })
                .map_or(deadline, |t| t.min(deadline));
            match &waiter {
                // Parked from here on; look once more, since a commit may have landed
                // between the pass and the registration.
                None => waiter = Some(ctx.broker.catalog.watch_partitions(&watched)),
                Some(w) => tokio::select! {
                    _ = w.changed() => {}
                    _ = &mut released => {}
                    _ = tokio::time::sleep_until(wake_at) => {}
                },
            }
        }
    })
}

/// Whether the request acknowledged records of `tp` (its answer must say how that went).
fn acks_sent(req: &ShareFetchRequest, tp: Tp) -> bool {
    req.topics.iter().any(|t| {
        t.topic_id.as_u128() == tp.0
            && t.partitions
                .iter()
                .any(|p| p.partition_index as u32 == tp.1 && !p.acknowledgement_batches.is_empty())
    })
}

authorize_whole! {
    /// ShareFetch needs KafkaRead on the group (and on each topic, checked per partition
    /// by the handler, which resolves the session's topic ids).
    fn authorize(ctx, r: ShareFetchRequest)
        if ctx.may_group(READ, r.group_id.as_ref().map_or("", |g| &g.0));
    else ResponseKind::ShareFetch(ShareFetchResponse::default().with_error_code(GROUP_DENIED))
}
