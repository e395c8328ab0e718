//! The Kafka log domain: topics and their partitions, appended batches indexed into
//! the log record being written, log start offsets (DeleteRecords, retention),
//! compaction passes, producer ids and idempotent producers' sequences, client quotas.

use crate::apply::*;
use crate::error::{CatalogError, CatalogResult};
use crate::kv::Range;
use crate::model::*;
use crate::tables::{self, *};
use crate::txn::*;

/// A change to topics, partitions and their batches, producer ids or client quotas.
#[derive(Debug, Clone, PartialEq)]
pub enum KafkaOp {
    /// Creates a topic.
    CreateTopic(TopicRecord),
    /// Replaces a topic's configs or grows its partitions.
    UpdateTopic(TopicRecord),
    /// Deletes a topic and all its data.
    DeleteTopic {
        /// Topic name.
        name: String,
    },
    /// Appends a Kafka record batch; its first 8 bytes (the base offset field) are
    /// overwritten with the offset assigned at commit.
    Append {
        /// Topic id.
        topic_id: u128,
        /// Partition.
        partition: u32,
        /// Number of offsets the batch covers (last offset delta + 1).
        offset_count: u32,
        /// Largest timestamp in the batch.
        max_timestamp: i64,
        /// The batch bytes.
        batch: bytes::Bytes,
        /// The idempotent producer's ids and sequences, checked and recorded at commit.
        producer: Option<ProducerBatch>,
        /// The transactional id of a transactional batch: the commit fails unless that
        /// id's transaction is open for the batch's producer and epoch and holds this
        /// partition (KIP-890's check, made where it cannot race an EndTxn).
        transactional_id: Option<String>,
    },
    /// Moves a partition's log start offset forward, deleting the batches wholly before it.
    TruncateBefore {
        /// Topic id.
        topic_id: u128,
        /// Partition.
        partition: u32,
        /// New log start offset.
        offset: u64,
    },
    /// Allocates the next producer id ([`OpOutcome::ProducerId`]).
    AllocateProducerId,
    /// Commits one log compaction pass over a partition: removes the batches whose base
    /// offsets are in `removed`, indexes `added` (their compacted forms, records at their
    /// original offsets; the bytes go into the log record) and stores `state`. Fails with
    /// [`crate::CatalogError::PreconditionFailed`] unless the partition still starts at
    /// `log_start`, its compaction is still at `expected_passes` passes and every removed
    /// batch is still there, so a pass planned on an older partition never commits.
    CompactPartition {
        /// Topic id.
        topic_id: u128,
        /// Partition.
        partition: u32,
        /// The log start offset the pass was planned on.
        log_start: u64,
        /// The pass count the pass was planned on.
        expected_passes: u64,
        /// Base offsets of the batches the pass replaces or drops.
        removed: Vec<u64>,
        /// The replacements, in offset order.
        added: Vec<CompactedBatch>,
        /// The partition's compaction state after the pass (`passes` = expected + 1).
        state: crate::model::CompactionState,
    },
    /// Sets an entity's client quotas (all of them: an empty map removes the entity).
    PutQuotas {
        /// The entity.
        entity: crate::model::QuotaEntity,
        /// Values by quota key.
        values: std::collections::BTreeMap<String, f64>,
    },
}

/// Idempotent producers' states on their partitions as a transaction's earlier appends
/// leave them: a request may carry several batches of one producer for one partition,
/// and each is checked after the one before it, not against the stored state alone.
#[derive(Default)]
pub(crate) struct Sequences(std::collections::HashMap<[u8; 28], ProducerState>);

/// The base offset recorded for a batch of the transaction being checked (its real one
/// is known only when it is applied).
const IN_THIS_TRANSACTION: u64 = u64::MAX;

