//! The Kafka transaction domain: a transactional id's state, the offsets a
//! transaction holds until it ends, and its end (markers appended to every partition it
//! touched, offsets committed or dropped, aborted ranges recorded).

use crate::apply::*;
use crate::error::{CatalogError, CatalogResult};
use crate::kv::Range;
use crate::model::*;
use crate::tables::*;
use crate::txn::*;

/// A change to a Kafka transaction.
#[derive(Debug, Clone, PartialEq)]
pub enum TxnOp {
    /// Stores a transactional id's coordinator state (the coordinator serializes the
    /// changes of one id, so this is a plain write).
    PutTxn {
        /// Transactional id.
        id: String,
        /// The new state.
        record: crate::model::TxnRecord,
    },
    /// Forgets a transactional id (its expiration: no transaction open, unused for
    /// `transactional.id.expiration.ms`).
    DropTxn {
        /// Transactional id.
        id: String,
    },
    /// Holds a consumer group offset in an open transaction, to be committed with it.
    /// Fails with [`crate::CatalogError::InvalidTxnState`] unless the transaction is open
    /// for this producer and epoch and holds the group.
    TxnOffsetCommit {
        /// Transactional id.
        id: String,
        /// Producer id.
        producer_id: i64,
        /// Producer epoch.
        epoch: i16,
        /// Group id.
        group: String,
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
        /// The offset.
        offset: OffsetRecord,
    },
    /// Ends a transaction: appends a control batch (commit or abort marker) to every
    /// partition in `markers`, commits (or drops) every offset the transaction holds, and
    /// stores `record`. Fails with [`crate::CatalogError::InvalidTxnState`] unless the
    /// stored state is the open transaction of `producer_id` at an epoch up to `epoch`
    /// (a fencing abort writes the bumped epoch).
    EndTxn {
        /// Transactional id.
        id: String,
        /// Producer id.
        producer_id: i64,
        /// The epoch the markers carry.
        epoch: i16,
        /// Commit or abort.
        commit: bool,
        /// One control batch per partition (a partition no longer there is skipped).
        markers: Vec<TxnMarker>,
        /// The state after it.
        record: crate::model::TxnRecord,
    },
}

