//! Catalog format 2, frozen (first written by the build that added log compaction): what
//! format 2 adds to format 1, and nothing else.
//!
//! - **Log record payloads**: the same layout as format 1 (`[batch data][postcard
//!   RecordHeader][u32 LE header length]`), but each op is a [`Op`]: variant 0 wraps a
//!   format-1 op unchanged, the later variants are the ops format 2 added. The data
//!   section holds, in op order, every `Append`'s batch and every `CompactPartition`'s
//!   added batches; `batch_lens` lists their lengths in that order.
//! - **Store values**: [`CompactionState`], in the `compaction` table (checkpoint tag 16)
//!   that format-2 stores add. Every format-1 value keeps its format-1 encoding.
//!
//! Nothing here may change; the next format gets a module of its own.

use serde::{Deserialize, Serialize};

use super::{each, v1};
use crate::{model, txn};

/// A log record op of format 2, by variant index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// 0: a format-1 op, encoded as format 1 encodes it.
    V1(v1::Op),
    /// 1: `txn::KafkaOp::CompactPartition`; the added batches' bytes are in the data section.
    CompactPartition {
        topic_id: u128,
        partition: u32,
        log_start: u64,
        expected_passes: u64,
        removed: Vec<u64>,
        added: Vec<CompactedBatch>,
        state: CompactionState,
    },
}

/// `txn::CompactedBatch` without its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactedBatch {
    pub base_offset: u64,
    pub last_offset: u64,
    pub max_timestamp: i64,
}

/// `model::CompactionState`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionState {
    pub cleaned_to: u64,
    pub passes: u64,
    pub horizons: Vec<Horizon>,
}

/// `model::Horizon`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Horizon {
    pub end: u64,
    pub reached_ms: i64,
    pub tombstones: u64,
}

/// `txn::Transaction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transaction {
    pub ops: Vec<Op>,
}

/// The header of a format-2 log record payload.
#[derive(Debug, Serialize, Deserialize)]
pub struct RecordHeader {
    /// The group's transactions, with every batch left empty.
    pub txns: Vec<Transaction>,
    /// The lengths of the batches in the data section, in op order.
    pub batch_lens: Vec<u32>,
}

twin!(Horizon <=> model::Horizon { end, reached_ms, tombstones });

twin!(CompactionState <=> model::CompactionState {
    cleaned_to,
    passes,
    horizons: each
});

impl From<Transaction> for txn::Transaction {
    fn from(v: Transaction) -> Self {
        Self::new(each(v.ops))
    }
}

/// The live op, every batch empty (the record decoder fills them from the data section).
impl From<Op> for txn::Op {
    fn from(v: Op) -> Self {
        match v {
            Op::V1(op) => op.into(),
            Op::CompactPartition {
                topic_id,
                partition,
                log_start,
                expected_passes,
                removed,
                added,
                state,
            } => txn::Op::Kafka(txn::KafkaOp::CompactPartition {
                topic_id,
                partition,
                log_start,
                expected_passes,
                removed,
                added: added
                    .into_iter()
                    .map(|b| txn::CompactedBatch {
                        base_offset: b.base_offset,
                        last_offset: b.last_offset,
                        max_timestamp: b.max_timestamp,
                        batch: bytes::Bytes::new(),
                    })
                    .collect(),
                state: state.into(),
            }),
        }
    }
}

/// The format-2 form of a live op for a log record, its batches left out (their bytes go
/// to the record's data section).
pub fn op_for_record(op: &txn::Op) -> Op {
    match op {
        txn::Op::Kafka(txn::KafkaOp::CompactPartition {
            topic_id,
            partition,
            log_start,
            expected_passes,
            removed,
            added,
            state,
        }) => Op::CompactPartition {
            topic_id: *topic_id,
            partition: *partition,
            log_start: *log_start,
            expected_passes: *expected_passes,
            removed: removed.clone(),
            added: added
                .iter()
                .map(|b| CompactedBatch {
                    base_offset: b.base_offset,
                    last_offset: b.last_offset,
                    max_timestamp: b.max_timestamp,
                })
                .collect(),
            state: state.clone().into(),
        },
        // Format 1 carries every other op.
        other => match v1::op_for_record(other) {
            Some(op) => Op::V1(op),
            None => unreachable!("a later format carries the ops format 2 does not know"),
        },
    }
}
