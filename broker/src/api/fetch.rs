//! Fetch: stored batches returned as they were stored, up to the high watermark at
//! read_uncommitted and up to the last stable offset (the first offset of the earliest
//! open transaction) at read_committed, which also gets the aborted transactions whose
//! records it returns, for the client to drop. A fetch that finds less than `min_bytes` parks
//! until `max_wait_ms`, woken only by commits to the partitions it reads (not by a timer
//! loop, nor by every commit). Fetch sessions (v7+, KIP-227) keep a consumer's partitions
//! between fetches (`crate::fetch_session`): an incremental fetch answers the partitions
//! of its session with news, and does not read those whose generation shows no commit
//! since their last answer when the consumer is at their end. Fetch v0-3 (removed in Kafka 4.0) get
//! their batches as message sets (`crate::message_set`).

use crate::authz::*;
use kafka_protocol::messages::fetch_response;
use std::collections::HashMap;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse, ProducerId, ResponseKind};
use tokio::time::Instant;

use crate::context::{Ctx, Reply, topic_name, uuid};
use crate::error::from_catalog;
use crate::fetch_session::{Known, Plan};
use crate::message_set::{self, Aborted};
use catalog::wakeups::PartitionId;

/// One read of every requested partition.
struct Read {
    response: FetchResponse,
    /// Record bytes in it.
    bytes: usize,
    /// Whether a partition answered with an error.
    errors: bool,
    /// The partitions that were read (where a commit can bring more data).
    read: Vec<PartitionId>,
    /// With a session: each partition's generation from before it was read.
    generations: HashMap<PartitionId, u64>,
}

