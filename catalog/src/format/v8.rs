//! Catalog format 8, frozen (first written by the build that added object lock, per-object
//! owners and encryption at rest): what format 8 adds to format 7, and nothing else.
//!
//! - **Log record payloads**: the same layout as formats 1 to 7, each op an [`Op`]:
//!   variant 0 wraps a format-7 op unchanged (which may itself wrap an older one);
//!   variants 1 and 2 replace format 1's `PutObject` and `CreateUpload` (their records
//!   gained fields); variants 3 to 5 are the object lock ops.
//! - **Store values**: [`ObjectVersion`] in `objects` and `versions`, and
//!   [`UploadRecord`] in `uploads`, replace format 1's encodings of those tables (a store
//!   of an older format is rewritten when it is opened, see `crate::store_open`). Every
//!   other value keeps its encoding.
//!
//! Nothing here may change; the next format gets a module of its own.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{opt, v1, v7};
use crate::{model, txn};

/// A log record op of format 8, by variant index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// 0: a format-7 op, encoded as format 7 encodes it.
    V7(Box<v7::Op>),
    /// 1: `txn::S3Op::PutObject`.
    PutObject {
        bucket: String,
        key: String,
        version: ObjectVersion,
        replace_null: bool,
    },
    /// 2: `txn::S3Op::CreateUpload`.
    CreateUpload(UploadRecord),
    /// 3: `txn::S3Op::ExpectUnlocked`.
    ExpectUnlocked {
        bucket: String,
        key: String,
        version_id: String,
        now_ms: i64,
        bypass_governance: bool,
    },
    /// 4: `txn::S3Op::SetObjectRetention`.
    SetObjectRetention {
        bucket: String,
        key: String,
        version_id: String,
        retention: Option<Retention>,
        now_ms: i64,
        bypass_governance: bool,
    },
    /// 5: `txn::S3Op::SetObjectLegalHold`.
    SetObjectLegalHold {
        bucket: String,
        key: String,
        version_id: String,
        on: bool,
    },
}

/// `model::ObjectVersion`: format 1's fields, then `owner`, `lock`, `encryption`,
/// `part_checksums`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectVersion {
    pub version_id: String,
    pub delete_marker: bool,
    pub size: u64,
    pub etag: String,
    pub last_modified_ms: i64,
    pub data: v1::ObjectData,
    pub metadata: BTreeMap<String, String>,
    pub tags: BTreeMap<String, String>,
    pub checksums: BTreeMap<String, String>,
    pub parts: Vec<u64>,
    pub owner: String,
    pub lock: ObjectLock,
    pub encryption: Option<Encryption>,
    pub part_checksums: Vec<BTreeMap<String, String>>,
}

/// `model::UploadRecord`: format 1's fields, then `lock`, `encryption`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadRecord {
    pub upload_id: String,
    pub bucket: String,
    pub key: String,
    pub owner: String,
    pub initiated_ms: i64,
    pub metadata: BTreeMap<String, String>,
    pub tags: BTreeMap<String, String>,
    pub checksum_algorithm: Option<String>,
    pub checksum_type: Option<String>,
    pub lock: ObjectLock,
    pub encryption: Option<Encryption>,
}

/// `model::ObjectLock`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectLock {
    pub retention: Option<Retention>,
    pub legal_hold: bool,
}

/// `model::Retention`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retention {
    pub mode: LockMode,
    pub until_ms: i64,
}

/// `model::LockMode`: 0 governance, 1 compliance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LockMode {
    Governance,
    Compliance,
}

/// `model::Encryption`: 0 SSE-S3, 1 SSE-C.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Encryption {
    S3 {
        key_id: String,
        wrapped_key: Vec<u8>,
    },
    Customer {
        key_md5: String,
    },
}

/// `txn::Transaction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transaction {
    pub ops: Vec<Op>,
}

/// The header of a format-8 log record payload.
#[derive(Debug, Serialize, Deserialize)]
pub struct RecordHeader {
    /// The group's transactions, with every batch left empty.
    pub txns: Vec<Transaction>,
    /// The lengths of the batches in the data section, in op order.
    pub batch_lens: Vec<u32>,
}

// Format 11 keeps these encodings and puts an ACL in the metadata map under
// `v11::ACL_KEY`, a name no header or form field can give (before format 11 no value
// has it, so every older value reads as having no ACL).
impl From<ObjectVersion> for model::ObjectVersion {
    fn from(v: ObjectVersion) -> Self {
        let ObjectVersion {
            version_id,
            delete_marker,
            size,
            etag,
            last_modified_ms,
            data,
            mut metadata,
            tags,
            checksums,
            parts,
            owner,
            lock,
            encryption,
            part_checksums,
        } = v;
        let acl = metadata.remove(super::v11::ACL_KEY);
        Self {
            version_id,
            delete_marker,
            size,
            etag,
            last_modified_ms,
            data: data.into(),
            metadata,
            tags,
            checksums,
            parts,
            owner,
            lock: lock.into(),
            encryption: opt(encryption),
            part_checksums,
            acl,
        }
    }
}
impl From<model::ObjectVersion> for ObjectVersion {
    fn from(v: model::ObjectVersion) -> Self {
        let model::ObjectVersion {
            version_id,
            delete_marker,
            size,
            etag,
            last_modified_ms,
            data,
            mut metadata,
            tags,
            checksums,
            parts,
            owner,
            lock,
            encryption,
            part_checksums,
            acl,
        } = v;
        if let Some(acl) = acl {
            metadata.insert(super::v11::ACL_KEY.to_owned(), acl);
        }
        Self {
            version_id,
            delete_marker,
            size,
            etag,
            last_modified_ms,
            data: data.into(),
            metadata,
            tags,
            checksums,
            parts,
            owner,
            lock: lock.into(),
            encryption: opt(encryption),
            part_checksums,
        }
    }
}
impl From<UploadRecord> for model::UploadRecord {
    fn from(v: UploadRecord) -> Self {
        let UploadRecord {
            upload_id,
            bucket,
            key,
            owner,
            initiated_ms,
            mut metadata,
            tags,
            checksum_algorithm,
            checksum_type,
            lock,
            encryption,
        } = v;
        let acl = metadata.remove(super::v11::ACL_KEY);
        Self {
            upload_id,
            bucket,
            key,
            owner,
            initiated_ms,
            metadata,
            tags,
            checksum_algorithm,
            checksum_type,
            lock: lock.into(),
            encryption: opt(encryption),
            acl,
        }
    }
}
impl From<model::UploadRecord> for UploadRecord {
    fn from(v: model::UploadRecord) -> Self {
        let model::UploadRecord {
            upload_id,
            bucket,
            key,
            owner,
            initiated_ms,
            mut metadata,
            tags,
            checksum_algorithm,
            checksum_type,
            lock,
            encryption,
            acl,
        } = v;
        if let Some(acl) = acl {
            metadata.insert(super::v11::ACL_KEY.to_owned(), acl);
        }
        Self {
            upload_id,
            bucket,
            key,
            owner,
            initiated_ms,
            metadata,
            tags,
            checksum_algorithm,
            checksum_type,
            lock: lock.into(),
            encryption: opt(encryption),
        }
    }
}
twin!(ObjectLock <=> model::ObjectLock { retention: opt, legal_hold });
twin!(Retention <=> model::Retention { mode, until_ms });

