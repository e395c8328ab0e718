//! The records side of share groups, on the partitions' leader: each share partition's
//! state ([`SharePartition`]) in memory while it is used, loaded from the catalog's share
//! states (or started at the log's start or end, by `share.auto.offset.reset`), changed
//! under its own lock by one request at a time, and committed back, all of a request's
//! partitions in one catalog transaction, before the request is answered. So a record
//! is delivered only once its acquisition is durable, and an acknowledged record is
//! never delivered again, even after a kill -9.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use catalog::{Catalog, GroupOp, Op, ShareStateRecord, Transaction};
use kafka_protocol::error::ResponseError;
use tokio::sync::{Notify, OwnedMutexGuard};

use super::configs::GroupConfigs;
use super::partition::{AckError, AckType, Acquired, Limits, SharePartition, StoredSharePartition};
use crate::error::from_catalog;

/// A topic id and partition.
pub type Tp = (u128, u32);

/// One acknowledgement batch as sent: first and last offset, and the types.
pub type AckBatch = (i64, i64, Vec<i8>);

/// A share partition in memory; `None` until loaded (or after a failed commit, so the
/// next use reloads what is durable).
pub struct PartSlot {
    state: Arc<tokio::sync::Mutex<Option<SharePartition>>>,
    /// Its topic's name (where its leader is).
    topic: String,
}

/// The share partitions in memory, by group, topic id and partition.
#[derive(Default)]
pub struct PartSlots {
    map: Mutex<HashMap<(String, u128, u32), Arc<PartSlot>>>,
    /// Notified when records come back (released, a lock ran out, a member left), so
    /// parked fetches look again.
    pub released: Notify,
}

/// What one request asks of one partition.
#[derive(Debug, Clone)]
pub struct PartWork {
    /// The partition.
    pub tp: Tp,
    /// Its topic's name.
    pub topic: String,
    /// Acknowledgements to apply first.
    pub acks: Vec<AckBatch>,
    /// Whether to acquire records too.
    pub fetch: bool,
}

/// What happened to one partition.
#[derive(Debug, Clone)]
pub struct PartOutcome {
    /// The partition.
    pub tp: Tp,
    /// A fetch error.
    pub error: Option<(ResponseError, String)>,
    /// An acknowledgement error (the first refused batch's).
    pub ack_error: Option<(ResponseError, String)>,
    /// The stored batches holding the acquired records.
    pub records: Bytes,
    /// The acquired records.
    pub acquired: Acquired,
    /// Records acknowledged.
    pub acknowledged: u64,
}

impl PartOutcome {
    /// Nothing happened yet.
    fn new(tp: Tp) -> Self {
        Self {
            tp,
            error: None,
            ack_error: None,
            records: Bytes::new(),
            acquired: Vec::new(),
            acknowledged: 0,
        }
    }

    /// An outcome that is only an error.
    pub fn failed(tp: Tp, e: ResponseError, message: impl Into<String>) -> Self {
        Self {
            error: Some((e, message.into())),
            ..Self::new(tp)
        }
    }
}

/// One pass over a request's partitions.
pub struct Pass {
    /// Per partition, in the order asked.
    pub outcomes: Vec<PartOutcome>,
    /// The earliest lock deadline among them (ms since the epoch).
    pub next_expiry: Option<i64>,
}

/// The settings one pass works with.
#[derive(Debug, Clone)]
pub struct PassSettings {
    /// The group.
    pub group: String,
    /// The member.
    pub member: String,
    /// The group's configs.
    pub configs: GroupConfigs,
    /// Their limits.
    pub limits: Limits,
    /// Records to acquire at most.
    pub max_records: u64,
    /// Bytes to return at most (at least one batch).
    pub max_bytes: usize,
    /// The leases the commit is made under.
    pub leases: Vec<catalog::Lease>,
}

fn ack_refusal(e: AckError) -> (ResponseError, String) {
    match e {
        AckError::Invalid(m) => (ResponseError::InvalidRequest, m),
        AckError::NotHeld(o) => (
            ResponseError::InvalidRecordState,
            format!("offset {o} is not acquired by this member"),
        ),
    }
}

impl PartSlots {
    fn slot(&self, group: &str, tp: Tp, topic: &str) -> Arc<PartSlot> {
        // A panic while holding the lock is a bug; the map is still usable.
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.entry((group.to_string(), tp.0, tp.1))
            .or_insert_with(|| {
                Arc::new(PartSlot {
                    state: Arc::default(),
                    topic: topic.to_string(),
                })
            })
            .clone()
    }