/// Reads every requested partition once. With a session (`generations`), notes each
/// partition's generation before reading it, and skips a partition whose [`Known`]
/// answer (same nesting as `req`) still holds.
async fn read_once(
    ctx: &Ctx,
    req: &FetchRequest,
    generations: bool,
    known: Option<&[Vec<Option<Known>>]>,
) -> Read {
    let catalog = &ctx.broker.catalog;
    let mut remaining = req.max_bytes.max(0) as usize;
    let mut total = 0usize;
    let mut errors = false;
    let mut read = Vec::new();
    let mut seen_at = HashMap::new();
    let mut responses = Vec::with_capacity(req.topics.len());
    let read_committed = req.isolation_level == 1;
    // A response names only partitions that were asked for, as Kafka's does: a topic
    // named with no partitions gets no entry.
    for (ti, t) in req.topics.iter().enumerate() {
        if t.partitions.is_empty() {
            continue;
        }
        let found = if ctx.version >= 13 {
            catalog.kafka().topic_by_id(t.topic_id.as_u128()).await
        } else {
            catalog.kafka().topic(&t.topic).await
        };
        let (topic, unreadable) = crate::context::found(found);
        // Read before any partition's state, so a commit landing meanwhile moves them.
        let topic_generations = match &topic {
            Some(topic) if generations => catalog.partition_generations(
                &t.partitions
                    .iter()
                    .map(|p| (topic.id, p.partition as u32))
                    .collect::<Vec<_>>(),
            ),
            _ => Vec::new(),
        };
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for (pi, p) in t.partitions.iter().enumerate() {
            let generation = topic_generations.get(pi).copied();
            let known = known
                .and_then(|k| k.get(ti))
                .and_then(|k| k.get(pi))
                .copied()
                .flatten();
            let mut data = PartitionData::default()
                .with_partition_index(p.partition)
                .with_high_watermark(-1)
                .with_last_stable_offset(-1)
                .with_log_start_offset(-1)
                .with_preferred_read_replica(BrokerId(-1))
                .with_aborted_transactions(read_committed.then(Vec::new))
                .with_records(Some(Bytes::new()));
            let error = async {
                if let Some(e) = unreadable {
                    return Some(e);
                }
                let Some(topic) = &topic else {
                    return Some(if ctx.version >= 13 {
                        ResponseError::UnknownTopicId
                    } else {
                        ResponseError::UnknownTopicOrPartition
                    });
                };
                if p.partition < 0 || p.partition as u32 >= topic.partitions {
                    return Some(ResponseError::UnknownTopicOrPartition);
                }
                if !ctx.leads(&topic.name, p.partition) {
                    return Some(ResponseError::NotLeaderOrFollower);
                }
                let at = (topic.id, p.partition as u32);
                if let Some(g) = generation {
                    seen_at.insert(at, g);
                    if let Some(k) =
                        known.filter(|k| unchanged_at_end(k, g, p.fetch_offset, read_committed))
                    {
                        data.high_watermark = k.high_watermark;
                        data.last_stable_offset = k.last_stable_offset;
                        data.log_start_offset = k.log_start_offset;
                        read.push(at);
                        return None;
                    }
                }
                let (state, lso) = match catalog
                    .kafka()
                    .stable_partition(topic.id, p.partition as u32)
                    .await
                {
                    Ok(Some((s, lso))) => (s, lso as i64),
                    Ok(None) => return Some(ResponseError::UnknownTopicOrPartition),
                    Err(e) => return Some(from_catalog(&e)),
                };
                let hw = state.next_offset as i64;
                data.high_watermark = hw;
                data.last_stable_offset = lso;
                // What this isolation level may see.
                let end = if read_committed { lso } else { hw };
                data.log_start_offset = state.log_start_offset as i64;
                if p.fetch_offset < state.log_start_offset as i64 || p.fetch_offset > hw {
                    return Some(ResponseError::OffsetOutOfRange);
                }
                read.push(at);
                if p.fetch_offset >= end {
                    return None;
                }
                // The first partition with data gets at least one batch, whatever the limits.
                let limit = (p.partition_max_bytes.max(0) as usize).min(remaining);
                let limit = if total == 0 { limit.max(1) } else { limit };
                if limit == 0 {
                    return None;
                }
                if let Some(magic) = legacy_magic(ctx.wire_version) {
                    let at = (topic.id, p.partition as u32);
                    return match message_sets(
                        catalog.as_ref(),
                        at,
                        p.fetch_offset,
                        end,
                        limit,
                        magic,
                    )
                    .await
                    {
                        Ok(records) => {
                            total += records.len();
                            remaining = remaining.saturating_sub(records.len());
                            data.records = Some(records);
                            None
                        }
                        Err(e) => Some(from_catalog(&e)),
                    };
                }
                match catalog
                    .kafka()
                    .read_batches(topic.id, p.partition as u32, p.fetch_offset as u64, limit)
                    .await
                {
                    Ok(mut batches) => {
                        // Batches are whole transactions' pieces: the last stable offset
                        // is a batch boundary.
                        batches.retain(|b| (b.base_offset as i64) < end);
                        if read_committed && let Some(last) = batches.last() {
                            match catalog
                                .txns()
                                .aborted_txns(
                                    topic.id,
                                    p.partition as u32,
                                    p.fetch_offset as u64,
                                    last.last_offset + 1,
                                )
                                .await
                            {
                                Ok(aborted) => {
                                    data.aborted_transactions = Some(
                                        aborted
                                            .into_iter()
                                            .map(|a| {
                                                AbortedTransaction::default()
                                                    .with_producer_id(ProducerId(a.producer_id))
                                                    .with_first_offset(a.first_offset as i64)
                                            })
                                            .collect(),
                                    )
                                }
                                Err(e) => return Some(from_catalog(&e)),
                            }
                        }
                        let size: usize = batches.iter().map(|b| b.bytes.len()).sum();
                        let mut records = BytesMut::with_capacity(size);
                        for b in &batches {
                            records.extend_from_slice(&b.bytes);
                        }
                        total += size;
                        remaining = remaining.saturating_sub(size);
                        data.records = Some(records.freeze());
                        None
                    }
                    Err(e) => Some(from_catalog(&e)),
                }
            }
            .await;
            if let Some(e) = error {
                errors = true;
                data.error_code = e.code();
            }
            partitions.push(data);
        }
        responses.push(
            FetchableTopicResponse::default()
                .with_topic(topic_name(
                    topic.as_ref().map_or(&*t.topic, |r| r.name.as_str()),
                ))
                .with_topic_id(topic.as_ref().map_or(t.topic_id, |r| uuid(r.id)))
                .with_partitions(partitions),
        );
    }
    Read {
        response: FetchResponse::default().with_responses(responses),
        bytes: total,
        errors,
        read,
        generations: seen_at,
    }
}