impl Tables<'_> {
    /// Checks that `op` can apply to the current state.
    pub(crate) fn check_transactions(&mut self, op: &TxnOp) -> CatalogResult<()> {
        match op {
            TxnOp::PutTxn { .. } | TxnOp::DropTxn { .. } => {}
            TxnOp::TxnOffsetCommit {
                id,
                producer_id,
                epoch,
                group,
                ..
            } => {
                let r = self.open_txn(id, *producer_id, *epoch)?;
                if !r.groups.contains(group) {
                    return Err(CatalogError::InvalidTxnState(format!(
                        "group {group} is not in transaction {id}"
                    )));
                }
            }
            TxnOp::EndTxn {
                id,
                producer_id,
                epoch,
                ..
            } => {
                let stored: Option<TxnRecord> = get(self.s, TXNS, id.as_bytes())?;
                let open = stored.is_some_and(|r| {
                    r.phase == crate::model::TxnPhase::Ongoing
                        && r.producer_id == *producer_id
                        && r.epoch <= *epoch
                });
                if !open {
                    return Err(CatalogError::InvalidTxnState(format!(
                        "transaction {id} of producer {producer_id} is not open"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Applies an operation that passed [`Tables::check_transactions`].
    pub(crate) fn apply_transactions(
        &mut self,
        op: &TxnOp,
        _effects: &mut Effects,
        log: &mut LogCursor,
    ) -> CatalogResult<OpOutcome> {
        match op {
            TxnOp::PutTxn { id, record } => put(self.s, TXNS, id.as_bytes(), record)?,
            TxnOp::DropTxn { id } => {
                self.s.remove(TXNS, id.as_bytes())?;
            }
            TxnOp::TxnOffsetCommit {
                id,
                group,
                topic,
                partition,
                offset,
                ..
            } => put(
                self.s,
                TXN_OFFSETS,
                &txn_offset_key(group, topic, *partition, id),
                offset,
            )?,
            TxnOp::EndTxn {
                id,
                producer_id,
                epoch,
                commit,
                markers,
                record,
            } => self.end_txn(id, *producer_id, *epoch, *commit, markers, record, log)?,
        }
        Ok(OpOutcome::Done)
    }

    /// The stored transaction `id`, if it is open for this producer and epoch.
    pub(crate) fn open_txn(
        &mut self,
        id: &str,
        producer_id: i64,
        epoch: i16,
    ) -> CatalogResult<TxnRecord> {
        let stored: Option<TxnRecord> = get(self.s, TXNS, id.as_bytes())?;
        match stored {
            Some(r) if r.is_open_for(producer_id, epoch) => Ok(r),
            Some(r) if r.producer_id == producer_id && r.epoch > epoch => {
                Err(CatalogError::ProducerFenced)
            }
            _ => Err(CatalogError::InvalidTxnState(format!(
                "transaction {id} is not open for producer {producer_id} epoch {epoch}"
            ))),
        }
    }

    /// Refuses a transactional batch unless its transaction is open and holds the
    /// partition.
    pub(crate) fn require_in_txn(
        &mut self,
        id: &str,
        producer: Option<&crate::txn::ProducerBatch>,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<()> {
        let p = producer.ok_or_else(|| {
            CatalogError::Invalid("a transactional batch without a producer id".into())
        })?;
        let r = self.open_txn(id, p.producer_id, p.epoch)?;
        let name = self
            .s
            .get(TOPIC_IDS, topic_id.to_be_bytes().as_slice())?
            .map(|n| String::from_utf8_lossy(&n).into_owned())
            .unwrap_or_default();
        if !r
            .partitions
            .iter()
            .any(|(t, q)| *t == name && *q == partition)
        {
            return Err(CatalogError::InvalidTxnState(format!(
                "{name}/{partition} is not in transaction {id}"
            )));
        }
        Ok(())
    }

    /// Records that a producer's transaction has written to a partition from `offset`
    /// on (its first write there counts).
    pub(crate) fn open_in_partition(
        &mut self,
        pk: &[u8],
        producer_id: i64,
        offset: u64,
    ) -> CatalogResult<()> {
        let mut tp: TxnPartition = get(self.s, TXN_PARTITIONS, pk)?.unwrap_or_default();
        if !tp.open.iter().any(|o| o.producer_id == producer_id) {
            tp.open.push(crate::model::OpenTxn {
                producer_id,
                first_offset: offset,
            });
            put(self.s, TXN_PARTITIONS, pk, &tp)?;
        }
        Ok(())
    }

    /// Writes one EndTxn: a marker per partition that is still there, the transaction's
    /// offsets committed or dropped, the new state.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn end_txn(
        &mut self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        markers: &[crate::txn::TxnMarker],
        record: &TxnRecord,
        log: &mut LogCursor,
    ) -> CatalogResult<()> {
        for m in markers {
            let pk = partition_key(m.topic_id, m.partition);
            let Some(mut st) = self.partition(m.topic_id, m.partition)? else {
                continue;
            };
            let at = self.append_batch(
                m.topic_id,
                m.partition,
                &mut st,
                &m.batch,
                1,
                m.timestamp,
                log,
            )?;
            put(self.s, PARTITIONS, &pk, &st)?;
            // A fencing abort's bumped epoch fences the old producer here too; the new
            // one starts its sequences again.
            let key = producer_key(producer_id, m.topic_id, m.partition);
            if let Some(mut ps) = get::<ProducerState>(self.s, PRODUCERS, &key)?
                && epoch > ps.epoch
            {
                ps.epoch = epoch;
                ps.recent.clear();
                put(self.s, PRODUCERS, &key, &ps)?;
            }
            let mut tp: TxnPartition = get(self.s, TXN_PARTITIONS, &pk)?.unwrap_or_default();
            if let Some(i) = tp.open.iter().position(|o| o.producer_id == producer_id) {
                let open = tp.open.remove(i);
                if !commit {
                    let aborted = AbortedTxn {
                        producer_id,
                        first_offset: open.first_offset,
                        last_offset: at,
                    };
                    put(
                        self.s,
                        ABORTED_TXNS,
                        &batch_key(m.topic_id, m.partition, at),
                        &aborted,
                    )?;
                    tp.max_aborted_span = tp.max_aborted_span.max(at - open.first_offset);
                }
                if tp == TxnPartition::default() {
                    self.s.remove(TXN_PARTITIONS, pk.as_slice())?;
                } else {
                    put(self.s, TXN_PARTITIONS, &pk, &tp)?;
                }
            }
        }
        let stored: Option<TxnRecord> = get(self.s, TXNS, id.as_bytes())?;
        for group in stored.map(|r| r.groups).unwrap_or_default() {
            let prefix = group_prefix(&group);
            let end = prefix_end(&prefix);
            let mut held = Vec::new();
            for (k, v) in self.s.range(TXN_OFFSETS, Range::prefix(&prefix, &end))? {
                if let Some((topic, partition, holder)) = txn_offset_parts(&group, &k)
                    && holder == id
                {
                    held.push((k, topic, partition, v));
                }
            }
            for (k, topic, partition, v) in held {
                self.s.remove(TXN_OFFSETS, k.as_slice())?;
                if commit {
                    let o: OffsetRecord = dec(&v)?;
                    put(self.s, OFFSETS, &offset_key(&group, &topic, partition), &o)?;
                }
            }
        }
        put(self.s, TXNS, id.as_bytes(), record)
    }
}
