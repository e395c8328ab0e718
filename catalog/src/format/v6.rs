//! Catalog format 6, frozen (first written by the build that added users, policies and
//! bucket policies): what format 6 adds to format 5, and nothing else.
//!
//! - **Log record payloads**: the same layout as formats 1 to 5, each op an [`Op`]:
//!   variant 0 wraps a format-5 op unchanged (which may itself wrap an older one),
//!   variants 1 to 3 are [`Op::PutUser`], [`Op::PutPolicy`] and [`Op::PutBucketPolicy`].
//! - **Store values**: [`UserRecord`] in `users` (checkpoint tag 24), [`PolicyRecord`]
//!   in `policies` (tag 25) and [`BucketPolicy`] in `bucket_policies` (tag 26), each
//!   keyed by its name's UTF-8 bytes. Every older value keeps its encoding.
//!
//! Nothing here may change; the next format gets a module of its own.

use serde::{Deserialize, Serialize};

use super::{each, opt, v5};
use crate::{model, txn};

/// A log record op of format 6, by variant index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// 0: a format-5 op, encoded as format 5 encodes it.
    V5(v5::Op),
    /// 1: `txn::IamOp::PutUser`.
    PutUser {
        name: String,
        record: Option<UserRecord>,
    },
    /// 2: `txn::IamOp::PutPolicy`.
    PutPolicy {
        name: String,
        record: Option<PolicyRecord>,
    },
    /// 3: `txn::S3Op::PutBucketPolicy`.
    PutBucketPolicy {
        bucket: String,
        document: Option<String>,
    },
}

/// `model::ScramMechanism`: 0 SHA-256, 1 SHA-512.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScramMechanism {
    Sha256,
    Sha512,
}

/// `model::ScramCredential`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramCredential {
    pub mechanism: ScramMechanism,
    pub salt: Vec<u8>,
    pub iterations: u32,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

/// `model::UserRecord`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserRecord {
    pub name: String,
    pub s3_secret: Option<String>,
    pub scram: Vec<ScramCredential>,
    pub from_config: bool,
}

/// `model::PolicyRecord`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyRecord {
    pub name: String,
    pub document: String,
    pub attached: Vec<String>,
}

/// `model::BucketPolicy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketPolicy {
    pub bucket: String,
    pub document: String,
}

/// `txn::Transaction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transaction {
    pub ops: Vec<Op>,
}

/// The header of a format-6 log record payload.
#[derive(Debug, Serialize, Deserialize)]
pub struct RecordHeader {
    /// The group's transactions, with every batch left empty.
    pub txns: Vec<Transaction>,
    /// The lengths of the batches in the data section, in op order.
    pub batch_lens: Vec<u32>,
}

impl From<ScramMechanism> for model::ScramMechanism {
    fn from(v: ScramMechanism) -> Self {
        match v {
            ScramMechanism::Sha256 => Self::Sha256,
            ScramMechanism::Sha512 => Self::Sha512,
        }
    }
}

impl From<model::ScramMechanism> for ScramMechanism {
    fn from(v: model::ScramMechanism) -> Self {
        match v {
            model::ScramMechanism::Sha256 => Self::Sha256,
            model::ScramMechanism::Sha512 => Self::Sha512,
        }
    }
}

twin!(ScramCredential <=> model::ScramCredential {
    mechanism,
    salt,
    iterations,
    stored_key,
    server_key
});
twin!(UserRecord <=> model::UserRecord {
    name,
    s3_secret,
    scram: each,
    from_config
});
twin!(PolicyRecord <=> model::PolicyRecord { name, document, attached });
twin!(BucketPolicy <=> model::BucketPolicy { bucket, document });

impl From<Transaction> for txn::Transaction {
    fn from(v: Transaction) -> Self {
        Self::new(v.ops.into_iter().map(Into::into).collect())
    }
}

/// The live op, every batch empty (the record decoder fills them from the data section).
impl From<Op> for txn::Op {
    fn from(v: Op) -> Self {
        match v {
            Op::V5(op) => op.into(),
            Op::PutUser { name, record } => txn::Op::Iam(txn::IamOp::PutUser {
                name,
                record: opt(record),
            }),
            Op::PutPolicy { name, record } => txn::Op::Iam(txn::IamOp::PutPolicy {
                name,
                record: opt(record),
            }),
            Op::PutBucketPolicy { bucket, document } => {
                txn::Op::S3(txn::S3Op::PutBucketPolicy { bucket, document })
            }
        }
    }
}

/// The format-6 form of a live op for a log record, its batches left out (their bytes go
/// to the record's data section).
pub fn op_for_record(op: &txn::Op) -> Op {
    match op {
        txn::Op::Iam(txn::IamOp::PutUser { name, record }) => Op::PutUser {
            name: name.clone(),
            record: opt(record.clone()),
        },
        txn::Op::Iam(txn::IamOp::PutPolicy { name, record }) => Op::PutPolicy {
            name: name.clone(),
            record: opt(record.clone()),
        },
        txn::Op::S3(txn::S3Op::PutBucketPolicy { bucket, document }) => Op::PutBucketPolicy {
            bucket: bucket.clone(),
            document: document.clone(),
        },
        // Format 5 carries every other op.
        other => Op::V5(v5::op_for_record(other)),
    }
}