/// Whether a partition last answered as `k` still reads the same at generation `g` for a
/// consumer at `fetch_offset`: nothing changed it, and that answer had no records for
/// this offset and no error for it.
fn unchanged_at_end(k: &Known, g: u64, fetch_offset: i64, read_committed: bool) -> bool {
    let end = if read_committed {
        k.last_stable_offset
    } else {
        k.high_watermark
    };
    k.generation == g
        && k.log_start_offset <= fetch_offset
        && fetch_offset <= k.high_watermark
        && fetch_offset >= end
}

/// The message format a removed Fetch version reads (v0-1: magic 0, v2-3: magic 1);
/// `None` for record batches (v4+).
fn legacy_magic(wire_version: i16) -> Option<i8> {
    match wire_version {
        0 | 1 => Some(0),
        2 | 3 => Some(1),
        _ => None,
    }
}

/// A partition's committed records from `fetch_offset` as a message set of `magic` for
/// Fetch v0-3, within `limit` bytes (at least one message), without markers and the
/// records of aborted transactions: its clients cannot drop them (`crate::legacy`).
/// Batches that leave nothing (an aborted transaction, markers) are read past, since
/// such a client can only move past offsets it is given a message at.
async fn message_sets(
    catalog: &dyn catalog::Catalog,
    (topic, partition): (u128, u32),
    fetch_offset: i64,
    end: i64,
    limit: usize,
    magic: i8,
) -> Result<Bytes, catalog::CatalogError> {
    let mut from = fetch_offset as u64;
    while (from as i64) < end {
        let mut batches = catalog
            .kafka()
            .read_batches(topic, partition, from, limit)
            .await?;
        batches.retain(|b| (b.base_offset as i64) < end);
        let Some(last) = batches.last().map(|b| b.last_offset) else {
            break;
        };
        let aborted: Vec<Aborted> = catalog
            .txns()
            .aborted_txns(topic, partition, from, last + 1)
            .await?
            .into_iter()
            .map(|a| Aborted {
                producer_id: a.producer_id,
                first_offset: a.first_offset as i64,
            })
            .collect();
        let mut stored = BytesMut::new();
        for b in &batches {
            stored.extend_from_slice(&b.bytes);
        }
        let out = message_set::from_batches(&stored.freeze(), magic, &aborted, fetch_offset, limit);
        if !out.is_empty() {
            return Ok(out);
        }
        from = last + 1;
    }
    Ok(Bytes::new())
}

