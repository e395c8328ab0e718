//! Catalog format 3, frozen (first written by the build that added blob expansion): what
//! format 3 adds to format 2, and nothing else.
//!
//! - **Log record payloads**: the same layout as formats 1 and 2, each op a [`Op`]:
//!   variant 0 wraps a format-2 op unchanged (which may itself wrap a format-1 op), the
//!   later variants are the ops format 3 added. They carry no batches, so the data section
//!   is what format 2 puts there.
//! - **Store values**: [`Expansion`] in the `expansions` table (checkpoint tag 17) and
//!   [`TableRecord`] in the `other_tables` table (tag 18), which format-3 stores add.
//!   Every older value keeps its encoding.
//!
//! Nothing here may change; the next format gets a module of its own.

use serde::{Deserialize, Serialize};

use super::{each, opt, v2};
use crate::{model, txn};

/// A log record op of format 3, by variant index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// 0: a format-2 op, encoded as format 2 encodes it.
    V2(v2::Op),
    /// 1: `txn::ExpansionOp::PutExpansion`.
    PutExpansion {
        topic: String,
        source: String,
        expected: u64,
        expansion: Option<Expansion>,
    },
    /// 2: `txn::IcebergOp::PutTable`.
    PutTable {
        namespace: String,
        name: String,
        expected: u64,
        table: Option<TableRecord>,
    },
}

/// `model::Expansion`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expansion {
    pub topic_id: u128,
    pub changes: u64,
    pub versions: Vec<ExpansionVersion>,
}

/// `model::ExpansionVersion`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpansionVersion {
    pub from: Vec<u64>,
    pub spec: Option<ExpansionSpec>,
    pub backfill: Vec<u64>,
}

/// `model::ExpansionSpec`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpansionSpec {
    pub namespace: String,
    pub table: String,
    pub format: String,
    pub schema: String,
    pub flatten_path: bool,
    pub flatten_delimiter: String,
    pub copy_source_column: bool,
    pub missing_values_output: bool,
    pub excess_values_output: bool,
}

/// `model::TableRecord`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableRecord {
    pub generation: u64,
    pub bucket: String,
    pub prefix: String,
    pub metadata_location: String,
}

/// `txn::Transaction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transaction {
    pub ops: Vec<Op>,
}

/// The header of a format-3 log record payload.
#[derive(Debug, Serialize, Deserialize)]
pub struct RecordHeader {
    /// The group's transactions, with every batch left empty.
    pub txns: Vec<Transaction>,
    /// The lengths of the batches in the data section, in op order.
    pub batch_lens: Vec<u32>,
}

twin!(ExpansionSpec <=> model::ExpansionSpec {
    namespace,
    table,
    format,
    schema,
    flatten_path,
    flatten_delimiter,
    copy_source_column,
    missing_values_output,
    excess_values_output,
});
twin!(TableRecord <=> model::TableRecord {
    generation,
    bucket,
    prefix,
    metadata_location
});

twin!(ExpansionVersion <=> model::ExpansionVersion {
    from,
    spec: opt,
    backfill
});
twin!(Expansion <=> model::Expansion {
    topic_id,
    changes,
    versions: each
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
            Op::V2(op) => op.into(),
            Op::PutExpansion {
                topic,
                source,
                expected,
                expansion,
            } => txn::Op::Expansion(txn::ExpansionOp::PutExpansion {
                topic,
                source,
                expected,
                expansion: opt(expansion),
            }),
            Op::PutTable {
                namespace,
                name,
                expected,
                table,
            } => txn::Op::Iceberg(txn::IcebergOp::PutTable {
                namespace,
                name,
                expected,
                table: opt(table),
            }),
        }
    }
}

/// The format-3 form of a live op for a log record, its batches left out (their bytes go
/// to the record's data section).
pub fn op_for_record(op: &txn::Op) -> Op {
    match op {
        txn::Op::Expansion(txn::ExpansionOp::PutExpansion {
            topic,
            source,
            expected,
            expansion,
        }) => Op::PutExpansion {
            topic: topic.clone(),
            source: source.clone(),
            expected: *expected,
            expansion: opt(expansion.clone()),
        },
        txn::Op::Iceberg(txn::IcebergOp::PutTable {
            namespace,
            name,
            expected,
            table,
        }) => Op::PutTable {
            namespace: namespace.clone(),
            name: name.clone(),
            expected: *expected,
            table: opt(table.clone()),
        },
        // Format 2 carries every other op.
        other => Op::V2(v2::op_for_record(other)),
    }
}