    /// Forgets every partition (this node no longer leads what it led): their next
    /// use here loads what the catalog holds.
    pub fn forget_all(&self) {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Forgets a deleted group's partitions.
    pub fn forget_group(&self, group: &str) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|(g, _, _), _| g != group);
    }

    /// The partitions of `group` in memory.
    fn of_group(&self, group: &str) -> Vec<(Tp, Arc<PartSlot>)> {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<(Tp, Arc<PartSlot>)> = map
            .iter()
            .filter(|((g, _, _), _)| g == group)
            .map(|((_, t, p), s)| ((*t, *p), s.clone()))
            .collect();
        out.sort_by_key(|(tp, _)| *tp);
        out
    }

    /// The partition's state, loaded into `guard` if it is not yet: as stored, or new at
    /// the log's start or end. Whether it is new (and so must be stored).
    async fn load(
        catalog: &dyn Catalog,
        group: &str,
        tp: Tp,
        configs: &GroupConfigs,
        guard: &mut Option<SharePartition>,
    ) -> Result<bool, (ResponseError, String)> {
        if guard.is_some() {
            return Ok(false);
        }
        let stored = catalog
            .groups()
            .share_state(group, tp.0, tp.1)
            .await
            .map_err(|e| (from_catalog(&e), String::new()))?;
        if let Some(record) = stored {
            let p = StoredSharePartition::decode(&record.state)
                .and_then(SharePartition::restore)
                .ok_or_else(|| {
                    tracing::error!(group, "stored share partition state unreadable");
                    (ResponseError::KafkaStorageError, String::new())
                })?;
            *guard = Some(p);
            return Ok(false);
        }
        let state = catalog
            .kafka()
            .partition(tp.0, tp.1)
            .await
            .map_err(|e| (from_catalog(&e), String::new()))?
            .ok_or((ResponseError::UnknownTopicOrPartition, String::new()))?;
        let start = if configs.starts_earliest() {
            state.log_start_offset
        } else {
            state.next_offset
        };
        *guard = Some(SharePartition::new(start));
        Ok(true)
    }

    /// Locks the partitions of `work` (in topic and partition order, so two requests
    /// never wait for each other), applies each one's acknowledgements, acquires records
    /// for those that fetch, and submits every changed state in one transaction. The
    /// locks are let go once it is submitted (commits keep their order), and the pass
    /// completes when it is durable; on a failed commit the partitions answer its error
    /// and are reloaded by their next use.
    pub async fn pass(&self, catalog: &dyn Catalog, work: &[PartWork], s: &PassSettings) -> Pass {
        let mut order: Vec<usize> = (0..work.len()).collect();
        order.sort_by_key(|&i| work[i].tp);
        let mut guards: Vec<(
            usize,
            Arc<PartSlot>,
            OwnedMutexGuard<Option<SharePartition>>,
        )> = Vec::with_capacity(work.len());
        for i in order {
            let slot = self.slot(&s.group, work[i].tp, &work[i].topic);
            let guard = slot.state.clone().lock_owned().await;
            guards.push((i, slot, guard));
        }
        guards.sort_by_key(|(i, _, _)| *i);
        let now = crate::context::now_ms();
        let mut remaining_records = s.max_records.max(1);
        let mut remaining_bytes = s.max_bytes.max(1);
        let mut outcomes = Vec::with_capacity(work.len());
        let mut ops = Vec::new();
        let mut changed = Vec::new();
        let mut next_expiry: Option<i64> = None;
        let mut came_back = false;
        for (i, slot, guard) in &mut guards {
            let w = &work[*i];
            let mut out = PartOutcome::new(w.tp);
            let mut dirty = match Self::load(catalog, &s.group, w.tp, &s.configs, guard).await {
                Ok(new) => new,
                Err((e, m)) => {
                    outcomes.push(PartOutcome::failed(w.tp, e, m));
                    continue;
                }
            };
            let Some(p) = guard.as_mut() else {
                continue;
            };
            came_back |= p.expire(now, &s.limits);
            let log = catalog.kafka().partition(w.tp.0, w.tp.1).await;
            let log = match log {
                Ok(Some(l)) => l,
                Ok(None) => {
                    outcomes.push(PartOutcome::failed(
                        w.tp,
                        ResponseError::UnknownTopicOrPartition,
                        "",
                    ));
                    continue;
                }
                Err(e) => {
                    outcomes.push(PartOutcome::failed(w.tp, from_catalog(&e), ""));
                    continue;
                }
            };
            dirty |= p.truncate_to(log.log_start_offset);
            for (first, last, types) in &w.acks {
                let types: Option<Vec<AckType>> = types.iter().map(|t| AckType::of(*t)).collect();
                let result = match types {
                    None => Err(AckError::Invalid("unknown acknowledge type".into())),
                    Some(types) => p.acknowledge(&s.member, *first, *last, &types, now, &s.limits),
                };
                match result {
                    Ok(n) => {
                        dirty = true;
                        came_back = true;
                        out.acknowledged += n;
                    }
                    Err(e) => {
                        if out.ack_error.is_none() {
                            out.ack_error = Some(ack_refusal(e));
                        }
                    }
                }
            }
            let from = p.first_available();
            if w.fetch && remaining_records > 0 && from < log.next_offset {
                match catalog
                    .kafka()
                    .read_batches(w.tp.0, w.tp.1, from, remaining_bytes)
                    .await
                {
                    Ok(batches) => {
                        let spans: Vec<(u64, u64)> = batches
                            .iter()
                            .map(|b| (b.base_offset, b.last_offset))
                            .collect();
                        let got = p.acquire(&s.member, &spans, remaining_records, now, &s.limits);
                        let mut bytes = BytesMut::new();
                        for (b, used) in batches.iter().zip(&got.used) {
                            if *used {
                                bytes.extend_from_slice(&b.bytes);
                            }
                        }
                        let n: u64 = got.runs.iter().map(|(f, l, _)| l - f + 1).sum();
                        remaining_records = remaining_records.saturating_sub(n);
                        remaining_bytes = remaining_bytes.saturating_sub(bytes.len()).max(1);
                        dirty |= got.changed;
                        out.records = bytes.freeze();
                        out.acquired = got.runs;
                    }
                    Err(e) => out.error = Some((from_catalog(&e), String::new())),
                }
            }
            if let Some(e) = p.next_expiry() {
                next_expiry = Some(next_expiry.map_or(e, |n| n.min(e)));
            }
            if dirty {
                ops.push(Op::Group(GroupOp::PutShareState {
                    group: s.group.clone(),
                    topic_id: w.tp.0,
                    partition: w.tp.1,
                    state: ShareStateRecord {
                        state: p.stored().encode(),
                    },
                }));
                changed.push((outcomes.len(), slot.clone()));
            }
            outcomes.push(out);
        }
        if came_back {
            self.released.notify_waiters();
        }
        let commit = (!ops.is_empty())
            .then(|| catalog.commit(Transaction::new(ops).under(s.leases.clone())));
        drop(guards);
        if let Some(commit) = commit
            && let Err(e) = commit.await
        {
            let e = from_catalog(&e);
            tracing::warn!(group = %s.group, error = %e, "storing share partition states failed");
            for (k, slot) in changed {
                *slot.state.lock().await = None;
                let o = &mut outcomes[k];
                o.error = Some((e, "storing the share partition's state failed".into()));
                o.records = Bytes::new();
                o.acquired.clear();
                o.acknowledged = 0;
                if o.ack_error.is_none() {
                    o.ack_error = Some((e, String::new()));
                }
            }
        }
        Pass {
            outcomes,
            next_expiry,
        }
    }

    /// Gives back everything `member` holds in the partitions of `group` in memory (or
    /// only in `only`), in one transaction under the leases of their leaders.
    pub async fn release_member(
        &self,
        catalog: &dyn Catalog,
        holdings: &crate::Holdings,
        group: &str,
        member: &str,
        only: Option<&[Tp]>,
        limits: &Limits,
    ) -> Result<(), ResponseError> {
        let mut guards = Vec::new();
        for (tp, slot) in self.of_group(group) {
            if only.is_some_and(|o| !o.contains(&tp)) {
                continue;
            }
            let guard = slot.state.clone().lock_owned().await;
            guards.push((tp, slot, guard));
        }
        let mut ops = Vec::new();
        let mut changed = Vec::new();
        let mut leases = Vec::new();
        for (tp, slot, guard) in &mut guards {
            let Some(p) = guard.as_mut() else {
                continue;
            };
            if p.release_member(member, limits) {
                leases.extend(holdings.under_leader(&slot.topic, tp.1 as i32));
                ops.push(Op::Group(GroupOp::PutShareState {
                    group: group.to_string(),
                    topic_id: tp.0,
                    partition: tp.1,
                    state: ShareStateRecord {
                        state: p.stored().encode(),
                    },
                }));
                changed.push(slot.clone());
            }
        }
        if ops.is_empty() {
            return Ok(());
        }
        leases.sort_by(|a, b| a.address.cmp(&b.address));
        leases.dedup();
        let commit = catalog.commit(Transaction::new(ops).under(leases));
        drop(guards);
        self.released.notify_waiters();
        if let Err(e) = commit.await {
            for slot in changed {
                *slot.state.lock().await = None;
            }
            return Err(from_catalog(&e));
        }
        Ok(())
    }

    /// Each partition's start offset of `group` for DescribeShareGroupOffsets: in
    /// memory where it is used here, else as stored.
    pub async fn start_offsets(
        &self,
        catalog: &dyn Catalog,
        group: &str,
    ) -> Result<Vec<(Tp, u64)>, ResponseError> {
        let mut out: HashMap<Tp, u64> = HashMap::new();
        for (t, p, record) in catalog
            .groups()
            .share_states(group)
            .await
            .map_err(|e| from_catalog(&e))?
        {
            if let Some(s) = StoredSharePartition::decode(&record.state) {
                out.insert((t, p), s.start);
            }
        }
        for (tp, slot) in self.of_group(group) {
            if let Some(p) = slot.state.lock().await.as_ref() {
                out.insert(tp, p.start());
            }
        }
        let mut out: Vec<(Tp, u64)> = out.into_iter().collect();
        out.sort();
        Ok(out)
    }
}