/// Handles a fetch, long-polling when there is too little data.
pub fn handle(ctx: Ctx, req: FetchRequest) -> Reply {
    Box::pin(async move {
        // v7 brought sessions; earlier fetches are all full.
        let plan = if ctx.version >= 7 {
            ctx.broker
                .fetch_sessions
                .plan(&req, ctx.version >= 13, std::time::Instant::now())
        } else {
            Plan::Sessionless
        };
        let (req, session, known) = match plan {
            Plan::Refused(e) => {
                return Some(ResponseKind::Fetch(
                    FetchResponse::default().with_error_code(e.code()),
                ));
            }
            Plan::Sessionless => (req, None, None),
            Plan::New(id) => (req, Some((id, false)), None),
            Plan::Incremental(id, full) => {
                let full = *full;
                (full.request, Some((id, true)), Some(full.known))
            }
        };
        let known = std::sync::Arc::new(known);
        let deadline = Instant::now() + Duration::from_millis(req.max_wait_ms.max(0) as u64);
        let min_bytes = req.min_bytes.max(1) as usize;
        let req = std::sync::Arc::new(req);
        let mut waiter = None;
        loop {
            let (c, r, k) = (ctx.clone(), req.clone(), known.clone());
            let with_session = session.is_some();
            // The embedded catalog reads batches from the drives synchronously: off the
            // async threads, waiting there for the catalog's reads.
            let runtime = tokio::runtime::Handle::current();
            let Ok(read) = tokio::task::spawn_blocking(move || {
                runtime.block_on(read_once(&c, &r, with_session, k.as_deref()))
            })
            .await
            else {
                return Some(ResponseKind::Fetch(
                    FetchResponse::default()
                        .with_error_code(ResponseError::UnknownServerError.code()),
                ));
            };
            if read.bytes >= min_bytes || read.errors || Instant::now() >= deadline {
                ctx.broker.metrics.fetched_bytes.inc_by(read.bytes as u64);
                if let Some(v) = &ctx.broker.config.view_metrics {
                    v.fetched_bytes
                        .get_or_create(&crate::metrics::ViewLabels {
                            view: ctx.broker.config.view.clone(),
                        })
                        .inc_by(read.bytes as u64);
                }
                let mut response = read.response;
                if let Some((id, incremental)) = session {
                    ctx.broker.fetch_sessions.sent(
                        id,
                        &mut response,
                        incremental,
                        &read.generations,
                    );
                }
                return Some(ResponseKind::Fetch(response));
            }
            match &waiter {
                // Parked from here on; read once more, since a commit may have landed
                // between the read and the registration.
                None => {
                    waiter = Some((
                        ctx.broker.catalog.watch_partitions(&read.read),
                        Parked::new(&ctx.broker.metrics.fetches_parked),
                    ))
                }
                Some((w, _)) => tokio::select! {
                    _ = w.changed() => {}
                    _ = tokio::time::sleep_until(deadline) => {}
                },
            }
        }
    })
}

/// Counts a fetch in `eddy_kafka_fetches_parked` while it lives.
struct Parked(prometheus_client::metrics::gauge::Gauge);

impl Parked {
    fn new(gauge: &prometheus_client::metrics::gauge::Gauge) -> Self {
        gauge.inc();
        Self(gauge.clone())
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Fetch needs KafkaRead on each topic (a consumer's fetch; topics named by id are looked
/// up first).
pub(crate) async fn authorize(
    ctx: &Ctx,
    mut r: FetchRequest,
    out: &mut Refused,
) -> Authorized<FetchRequest> {
    if r.replica_id.0 < 0 {
        let names = topic_names_by_id(ctx, r.topics.iter().map(|t| t.topic_id)).await;
        out.ids = names.iter().map(|(id, n)| (n.clone(), *id)).collect();
        r.topics = split(
            r.topics,
            |t| id_or_name(&names, &t.topic.0, t.topic_id),
            |t| t.partitions.iter().map(|p| p.partition).collect(),
            |n| ctx.may_topic(READ, n),
            out,
        );
    }
    Ok(r)
}

/// The parts [`authorize`] refused, put back into the response with their errors.
pub(crate) fn answer_refused(mut r: FetchResponse, refused: Refused) -> FetchResponse {
    for (name, parts) in refused.topics {
        let id = refused.ids.get(&name).copied().unwrap_or_default();
        r.responses.push(
            fetch_response::FetchableTopicResponse::default()
                .with_topic(topic_of(&name))
                .with_topic_id(id)
                .with_partitions(
                    parts
                        .into_iter()
                        .map(|p| {
                            fetch_response::PartitionData::default()
                                .with_partition_index(p)
                                .with_error_code(TOPIC_DENIED)
                                .with_high_watermark(-1)
                                .with_last_stable_offset(-1)
                                .with_log_start_offset(-1)
                        })
                        .collect(),
                ),
        );
    }
    r
}
