//! Catalog format 9, frozen (first written by the build that added function pipelines):
//! what format 9 adds to format 8, and nothing else.
//!
//! - **Log record payloads**: the same layout as formats 1 to 8, each op an [`Op`]:
//!   variant 0 wraps a format-8 op unchanged (which may itself wrap an older one);
//!   variants 1 and 2 are the pipeline ops.
//! - **Store values**: [`PipelineRecord`] in `pipelines` (checkpoint tag 28), keyed by
//!   the pipeline's name, and [`PipelinePosition`] in `pipeline_positions` (tag 29),
//!   keyed by the pipeline's name, a zero byte, the cursor's name, a zero byte and the
//!   partition (u32, big-endian). Every older value keeps its encoding.
//!
//! Nothing here may change; the next format gets a module of its own.

use serde::{Deserialize, Serialize};

use super::{each, v8};
use crate::{model, txn};

/// A log record op of format 9, by variant index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// 0: a format-8 op, encoded as format 8 encodes it.
    V8(Box<v8::Op>),
    /// 1: `txn::PipelineOp::PutPipeline`.
    PutPipeline {
        name: String,
        expected: u64,
        record: Option<PipelineRecord>,
    },
    /// 2: `txn::PipelineOp::Advance`.
    Advance {
        pipeline: String,
        cursor: String,
        partition: u32,
        expected: u64,
        next: u64,
    },
}

/// `model::PipelineStatus`: 0 Draft, 1 InProgress, 2 Ready, 3 Error, 4 Deleting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PipelineStatus {
    Draft,
    InProgress,
    Ready,
    Error,
    Deleting,
}

/// `model::PipelineRevision`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineRevision {
    pub number: u64,
    pub document: String,
    pub created_ms: i64,
}

/// `model::PipelineRecord`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineRecord {
    pub name: String,
    pub changes: u64,
    pub revisions: Vec<PipelineRevision>,
    pub deployed: Option<u64>,
    pub status: PipelineStatus,
    pub reason: String,
    pub status_ms: i64,
}

/// `model::PipelinePosition`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelinePosition {
    pub next: u64,
}

/// `txn::Transaction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transaction {
    pub ops: Vec<Op>,
}

/// The header of a format-9 log record payload.
#[derive(Debug, Serialize, Deserialize)]
pub struct RecordHeader {
    /// The group's transactions, with every batch left empty.
    pub txns: Vec<Transaction>,
    /// The lengths of the batches in the data section, in op order.
    pub batch_lens: Vec<u32>,
}

impl From<PipelineStatus> for model::PipelineStatus {
    fn from(v: PipelineStatus) -> Self {
        match v {
            PipelineStatus::Draft => Self::Draft,
            PipelineStatus::InProgress => Self::InProgress,
            PipelineStatus::Ready => Self::Ready,
            PipelineStatus::Error => Self::Error,
            PipelineStatus::Deleting => Self::Deleting,
        }
    }
}

impl From<model::PipelineStatus> for PipelineStatus {
    fn from(v: model::PipelineStatus) -> Self {
        match v {
            model::PipelineStatus::Draft => Self::Draft,
            model::PipelineStatus::InProgress => Self::InProgress,
            model::PipelineStatus::Ready => Self::Ready,
            model::PipelineStatus::Error => Self::Error,
            model::PipelineStatus::Deleting => Self::Deleting,
        }
    }
}

twin!(PipelineRevision <=> model::PipelineRevision {
    number,
    document,
    created_ms
});

twin!(PipelineRecord <=> model::PipelineRecord {
    name,
    changes,
    revisions: each,
    deployed,
    status,
    reason,
    status_ms
});

twin!(PipelinePosition <=> model::PipelinePosition { next });

impl From<Transaction> for txn::Transaction {
    fn from(v: Transaction) -> Self {
        Self::new(v.ops.into_iter().map(Into::into).collect())
    }
}

/// The live op, every batch empty (the record decoder fills them from the data section).
impl From<Op> for txn::Op {
    fn from(v: Op) -> Self {
        match v {
            Op::V8(op) => (*op).into(),
            Op::PutPipeline {
                name,
                expected,
                record,
            } => txn::Op::Pipeline(txn::PipelineOp::PutPipeline {
                name,
                expected,
                record: record.map(Into::into),
            }),
            Op::Advance {
                pipeline,
                cursor,
                partition,
                expected,
                next,
            } => txn::Op::Pipeline(txn::PipelineOp::Advance {
                pipeline,
                cursor,
                partition,
                expected,
                next,
            }),
        }
    }
}

/// The format-9 form of a live op for a log record, its batches left out (their bytes go
/// to the record's data section).
pub fn op_for_record(op: &txn::Op) -> Op {
    match op {
        txn::Op::Pipeline(txn::PipelineOp::PutPipeline {
            name,
            expected,
            record,
        }) => Op::PutPipeline {
            name: name.clone(),
            expected: *expected,
            record: record.clone().map(Into::into),
        },
        txn::Op::Pipeline(txn::PipelineOp::Advance {
            pipeline,
            cursor,
            partition,
            expected,
            next,
        }) => Op::Advance {
            pipeline: pipeline.clone(),
            cursor: cursor.clone(),
            partition: *partition,
            expected: *expected,
            next: *next,
        },
        // Format 8 carries every other op.
        other => Op::V8(Box::new(v8::op_for_record(other))),
    }
}