impl Sequences {
    /// Checks an idempotent batch for `partition` of `topic_id` after the transaction's
    /// earlier ones: `Some(base offset)` for a retry of a batch already appended, to be
    /// left out.
    pub(crate) fn check(
        &mut self,
        t: &mut Tables<'_>,
        p: &ProducerBatch,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<u64>> {
        let key = producer_key(p.producer_id, topic_id, partition);
        let state = match self.0.get(&key) {
            Some(s) => Some(s.clone()),
            None => get::<ProducerState>(t.s, PRODUCERS, &key)?,
        };
        match ProducerState::check(state.as_ref(), p) {
            Ok(()) => {
                let mut state = state.unwrap_or_default();
                state.record(p, IN_THIS_TRANSACTION);
                self.0.insert(key, state);
                Ok(None)
            }
            Err(CatalogError::DuplicateSequence {
                base_offset: IN_THIS_TRANSACTION,
            }) => Err(CatalogError::Invalid(
                "a transaction carries one idempotent batch twice".into(),
            )),
            Err(CatalogError::DuplicateSequence { base_offset }) => Ok(Some(base_offset)),
            Err(e) => Err(e),
        }
    }
}

impl Tables<'_> {
    /// Checks that `op` can apply to the current state.
    pub(crate) fn check_kafka(&mut self, op: &KafkaOp) -> CatalogResult<()> {
        match op {
            KafkaOp::CreateTopic(t) => {
                if t.name.is_empty() || t.partitions == 0 {
                    return Err(CatalogError::Invalid(format!(
                        "topic {:?} with {} partitions",
                        t.name, t.partitions
                    )));
                }
                if self.topic(&t.name)?.is_some()
                    || self
                        .s
                        .get(TOPIC_IDS, t.id.to_be_bytes().as_slice())?
                        .is_some()
                {
                    return Err(CatalogError::TopicExists(t.name.clone()));
                }
            }
            KafkaOp::UpdateTopic(t) => match self.topic(&t.name)? {
                Some(old) if old.id == t.id && t.partitions >= old.partitions => {}
                Some(old) if old.id == t.id => {
                    return Err(CatalogError::Invalid(format!(
                        "topic {} cannot shrink from {} to {} partitions",
                        t.name, old.partitions, t.partitions
                    )));
                }
                _ => return Err(CatalogError::UnknownTopic(t.name.clone())),
            },
            KafkaOp::DeleteTopic { name } => {
                if self.topic(name)?.is_none() {
                    return Err(CatalogError::UnknownTopic(name.clone()));
                }
                for (source, e) in self.expansions_of(name)? {
                    if let Some(spec) = e.current() {
                        return Err(CatalogError::TopicHasExpansion {
                            topic: name.clone(),
                            column: source,
                            target: format!("{}.{}", spec.namespace, spec.table),
                        });
                    }
                }
            }
            KafkaOp::Append {
                topic_id,
                partition,
                offset_count,
                batch,
                producer,
                transactional_id,
                ..
            } => {
                self.require_partition(*topic_id, *partition)?;
                if batch.len() < 8 || *offset_count == 0 {
                    return Err(CatalogError::Invalid("empty record batch".into()));
                }
                // The producer's sequence: `Sequences::check`, across the transaction.
                if let Some(id) = transactional_id {
                    self.require_in_txn(id, producer.as_ref(), *topic_id, *partition)?;
                }
            }
            KafkaOp::PutQuotas { .. } => {}
            KafkaOp::AllocateProducerId => {}
            KafkaOp::TruncateBefore {
                topic_id,
                partition,
                offset,
            } => {
                let st = self.require_partition(*topic_id, *partition)?;
                if *offset > st.next_offset {
                    return Err(CatalogError::Invalid(format!(
                        "offset {offset} is past the end {}",
                        st.next_offset
                    )));
                }
                if *offset > st.log_start_offset {
                    self.require_expanded(*topic_id, *partition, *offset)?;
                }
            }
            KafkaOp::CompactPartition {
                topic_id,
                partition,
                log_start,
                expected_passes,
                removed,
                added: _,
                state,
            } => {
                let st = self.require_partition(*topic_id, *partition)?;
                let passes = get::<CompactionState>(
                    self.s,
                    COMPACTION,
                    &partition_key(*topic_id, *partition),
                )?
                .map_or(0, |c| c.passes);
                let stale = |why: String| Err(CatalogError::PreconditionFailed(why));
                if st.log_start_offset != *log_start {
                    return stale(format!(
                        "partition starts at {}, not {log_start}",
                        st.log_start_offset
                    ));
                }
                if passes != *expected_passes || state.passes != expected_passes + 1 {
                    return stale(format!(
                        "compaction is at pass {passes}, not {expected_passes}"
                    ));
                }
                let mut end = 0;
                for base in removed {
                    let key = batch_key(*topic_id, *partition, *base);
                    match self.s.get(BATCHES, key.as_slice())? {
                        Some(v) => end = end.max(entry(&v)?.last_offset + 1),
                        None => return stale(format!("batch {base} is gone")),
                    }
                }
                if end > 0 {
                    self.require_expanded(*topic_id, *partition, end)?;
                }
            }
        }
        Ok(())
    }

