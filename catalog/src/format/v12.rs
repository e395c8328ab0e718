//! Catalog format 12, frozen (first written by the build that added the schema
//! registry): what format 12 adds to format 11, and nothing else.
//!
//! - **Log record payloads**: the same layout as formats 1 to 11, each op an [`Op`]:
//!   variant 0 wraps a format-11 op unchanged (which may itself wrap an older one),
//!   variant 1 is [`Op::PutSchema`], variant 2 [`Op::PutSubject`].
//! - **Store values**: [`SchemaRecord`] in `schemas` (checkpoint tag 32), keyed by the
//!   schema id (big-endian u32); [`SubjectRecord`] in `schema_subjects` (tag 33), keyed
//!   by the subject's name, the empty key holding the registry's own settings; in
//!   `schema_fingerprints` (tag 34), a schema's fingerprint -> its id (4 bytes,
//!   big-endian, not postcard); the `meta` counter `schema_id`, the highest id bound.
//!   Every older value keeps its encoding.
//!
//! Nothing here may change; the next format gets a module of its own.

use serde::{Deserialize, Serialize};

use super::{each, opt, v11};
use crate::{model, txn};

/// A log record op of format 12, by variant index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// 0: a format-11 op, encoded as format 11 encodes it.
    V11(Box<v11::Op>),
    /// 1: `txn::SchemaOp::PutSchema`.
    PutSchema { id: u32, record: SchemaRecord },
    /// 2: `txn::SchemaOp::PutSubject`.
    PutSubject {
        subject: String,
        expected: u64,
        record: Option<SubjectRecord>,
    },
}

/// `model::SchemaRecord`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaRecord {
    pub schema_type: String,
    pub schema: String,
    pub references: Vec<SchemaReference>,
    pub fingerprint: Vec<u8>,
}

/// `model::SchemaReference`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaReference {
    pub name: String,
    pub subject: String,
    pub version: u32,
}

/// `model::SubjectRecord`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectRecord {
    pub changes: u64,
    pub versions: Vec<SubjectVersion>,
    pub compatibility: Option<String>,
    pub mode: Option<String>,
}

/// `model::SubjectVersion`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectVersion {
    pub version: u32,
    pub id: u32,
    pub deleted: bool,
}

twin!(SchemaRecord <=> model::SchemaRecord { schema_type, schema, references: each, fingerprint });
twin!(SchemaReference <=> model::SchemaReference { name, subject, version });
twin!(SubjectRecord <=> model::SubjectRecord { changes, versions: each, compatibility, mode });
twin!(SubjectVersion <=> model::SubjectVersion { version, id, deleted });

/// `txn::Transaction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transaction {
    pub ops: Vec<Op>,
}

/// The header of a format-12 log record payload.
#[derive(Debug, Serialize, Deserialize)]
pub struct RecordHeader {
    /// The group's transactions, with every batch left empty.
    pub txns: Vec<Transaction>,
    /// The lengths of the batches in the data section, in op order.
    pub batch_lens: Vec<u32>,
}

impl From<Transaction> for txn::Transaction {
    fn from(v: Transaction) -> Self {
        Self::new(v.ops.into_iter().map(Into::into).collect())
    }
}

/// The live op, every batch empty (the record decoder fills them from the data section).
impl From<Op> for txn::Op {
    fn from(v: Op) -> Self {
        match v {
            Op::V11(op) => (*op).into(),
            Op::PutSchema { id, record } => txn::Op::Schema(txn::SchemaOp::PutSchema {
                id,
                record: record.into(),
            }),
            Op::PutSubject {
                subject,
                expected,
                record,
            } => txn::Op::Schema(txn::SchemaOp::PutSubject {
                subject,
                expected,
                record: opt(record),
            }),
        }
    }
}

/// The format-12 form of a live op for a log record, its batches left out (their bytes
/// go to the record's data section).
pub fn op_for_record(op: &txn::Op) -> Op {
    match op {
        txn::Op::Schema(txn::SchemaOp::PutSchema { id, record }) => Op::PutSchema {
            id: *id,
            record: record.clone().into(),
        },
        txn::Op::Schema(txn::SchemaOp::PutSubject {
            subject,
            expected,
            record,
        }) => Op::PutSubject {
            subject: subject.clone(),
            expected: *expected,
            record: record.clone().map(Into::into),
        },
        // Format 11 carries every other op.
        other => Op::V11(Box::new(v11::op_for_record(other))),
    }
}