impl From<LockMode> for model::LockMode {
    fn from(v: LockMode) -> Self {
        match v {
            LockMode::Governance => Self::Governance,
            LockMode::Compliance => Self::Compliance,
        }
    }
}

impl From<model::LockMode> for LockMode {
    fn from(v: model::LockMode) -> Self {
        match v {
            model::LockMode::Governance => Self::Governance,
            model::LockMode::Compliance => Self::Compliance,
        }
    }
}

impl From<Encryption> for model::Encryption {
    fn from(v: Encryption) -> Self {
        match v {
            Encryption::S3 {
                key_id,
                wrapped_key,
            } => Self::S3 {
                key_id,
                wrapped_key,
            },
            Encryption::Customer { key_md5 } => Self::Customer { key_md5 },
        }
    }
}

impl From<model::Encryption> for Encryption {
    fn from(v: model::Encryption) -> Self {
        match v {
            model::Encryption::S3 {
                key_id,
                wrapped_key,
            } => Self::S3 {
                key_id,
                wrapped_key,
            },
            model::Encryption::Customer { key_md5 } => Self::Customer { key_md5 },
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
            Op::V7(op) => (*op).into(),
            Op::PutObject {
                bucket,
                key,
                version,
                replace_null,
            } => txn::Op::S3(txn::S3Op::PutObject {
                bucket,
                key,
                version: version.into(),
                replace_null,
            }),
            Op::CreateUpload(u) => txn::Op::S3(txn::S3Op::CreateUpload(u.into())),
            Op::ExpectUnlocked {
                bucket,
                key,
                version_id,
                now_ms,
                bypass_governance,
            } => txn::Op::S3(txn::S3Op::ExpectUnlocked {
                bucket,
                key,
                version_id,
                now_ms,
                bypass_governance,
            }),
            Op::SetObjectRetention {
                bucket,
                key,
                version_id,
                retention,
                now_ms,
                bypass_governance,
            } => txn::Op::S3(txn::S3Op::SetObjectRetention {
                bucket,
                key,
                version_id,
                retention: retention.map(Into::into),
                now_ms,
                bypass_governance,
            }),
            Op::SetObjectLegalHold {
                bucket,
                key,
                version_id,
                on,
            } => txn::Op::S3(txn::S3Op::SetObjectLegalHold {
                bucket,
                key,
                version_id,
                on,
            }),
        }
    }
}

/// The format-8 form of a live op for a log record, its batches left out (their bytes go
/// to the record's data section).
pub fn op_for_record(op: &txn::Op) -> Op {
    match op {
        txn::Op::S3(txn::S3Op::PutObject {
            bucket,
            key,
            version,
            replace_null,
        }) => Op::PutObject {
            bucket: bucket.clone(),
            key: key.clone(),
            version: version.clone().into(),
            replace_null: *replace_null,
        },
        txn::Op::S3(txn::S3Op::CreateUpload(u)) => Op::CreateUpload(u.clone().into()),
        txn::Op::S3(txn::S3Op::ExpectUnlocked {
            bucket,
            key,
            version_id,
            now_ms,
            bypass_governance,
        }) => Op::ExpectUnlocked {
            bucket: bucket.clone(),
            key: key.clone(),
            version_id: version_id.clone(),
            now_ms: *now_ms,
            bypass_governance: *bypass_governance,
        },
        txn::Op::S3(txn::S3Op::SetObjectRetention {
            bucket,
            key,
            version_id,
            retention,
            now_ms,
            bypass_governance,
        }) => Op::SetObjectRetention {
            bucket: bucket.clone(),
            key: key.clone(),
            version_id: version_id.clone(),
            retention: retention.map(Into::into),
            now_ms: *now_ms,
            bypass_governance: *bypass_governance,
        },
        txn::Op::S3(txn::S3Op::SetObjectLegalHold {
            bucket,
            key,
            version_id,
            on,
        }) => Op::SetObjectLegalHold {
            bucket: bucket.clone(),
            key: key.clone(),
            version_id: version_id.clone(),
            on: *on,
        },
        // Format 7 carries every other op.
        other => Op::V7(Box::new(v7::op_for_record(other))),
    }
}