    /// Applies an operation that passed [`Tables::check_kafka`].
    pub(crate) fn apply_kafka(
        &mut self,
        op: &KafkaOp,
        effects: &mut Effects,
        log: &mut LogCursor,
    ) -> CatalogResult<OpOutcome> {
        match op {
            KafkaOp::CreateTopic(t) => {
                put(self.s, TOPICS, t.name.as_bytes(), t)?;
                self.s
                    .put(TOPIC_IDS, t.id.to_be_bytes().as_slice(), t.name.as_bytes())?;
                for p in 0..t.partitions {
                    put(
                        self.s,
                        PARTITIONS,
                        &partition_key(t.id, p),
                        &PartitionState::default(),
                    )?;
                }
            }
            KafkaOp::UpdateTopic(t) => {
                let old = self.topic(&t.name)?.map(|o| o.partitions).unwrap_or(0);
                put(self.s, TOPICS, t.name.as_bytes(), t)?;
                for p in old..t.partitions {
                    put(
                        self.s,
                        PARTITIONS,
                        &partition_key(t.id, p),
                        &PartitionState::default(),
                    )?;
                }
            }
            KafkaOp::DeleteTopic { name } => {
                if let Some(t) = self.topic(name)? {
                    self.s.remove(TOPICS, name.as_bytes())?;
                    self.s.remove(TOPIC_IDS, t.id.to_be_bytes().as_slice())?;
                    let prefix = t.id.to_be_bytes();
                    remove_prefix(self.s, PARTITIONS, &prefix, |_| Ok(()))?;
                    remove_prefix(self.s, COMPACTION, &prefix, |_| Ok(()))?;
                    remove_prefix(self.s, TXN_PARTITIONS, &prefix, |_| Ok(()))?;
                    remove_prefix(self.s, ABORTED_TXNS, &prefix, |_| Ok(()))?;
                    remove_prefix(self.s, EXPANSIONS, &expansions_prefix(name), |_| Ok(()))?;
                    let mut segments = Vec::new();
                    remove_prefix(self.s, BATCHES, &prefix, |v| {
                        segments.push(entry(v)?.position.segment);
                        Ok(())
                    })?;
                    for segment in segments {
                        self.add_segment_ref(segment, -1)?;
                    }
                }
                if let Some(table) = get::<TopicTable>(self.s, TOPIC_TABLES, name.as_bytes())? {
                    self.s.remove(TOPIC_TABLES, name.as_bytes())?;
                    self.remove_objects_under(&table.bucket, &table.prefix, effects)?;
                }
            }
            KafkaOp::AllocateProducerId => {
                let id = self.counter(PRODUCER_ID)? + 1;
                self.set_counter(PRODUCER_ID, id)?;
                return Ok(OpOutcome::ProducerId(id as i64));
            }
            KafkaOp::Append {
                topic_id,
                partition,
                offset_count,
                max_timestamp,
                batch,
                producer,
                transactional_id,
            } => {
                let pk = partition_key(*topic_id, *partition);
                let mut st: PartitionState = get(self.s, PARTITIONS, &pk)?.unwrap_or_default();
                let base = self.append_batch(
                    *topic_id,
                    *partition,
                    &mut st,
                    batch,
                    *offset_count,
                    *max_timestamp,
                    log,
                )?;
                if let Some(p) = producer {
                    let key = producer_key(p.producer_id, *topic_id, *partition);
                    let mut state: ProducerState =
                        get(self.s, PRODUCERS, &key)?.unwrap_or_default();
                    state.record(p, base);
                    put(self.s, PRODUCERS, &key, &state)?;
                    if transactional_id.is_some() {
                        self.open_in_partition(&pk, p.producer_id, base)?;
                    }
                }
                put(self.s, PARTITIONS, &pk, &st)?;
                return Ok(OpOutcome::Appended {
                    base_offset: base,
                    log_start_offset: st.log_start_offset,
                });
            }
            KafkaOp::PutQuotas { entity, values } => {
                let key = quota_key(entity);
                if values.is_empty() {
                    self.s.remove(CLIENT_QUOTAS, key.as_slice())?;
                } else {
                    let quotas = crate::model::ClientQuotas {
                        entity: entity.clone(),
                        values: values.clone(),
                    };
                    put(self.s, CLIENT_QUOTAS, &key, &quotas)?;
                }
            }
            KafkaOp::TruncateBefore {
                topic_id,
                partition,
                offset,
            } => {
                let pk = partition_key(*topic_id, *partition);
                let mut st: PartitionState = get(self.s, PARTITIONS, &pk)?.unwrap_or_default();
                if *offset > st.log_start_offset {
                    st.log_start_offset = *offset;
                    let from = batch_key(*topic_id, *partition, 0);
                    let to = batch_key(*topic_id, *partition, *offset);
                    let mut doomed = Vec::new();
                    for (k, v) in self.s.range(BATCHES, Range::between(&from, Some(&to)))? {
                        let e = entry(&v)?;
                        if e.last_offset < *offset {
                            doomed.push((k, e));
                        }
                    }
                    for (k, e) in doomed {
                        self.s.remove(BATCHES, k.as_slice())?;
                        self.add_segment_ref(e.position.segment, -1)?;
                        st.bytes = st.bytes.saturating_sub(u64::from(e.len));
                    }
                    put(self.s, PARTITIONS, &pk, &st)?;
                    // Aborted transactions whose markers are gone concern no reader.
                    let gone = self
                        .s
                        .range(ABORTED_TXNS, Range::between(&from, Some(&to)))?;
                    for (k, _) in gone {
                        self.s.remove(ABORTED_TXNS, k.as_slice())?;
                    }
                }
            }
            KafkaOp::CompactPartition {
                topic_id,
                partition,
                removed,
                added,
                state,
                ..
            } => {
                let pk = partition_key(*topic_id, *partition);
                let mut st: PartitionState = get(self.s, PARTITIONS, &pk)?.unwrap_or_default();
                for base in removed {
                    let key = batch_key(*topic_id, *partition, *base);
                    let old = self.s.get(BATCHES, key.as_slice())?;
                    self.s.remove(BATCHES, key.as_slice())?;
                    if let Some(e) = old.map(|v| entry(&v)).transpose()? {
                        self.add_segment_ref(e.position.segment, -1)?;
                        st.bytes = st.bytes.saturating_sub(u64::from(e.len));
                    }
                }
                for b in added {
                    let e = tables::BatchEntry {
                        last_offset: b.last_offset,
                        max_timestamp: b.max_timestamp,
                        position: log.position,
                        data_offset: log.push(&b.batch, b.base_offset),
                        len: b.batch.len() as u32,
                    };
                    self.s.put(
                        BATCHES,
                        batch_key(*topic_id, *partition, b.base_offset).as_slice(),
                        e.encode().as_slice(),
                    )?;
                    self.add_segment_ref(log.position.segment, 1)?;
                    st.bytes += b.batch.len() as u64;
                }
                put(self.s, PARTITIONS, &pk, &st)?;
                put(self.s, COMPACTION, &pk, state)?;
            }
        }
        Ok(OpOutcome::Done)
    }

