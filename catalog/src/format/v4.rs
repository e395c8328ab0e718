//! Catalog format 4, frozen (first written by the build that added Kafka transactions):
//! what format 4 adds to format 3, and nothing else.
//!
//! - **Log record payloads**: the same layout as formats 1 to 3, each op an [`Op`]:
//!   variant 0 wraps a format-3 op unchanged (which may itself wrap an older one), the
//!   later variants are the ops format 4 added. [`Op::AppendTxn`] puts its batch in the
//!   data section as an append does, [`Op::EndTxn`] one control batch per marker, in
//!   marker order.
//! - **Store values**: [`TxnRecord`] in `txns` (checkpoint tag 19), format 1's
//!   `OffsetRecord` in `txn_offsets` (tag 20), [`TxnPartition`] in `txn_partitions`
//!   (tag 21) and [`AbortedTxn`] in `aborted_txns` (tag 22), which format-4 stores add.
//!   Every older value keeps its encoding.
//!
//! Nothing here may change; the next format gets a module of its own.

use serde::{Deserialize, Serialize};

use super::{each, opt, v1, v3};
use crate::{model, txn};

/// A log record op of format 4, by variant index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// 0: a format-3 op, encoded as format 3 encodes it.
    V3(v3::Op),
    /// 1: `txn::KafkaOp::Append` of a transactional batch (its bytes in the data section).
    AppendTxn {
        topic_id: u128,
        partition: u32,
        offset_count: u32,
        max_timestamp: i64,
        producer: Option<v1::ProducerBatch>,
        transactional_id: String,
    },
    /// 2: `txn::TxnOp::PutTxn`.
    PutTxn { id: String, record: TxnRecord },
    /// 3: `txn::TxnOp::TxnOffsetCommit`.
    TxnOffsetCommit {
        id: String,
        producer_id: i64,
        epoch: i16,
        group: String,
        topic: String,
        partition: u32,
        offset: v1::OffsetRecord,
    },
    /// 4: `txn::TxnOp::EndTxn` (each marker's batch in the data section).
    EndTxn {
        id: String,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        markers: Vec<TxnMarker>,
        record: TxnRecord,
    },
    /// 5: `txn::TxnOp::DropTxn`.
    DropTxn { id: String },
}

/// `txn::TxnMarker` without its batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnMarker {
    pub topic_id: u128,
    pub partition: u32,
    pub timestamp: i64,
}

/// `model::TxnRecord`; `phase` is 0 Empty, 1 Ongoing, 2 CompleteCommit, 3 CompleteAbort.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnRecord {
    pub producer_id: i64,
    pub epoch: i16,
    pub timeout_ms: u32,
    pub phase: u8,
    pub partitions: Vec<(String, u32)>,
    pub groups: Vec<String>,
    pub started_ms: i64,
    pub updated_ms: i64,
}

/// `model::OpenTxn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenTxn {
    pub producer_id: i64,
    pub first_offset: u64,
}

/// `model::TxnPartition`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnPartition {
    pub open: Vec<OpenTxn>,
    pub max_aborted_span: u64,
}

/// `model::AbortedTxn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: u64,
    pub last_offset: u64,
}

/// `txn::Transaction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transaction {
    pub ops: Vec<Op>,
}

/// The header of a format-4 log record payload.
#[derive(Debug, Serialize, Deserialize)]
pub struct RecordHeader {
    /// The group's transactions, with every batch left empty.
    pub txns: Vec<Transaction>,
    /// The lengths of the batches in the data section, in op order.
    pub batch_lens: Vec<u32>,
}

impl From<model::TxnPhase> for u8 {
    fn from(p: model::TxnPhase) -> Self {
        match p {
            model::TxnPhase::Empty => 0,
            model::TxnPhase::Ongoing => 1,
            model::TxnPhase::CompleteCommit => 2,
            model::TxnPhase::CompleteAbort => 3,
        }
    }
}

/// An unknown phase code reads as Empty: no such record is ever written, and Empty
/// holds nothing a reader could lose.
impl From<u8> for model::TxnPhase {
    fn from(code: u8) -> Self {
        match code {
            1 => model::TxnPhase::Ongoing,
            2 => model::TxnPhase::CompleteCommit,
            3 => model::TxnPhase::CompleteAbort,
            _ => model::TxnPhase::Empty,
        }
    }
}

