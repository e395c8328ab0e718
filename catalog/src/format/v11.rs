//! Catalog format 11, frozen (first written by the build that added S3 access control
//! lists under object ownership): what format 11 adds to format 10, and nothing else.
//!
//! - **Log record payloads**: the same layout as formats 1 to 10, each op an [`Op`]:
//!   variant 0 wraps a format-10 op unchanged (which may itself wrap an older one),
//!   variant 1 is [`Op::SetObjectAcl`].
//! - **Store values**: every encoding is format 8's or older. An object version's or a
//!   multipart upload's access control list is an entry of its metadata map under
//!   [`ACL_KEY`], a name no HTTP header or form field can give, so no value written
//!   before format 11 has one; the entry's value is the S3 gateway's encoding of the
//!   list (`docs/format.md`).
//!
//! Nothing here may change; the next format gets a module of its own.

use serde::{Deserialize, Serialize};

use super::v10;
use crate::txn;

/// The metadata key of an object version's or upload's access control list: `:` is not
/// a character of an HTTP header's name, and the gateway stores user metadata under
/// `x-amz-meta-` and content headers under their own names.
pub const ACL_KEY: &str = ":acl";

/// A log record op of format 11, by variant index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// 0: a format-10 op, encoded as format 10 encodes it.
    V10(Box<v10::Op>),
    /// 1: `txn::S3Op::SetObjectAcl`.
    SetObjectAcl {
        bucket: String,
        key: String,
        version_id: Option<String>,
        acl: Option<String>,
    },
}

/// `txn::Transaction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transaction {
    pub ops: Vec<Op>,
}

/// The header of a format-11 log record payload.
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
            Op::V10(op) => (*op).into(),
            Op::SetObjectAcl {
                bucket,
                key,
                version_id,
                acl,
            } => txn::Op::S3(txn::S3Op::SetObjectAcl {
                bucket,
                key,
                version_id,
                acl,
            }),
        }
    }
}

/// The format-11 form of a live op for a log record, its batches left out (their bytes
/// go to the record's data section).
pub fn op_for_record(op: &txn::Op) -> Op {
    match op {
        txn::Op::S3(txn::S3Op::SetObjectAcl {
            bucket,
            key,
            version_id,
            acl,
        }) => Op::SetObjectAcl {
            bucket: bucket.clone(),
            key: key.clone(),
            version_id: version_id.clone(),
            acl: acl.clone(),
        },
        // Format 10 carries every other op.
        other => Op::V10(Box::new(v10::op_for_record(other))),
    }
}