    pub(crate) fn topic(&mut self, name: &str) -> CatalogResult<Option<TopicRecord>> {
        get(self.s, TOPICS, name.as_bytes())
    }

    pub(crate) fn partition(
        &mut self,
        topic_id: u128,
        p: u32,
    ) -> CatalogResult<Option<PartitionState>> {
        get(self.s, PARTITIONS, &partition_key(topic_id, p))
    }

    pub(crate) fn require_partition(
        &mut self,
        topic_id: u128,
        p: u32,
    ) -> CatalogResult<PartitionState> {
        self.partition(topic_id, p)?
            .ok_or_else(|| CatalogError::UnknownPartition {
                topic: format!("{topic_id:032x}"),
                partition: p,
            })
    }

    /// Indexes a batch at the partition's next offset (its bytes go to the record's data
    /// section) and moves the partition on; returns its base offset. The caller stores
    /// `st`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn append_batch(
        &mut self,
        topic_id: u128,
        partition: u32,
        st: &mut PartitionState,
        batch: &[u8],
        offset_count: u32,
        max_timestamp: i64,
        log: &mut LogCursor,
    ) -> CatalogResult<u64> {
        let base = st.next_offset;
        let last = base + u64::from(offset_count) - 1;
        let e = tables::BatchEntry {
            last_offset: last,
            max_timestamp,
            position: log.position,
            data_offset: log.push(batch, base),
            len: batch.len() as u32,
        };
        self.s.put(
            BATCHES,
            batch_key(topic_id, partition, base).as_slice(),
            e.encode().as_slice(),
        )?;
        self.add_segment_ref(log.position.segment, 1)?;
        st.next_offset = last + 1;
        st.bytes += batch.len() as u64;
        Ok(base)
    }

    pub(crate) fn add_segment_ref(&mut self, segment: u64, delta: i64) -> CatalogResult<()> {
        let key = segment.to_be_bytes();
        let n = self
            .s
            .get(SEGMENT_REFS, key.as_slice())?
            .and_then(|v| v.as_slice().try_into().ok().map(u64::from_be_bytes))
            .unwrap_or(0)
            .saturating_add_signed(delta);
        if n == 0 {
            self.s.remove(SEGMENT_REFS, key.as_slice())?;
        } else {
            self.s
                .put(SEGMENT_REFS, key.as_slice(), n.to_be_bytes().as_slice())?;
        }
        Ok(())
    }
}

pub(crate) fn entry(v: &[u8]) -> CatalogResult<tables::BatchEntry> {
    tables::BatchEntry::decode(v).ok_or_else(|| CatalogError::Corrupt("batch index entry".into()))
}
