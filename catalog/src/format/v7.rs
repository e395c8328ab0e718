//! Catalog format 7, frozen (first written by the build that added bucket lifecycle and
//! CORS configurations): what format 7 adds to format 6, and nothing else.
//!
//! - **Log record payloads**: the same layout as formats 1 to 6, each op an [`Op`]:
//!   variant 0 wraps a format-6 op unchanged (which may itself wrap an older one),
//!   variant 1 is [`Op::PutBucketConfig`].
//! - **Store values**: [`BucketConfig`] in `bucket_configs` (checkpoint tag 27), keyed by
//!   the bucket's name, a zero byte and the [`BucketConfigKind`]'s variant index. Every
//!   older value keeps its encoding.
//!
//! Nothing here may change; the next format gets a module of its own.

use serde::{Deserialize, Serialize};

use super::v6;
use crate::{model, txn};

/// A log record op of format 7, by variant index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// 0: a format-6 op, encoded as format 6 encodes it (boxing changes nothing in
    /// postcard's bytes).
    V6(Box<v6::Op>),
    /// 1: `txn::S3Op::PutBucketConfig`.
    PutBucketConfig {
        bucket: String,
        kind: BucketConfigKind,
        document: Option<String>,
    },
}

/// `model::BucketConfigKind`: 0 lifecycle, 1 CORS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BucketConfigKind {
    Lifecycle,
    Cors,
}

/// `model::BucketConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketConfig {
    pub bucket: String,
    pub kind: BucketConfigKind,
    pub document: String,
}

/// `txn::Transaction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transaction {
    pub ops: Vec<Op>,
}

/// The header of a format-7 log record payload.
#[derive(Debug, Serialize, Deserialize)]
pub struct RecordHeader {
    /// The group's transactions, with every batch left empty.
    pub txns: Vec<Transaction>,
    /// The lengths of the batches in the data section, in op order.
    pub batch_lens: Vec<u32>,
}

impl From<BucketConfigKind> for model::BucketConfigKind {
    fn from(v: BucketConfigKind) -> Self {
        match v {
            BucketConfigKind::Lifecycle => Self::Lifecycle,
            BucketConfigKind::Cors => Self::Cors,
        }
    }
}

impl From<model::BucketConfigKind> for BucketConfigKind {
    fn from(v: model::BucketConfigKind) -> Self {
        match v {
            model::BucketConfigKind::Lifecycle => Self::Lifecycle,
            model::BucketConfigKind::Cors => Self::Cors,
        }
    }
}

twin!(BucketConfig <=> model::BucketConfig {
    bucket,
    kind,
    document
});

impl From<Transaction> for txn::Transaction {
    fn from(v: Transaction) -> Self {
        Self::new(v.ops.into_iter().map(Into::into).collect())
    }
}

/// The live op, every batch empty (the record decoder fills them from the data section).
impl From<Op> for txn::Op {
    fn from(v: Op) -> Self {
        match v {
            Op::V6(op) => (*op).into(),
            Op::PutBucketConfig {
                bucket,
                kind,
                document,
            } => txn::Op::S3(txn::S3Op::PutBucketConfig {
                bucket,
                kind: kind.into(),
                document,
            }),
        }
    }
}

/// The format-7 form of a live op for a log record, its batches left out (their bytes go
/// to the record's data section).
pub fn op_for_record(op: &txn::Op) -> Op {
    match op {
        txn::Op::S3(txn::S3Op::PutBucketConfig {
            bucket,
            kind,
            document,
        }) => Op::PutBucketConfig {
            bucket: bucket.clone(),
            kind: (*kind).into(),
            document: document.clone(),
        },
        // Format 6 carries every other op.
        other => Op::V6(Box::new(v6::op_for_record(other))),
    }
}
