//! Catalog format 10, frozen (first written by the build that made the Iceberg REST
//! catalog writable for users' own tables): what format 10 adds to format 9, and nothing
//! else.
//!
//! - **Log record payloads**: the same layout as formats 1 to 9, each op an [`Op`]:
//!   variant 0 wraps a format-9 op unchanged (which may itself wrap an older one);
//!   variants 1 to 4 are the namespace, view, forget-table and forget-view ops.
//! - **Store values**: [`NamespaceRecord`] in `namespaces` (checkpoint tag 30), keyed by
//!   the namespace (its levels joined by 0x1F), and a view's record in `iceberg_views`
//!   (tag 31), keyed like `other_tables` and encoded as format 3's [`v3::TableRecord`].
//!   Every older value keeps its encoding.
//!
//! Nothing here may change; the next format gets a module of its own.

use serde::{Deserialize, Serialize};

use super::{opt, v3, v9};
use crate::{model, txn};

/// A log record op of format 10, by variant index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// 0: a format-9 op, encoded as format 9 encodes it.
    V9(Box<v9::Op>),
    /// 1: `txn::IcebergOp::PutNamespace`.
    PutNamespace {
        namespace: String,
        expected: u64,
        record: Option<NamespaceRecord>,
    },
    /// 2: `txn::IcebergOp::PutView`.
    PutView {
        namespace: String,
        name: String,
        expected: u64,
        view: Option<v3::TableRecord>,
    },
    /// 3: `txn::IcebergOp::ForgetTable`.
    ForgetTable {
        namespace: String,
        name: String,
        expected: u64,
    },
    /// 4: `txn::IcebergOp::ForgetView`.
    ForgetView {
        namespace: String,
        name: String,
        expected: u64,
    },
}

/// `model::NamespaceRecord`; the properties in key order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceRecord {
    pub generation: u64,
    pub owner: String,
    pub properties: Vec<(String, String)>,
}

/// `txn::Transaction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transaction {
    pub ops: Vec<Op>,
}

/// The header of a format-10 log record payload.
#[derive(Debug, Serialize, Deserialize)]
pub struct RecordHeader {
    /// The group's transactions, with every batch left empty.
    pub txns: Vec<Transaction>,
    /// The lengths of the batches in the data section, in op order.
    pub batch_lens: Vec<u32>,
}

impl From<NamespaceRecord> for model::NamespaceRecord {
    fn from(v: NamespaceRecord) -> Self {
        Self {
            generation: v.generation,
            owner: v.owner,
            properties: v.properties.into_iter().collect(),
        }
    }
}

impl From<model::NamespaceRecord> for NamespaceRecord {
    fn from(v: model::NamespaceRecord) -> Self {
        Self {
            generation: v.generation,
            owner: v.owner,
            properties: v.properties.into_iter().collect(),
        }
    }
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
            Op::V9(op) => (*op).into(),
            Op::PutNamespace {
                namespace,
                expected,
                record,
            } => txn::Op::Iceberg(txn::IcebergOp::PutNamespace {
                namespace,
                expected,
                record: opt(record),
            }),
            Op::PutView {
                namespace,
                name,
                expected,
                view,
            } => txn::Op::Iceberg(txn::IcebergOp::PutView {
                namespace,
                name,
                expected,
                view: opt(view),
            }),
            Op::ForgetTable {
                namespace,
                name,
                expected,
            } => txn::Op::Iceberg(txn::IcebergOp::ForgetTable {
                namespace,
                name,
                expected,
            }),
            Op::ForgetView {
                namespace,
                name,
                expected,
            } => txn::Op::Iceberg(txn::IcebergOp::ForgetView {
                namespace,
                name,
                expected,
            }),
        }
    }
}

/// The format-10 form of a live op for a log record, its batches left out (their bytes
/// go to the record's data section).
pub fn op_for_record(op: &txn::Op) -> Op {
    match op {
        txn::Op::Iceberg(txn::IcebergOp::PutNamespace {
            namespace,
            expected,
            record,
        }) => Op::PutNamespace {
            namespace: namespace.clone(),
            expected: *expected,
            record: opt(record.clone()),
        },
        txn::Op::Iceberg(txn::IcebergOp::PutView {
            namespace,
            name,
            expected,
            view,
        }) => Op::PutView {
            namespace: namespace.clone(),
            name: name.clone(),
            expected: *expected,
            view: opt(view.clone()),
        },
        txn::Op::Iceberg(txn::IcebergOp::ForgetTable {
            namespace,
            name,
            expected,
        }) => Op::ForgetTable {
            namespace: namespace.clone(),
            name: name.clone(),
            expected: *expected,
        },
        txn::Op::Iceberg(txn::IcebergOp::ForgetView {
            namespace,
            name,
            expected,
        }) => Op::ForgetView {
            namespace: namespace.clone(),
            name: name.clone(),
            expected: *expected,
        },
        // Format 9 carries every other op.
        other => Op::V9(Box::new(v9::op_for_record(other))),
    }
}