twin!(TxnRecord <=> model::TxnRecord {
    producer_id,
    epoch,
    timeout_ms,
    phase,
    partitions,
    groups,
    started_ms,
    updated_ms
});
twin!(OpenTxn <=> model::OpenTxn { producer_id, first_offset });
twin!(TxnPartition <=> model::TxnPartition { open: each, max_aborted_span });
twin!(AbortedTxn <=> model::AbortedTxn { producer_id, first_offset, last_offset });

impl From<Transaction> for txn::Transaction {
    fn from(v: Transaction) -> Self {
        Self::new(each(v.ops))
    }
}

/// The live op, every batch empty (the record decoder fills them from the data section).
impl From<Op> for txn::Op {
    fn from(v: Op) -> Self {
        match v {
            Op::V3(op) => op.into(),
            Op::AppendTxn {
                topic_id,
                partition,
                offset_count,
                max_timestamp,
                producer,
                transactional_id,
            } => txn::Op::Kafka(txn::KafkaOp::Append {
                topic_id,
                partition,
                offset_count,
                max_timestamp,
                batch: bytes::Bytes::new(),
                producer: opt(producer),
                transactional_id: Some(transactional_id),
            }),
            Op::PutTxn { id, record } => txn::Op::Txn(txn::TxnOp::PutTxn {
                id,
                record: record.into(),
            }),
            Op::DropTxn { id } => txn::Op::Txn(txn::TxnOp::DropTxn { id }),
            Op::TxnOffsetCommit {
                id,
                producer_id,
                epoch,
                group,
                topic,
                partition,
                offset,
            } => txn::Op::Txn(txn::TxnOp::TxnOffsetCommit {
                id,
                producer_id,
                epoch,
                group,
                topic,
                partition,
                offset: offset.into(),
            }),
            Op::EndTxn {
                id,
                producer_id,
                epoch,
                commit,
                markers,
                record,
            } => txn::Op::Txn(txn::TxnOp::EndTxn {
                id,
                producer_id,
                epoch,
                commit,
                markers: markers
                    .into_iter()
                    .map(|m| txn::TxnMarker {
                        topic_id: m.topic_id,
                        partition: m.partition,
                        timestamp: m.timestamp,
                        batch: bytes::Bytes::new(),
                    })
                    .collect(),
                record: record.into(),
            }),
        }
    }
}

/// The format-4 form of a live op for a log record, its batches left out (their bytes go
/// to the record's data section).
pub fn op_for_record(op: &txn::Op) -> Op {
    match op {
        txn::Op::Kafka(txn::KafkaOp::Append {
            topic_id,
            partition,
            offset_count,
            max_timestamp,
            batch: _,
            producer,
            transactional_id: Some(id),
        }) => Op::AppendTxn {
            topic_id: *topic_id,
            partition: *partition,
            offset_count: *offset_count,
            max_timestamp: *max_timestamp,
            producer: opt(*producer),
            transactional_id: id.clone(),
        },
        txn::Op::Txn(txn::TxnOp::PutTxn { id, record }) => Op::PutTxn {
            id: id.clone(),
            record: record.clone().into(),
        },
        txn::Op::Txn(txn::TxnOp::DropTxn { id }) => Op::DropTxn { id: id.clone() },
        txn::Op::Txn(txn::TxnOp::TxnOffsetCommit {
            id,
            producer_id,
            epoch,
            group,
            topic,
            partition,
            offset,
        }) => Op::TxnOffsetCommit {
            id: id.clone(),
            producer_id: *producer_id,
            epoch: *epoch,
            group: group.clone(),
            topic: topic.clone(),
            partition: *partition,
            offset: offset.clone().into(),
        },
        txn::Op::Txn(txn::TxnOp::EndTxn {
            id,
            producer_id,
            epoch,
            commit,
            markers,
            record,
        }) => Op::EndTxn {
            id: id.clone(),
            producer_id: *producer_id,
            epoch: *epoch,
            commit: *commit,
            markers: markers
                .iter()
                .map(|m| TxnMarker {
                    topic_id: m.topic_id,
                    partition: m.partition,
                    timestamp: m.timestamp,
                })
                .collect(),
            record: record.clone().into(),
        },
        // Format 3 carries every other op.
        other => Op::V3(v3::op_for_record(other)),
    }
}
