//! Catalog format 1, frozen: the types whose postcard encoding the builds up to 2026-11-30
//! wrote into log records, the store's values and checkpoints (and that this build still
//! writes while format 1 is current). Nothing here may change: a field added, removed,
//! reordered or retyped, or a variant moved, changes what bytes already on users' disks
//! mean. The next format gets a module of its own, with conversions from this one.
//!
//! The live types in `crate::model` and `crate::txn` convert to and from these. The
//! conversions name every field (no `..`), so a field added to a live type does not
//! compile until someone decides how the formats carry it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{each, opt};
use crate::{model, txn};

/// A blob's name (`storage::BlobId` as format 1 stores it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobId(pub u128);

/// `storage::BlobMeta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobMeta {
    /// Its id.
    pub id: BlobId,
    /// Its length in bytes.
    pub len: u64,
}

/// `model::BucketRecord`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketRecord {
    pub name: String,
    pub owner: String,
    pub created_ms: i64,
    pub versioning: Versioning,
    pub tags: BTreeMap<String, String>,
    pub settings: BTreeMap<String, Vec<u8>>,
}

/// `model::Versioning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Versioning {
    Unversioned,
    Enabled,
    Suspended,
}

/// `model::ObjectData`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ObjectData {
    Inline(Vec<u8>),
    Blobs(Vec<BlobMeta>),
}

/// `model::ObjectVersion`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectVersion {
    pub version_id: String,
    pub delete_marker: bool,
    pub size: u64,
    pub etag: String,
    pub last_modified_ms: i64,
    pub data: ObjectData,
    pub metadata: BTreeMap<String, String>,
    pub tags: BTreeMap<String, String>,
    pub checksums: BTreeMap<String, String>,
    pub parts: Vec<u64>,
}

/// `model::UploadRecord`.
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
}

/// `model::PartRecord`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartRecord {
    pub part_number: u32,
    pub etag: String,
    pub size: u64,
    pub last_modified_ms: i64,
    pub blob: BlobMeta,
    pub checksums: BTreeMap<String, String>,
}

/// `model::TopicRecord`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicRecord {
    pub name: String,
    pub id: u128,
    pub partitions: u32,
    pub configs: BTreeMap<String, String>,
    pub created_ms: i64,
}

/// `model::PartitionState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionState {
    pub next_offset: u64,
    pub log_start_offset: u64,
    pub bytes: u64,
}

/// `model::ProducerState`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerState {
    pub epoch: i16,
    pub recent: Vec<(i32, i32, u64)>,
}

/// `model::OffsetRecord`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffsetRecord {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
    pub commit_ms: i64,
}

/// `model::GroupRecord` (its `state` is the broker's own versioned encoding).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRecord {
    pub name: String,
    pub state: Vec<u8>,
}

/// `model::TopicTable`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicTable {
    pub topic_id: u128,
    pub generation: u64,
    pub bucket: String,
    pub prefix: String,
    pub metadata_location: String,
    pub tabled: Vec<u64>,
    pub start: Vec<u64>,
}

/// `txn::ProducerBatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerBatch {
    pub producer_id: i64,
    pub epoch: i16,
    pub first_sequence: i32,
    pub last_sequence: i32,
}

/// `txn::Op`, by variant index (postcard stores the index; the order is the format).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// 0
    CreateBucket(BucketRecord),
    /// 1: an unconditional bucket replace, superseded by `ReplaceBucket`.
    UpdateBucket(BucketRecord),
    /// 2
    DeleteBucket { name: String },
    /// 3
    PutObject {
        bucket: String,
        key: String,
        version: ObjectVersion,
        replace_null: bool,
    },
    /// 4
    SetObjectTags {
        bucket: String,
        key: String,
        version_id: Option<String>,
        tags: BTreeMap<String, String>,
    },
    /// 5
    DeleteObjectVersion {
        bucket: String,
        key: String,
        version_id: String,
    },
    /// 6
    ExpectEtag {
        bucket: String,
        key: String,
        etag: Option<String>,
    },
    /// 7
    CreateTopic(TopicRecord),
    /// 8
    UpdateTopic(TopicRecord),
    /// 9
    DeleteTopic { name: String },
    /// 10: `batch` is empty in log records (the bytes are in the record's data section).
    Append {
        topic_id: u128,
        partition: u32,
        offset_count: u32,
        max_timestamp: i64,
        batch: bytes::Bytes,
        producer: Option<ProducerBatch>,
    },
    /// 11
    TruncateBefore {
        topic_id: u128,
        partition: u32,
        offset: u64,
    },
    /// 12
    CommitOffset {
        group: String,
        topic: String,
        partition: u32,
        offset: OffsetRecord,
    },
    /// 13
    DeleteOffset {
        group: String,
        topic: String,
        partition: u32,
    },
    /// 14
    PutGroup(GroupRecord),
    /// 15
    DeleteGroup { name: String },
    /// 16
    CreateUpload(UploadRecord),
    /// 17
    PutPart {
        bucket: String,
        key: String,
        upload_id: String,
        part: PartRecord,
    },
    /// 18
    DeleteUpload {
        bucket: String,
        key: String,
        upload_id: String,
        keep: Vec<BlobMeta>,
    },
    /// 19
    AllocateProducerId,
    /// 20
    PutTopicTable {
        topic: String,
        expected: u64,
        table: TopicTable,
    },
    /// 21
    ReplaceBucket {
        expected: BucketRecord,
        record: BucketRecord,
    },
}

/// `txn::Transaction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transaction {
    pub ops: Vec<Op>,
}

/// The header of a log record payload: `[batch data][postcard Header][u32 LE length]`.
#[derive(Debug, Serialize, Deserialize)]
pub struct RecordHeader {
    /// The group's transactions, with every `Append` batch left empty.
    pub txns: Vec<Transaction>,
    /// The lengths of the appended batches in the data section, in op order.
    pub batch_lens: Vec<u32>,
}

/// The checkpoint pointer (`meta/checkpoint` on every drive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointPointer {
    pub lsn: u64,
    pub blob: BlobMeta,
}

twin!(BucketRecord <=> model::BucketRecord { name, owner, created_ms, versioning, tags, settings });
// `ObjectVersion` and `UploadRecord` gained fields in format 8 (owner, object lock,
// encryption): a format-1 value reads as having none of them, and the frozen writers of
// formats 1 to 7 (which only the golden tests still call) leave them out, as those
// builds did.
impl From<UploadRecord> for model::UploadRecord {
    fn from(v: UploadRecord) -> Self {
        let UploadRecord {
            upload_id,
            bucket,
            key,
            owner,
            initiated_ms,
            metadata,
            tags,
            checksum_algorithm,
            checksum_type,
        } = v;
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
            lock: model::ObjectLock::default(),
            encryption: None,
            acl: None,
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
            metadata,
            tags,
            checksum_algorithm,
            checksum_type,
            lock: _,
            encryption: _,
            acl: _,
        } = v;
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
        }
    }
}
twin!(PartRecord <=> model::PartRecord { part_number, etag, size, last_modified_ms, blob, checksums });
twin!(TopicRecord <=> model::TopicRecord { name, id, partitions, configs, created_ms });
twin!(PartitionState <=> model::PartitionState { next_offset, log_start_offset, bytes });
twin!(ProducerState <=> model::ProducerState { epoch, recent });
twin!(OffsetRecord <=> model::OffsetRecord { offset, leader_epoch, metadata, commit_ms });
twin!(GroupRecord <=> model::GroupRecord { name, state });
twin!(TopicTable <=> model::TopicTable {
    topic_id, generation, bucket, prefix, metadata_location, tabled, start
});
twin!(ProducerBatch <=> txn::ProducerBatch { producer_id, epoch, first_sequence, last_sequence });
impl From<ObjectVersion> for model::ObjectVersion {
    fn from(v: ObjectVersion) -> Self {
        let ObjectVersion {
            version_id,
            delete_marker,
            size,
            etag,
            last_modified_ms,
            data,
            metadata,
            tags,
            checksums,
            parts,
        } = v;
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
            owner: String::new(),
            lock: model::ObjectLock::default(),
            encryption: None,
            part_checksums: Vec::new(),
            acl: None,
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
            metadata,
            tags,
            checksums,
            parts,
            owner: _,
            lock: _,
            encryption: _,
            part_checksums: _,
            acl: _,
        } = v;
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
        }
    }
}

impl From<BlobMeta> for storage::BlobMeta {
    fn from(v: BlobMeta) -> Self {
        Self {
            id: storage::BlobId(v.id.0),
            len: v.len,
        }
    }
}

impl From<storage::BlobMeta> for BlobMeta {
    fn from(v: storage::BlobMeta) -> Self {
        let storage::BlobMeta { id, len } = v;
        Self {
            id: BlobId(id.0),
            len,
        }
    }
}

impl From<Versioning> for model::Versioning {
    fn from(v: Versioning) -> Self {
        match v {
            Versioning::Unversioned => Self::Unversioned,
            Versioning::Enabled => Self::Enabled,
            Versioning::Suspended => Self::Suspended,
        }
    }
}

impl From<model::Versioning> for Versioning {
    fn from(v: model::Versioning) -> Self {
        match v {
            model::Versioning::Unversioned => Self::Unversioned,
            model::Versioning::Enabled => Self::Enabled,
            model::Versioning::Suspended => Self::Suspended,
        }
    }
}

impl From<ObjectData> for model::ObjectData {
    fn from(v: ObjectData) -> Self {
        match v {
            ObjectData::Inline(d) => Self::Inline(d),
            ObjectData::Blobs(b) => Self::Blobs(each(b)),
        }
    }
}

impl From<model::ObjectData> for ObjectData {
    fn from(v: model::ObjectData) -> Self {
        match v {
            model::ObjectData::Inline(d) => Self::Inline(d),
            model::ObjectData::Blobs(b) => Self::Blobs(each(b)),
        }
    }
}

impl From<CheckpointPointer> for crate::model::CheckpointPointer {
    fn from(v: CheckpointPointer) -> Self {
        Self {
            lsn: v.lsn,
            blob: v.blob.into(),
        }
    }
}

impl From<crate::model::CheckpointPointer> for CheckpointPointer {
    fn from(v: crate::model::CheckpointPointer) -> Self {
        let crate::model::CheckpointPointer { lsn, blob } = v;
        Self {
            lsn,
            blob: blob.into(),
        }
    }
}

impl From<Transaction> for txn::Transaction {
    fn from(v: Transaction) -> Self {
        Self::new(each(v.ops))
    }
}

impl From<Op> for txn::Op {
    fn from(v: Op) -> Self {
        match v {
            Op::CreateBucket(b) => txn::Op::S3(txn::S3Op::CreateBucket(b.into())),
            // Replay applies ops without checking them, and a replace applies as a plain
            // put of its record, so the record can stand in for the state it replaced.
            Op::UpdateBucket(b) => {
                let record: model::BucketRecord = b.into();
                txn::Op::S3(txn::S3Op::ReplaceBucket {
                    expected: record.clone(),
                    record,
                })
            }
            Op::DeleteBucket { name } => txn::Op::S3(txn::S3Op::DeleteBucket { name }),
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
            Op::SetObjectTags {
                bucket,
                key,
                version_id,
                tags,
            } => txn::Op::S3(txn::S3Op::SetObjectTags {
                bucket,
                key,
                version_id,
                tags,
            }),
            Op::DeleteObjectVersion {
                bucket,
                key,
                version_id,
            } => txn::Op::S3(txn::S3Op::DeleteObjectVersion {
                bucket,
                key,
                version_id,
            }),
            Op::ExpectEtag { bucket, key, etag } => {
                txn::Op::S3(txn::S3Op::ExpectEtag { bucket, key, etag })
            }
            Op::CreateTopic(t) => txn::Op::Kafka(txn::KafkaOp::CreateTopic(t.into())),
            Op::UpdateTopic(t) => txn::Op::Kafka(txn::KafkaOp::UpdateTopic(t.into())),
            Op::DeleteTopic { name } => txn::Op::Kafka(txn::KafkaOp::DeleteTopic { name }),
            Op::Append {
                topic_id,
                partition,
                offset_count,
                max_timestamp,
                batch,
                producer,
            } => txn::Op::Kafka(txn::KafkaOp::Append {
                topic_id,
                partition,
                offset_count,
                max_timestamp,
                batch,
                producer: opt(producer),
                transactional_id: None,
            }),
            Op::TruncateBefore {
                topic_id,
                partition,
                offset,
            } => txn::Op::Kafka(txn::KafkaOp::TruncateBefore {
                topic_id,
                partition,
                offset,
            }),
            Op::CommitOffset {
                group,
                topic,
                partition,
                offset,
            } => txn::Op::Group(txn::GroupOp::CommitOffset {
                group,
                topic,
                partition,
                offset: offset.into(),
            }),
            Op::DeleteOffset {
                group,
                topic,
                partition,
            } => txn::Op::Group(txn::GroupOp::DeleteOffset {
                group,
                topic,
                partition,
            }),
            Op::PutGroup(g) => txn::Op::Group(txn::GroupOp::PutGroup(g.into())),
            Op::DeleteGroup { name } => txn::Op::Group(txn::GroupOp::DeleteGroup { name }),
            Op::CreateUpload(u) => txn::Op::S3(txn::S3Op::CreateUpload(u.into())),
            Op::PutPart {
                bucket,
                key,
                upload_id,
                part,
            } => txn::Op::S3(txn::S3Op::PutPart {
                bucket,
                key,
                upload_id,
                part: part.into(),
            }),
            Op::DeleteUpload {
                bucket,
                key,
                upload_id,
                keep,
            } => txn::Op::S3(txn::S3Op::DeleteUpload {
                bucket,
                key,
                upload_id,
                keep: each(keep),
            }),
            Op::AllocateProducerId => txn::Op::Kafka(txn::KafkaOp::AllocateProducerId),
            Op::PutTopicTable {
                topic,
                expected,
                table,
            } => txn::Op::Iceberg(txn::IcebergOp::PutTopicTable {
                topic,
                expected,
                table: table.into(),
            }),
            Op::ReplaceBucket { expected, record } => txn::Op::S3(txn::S3Op::ReplaceBucket {
                expected: expected.into(),
                record: record.into(),
            }),
        }
    }
}

/// The format-1 form of a live op for a log record: an `Append`'s batch is left empty
/// (its bytes go to the record's data section), so it is never copied. `None` for the ops
/// later formats added.
pub fn op_for_record(op: &txn::Op) -> Option<Op> {
    Some(match op {
        txn::Op::S3(txn::S3Op::CreateBucket(b)) => Op::CreateBucket(b.clone().into()),
        txn::Op::S3(txn::S3Op::DeleteBucket { name }) => Op::DeleteBucket { name: name.clone() },
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
        txn::Op::S3(txn::S3Op::SetObjectTags {
            bucket,
            key,
            version_id,
            tags,
        }) => Op::SetObjectTags {
            bucket: bucket.clone(),
            key: key.clone(),
            version_id: version_id.clone(),
            tags: tags.clone(),
        },
        txn::Op::S3(txn::S3Op::DeleteObjectVersion {
            bucket,
            key,
            version_id,
        }) => Op::DeleteObjectVersion {
            bucket: bucket.clone(),
            key: key.clone(),
            version_id: version_id.clone(),
        },
        txn::Op::S3(txn::S3Op::ExpectEtag { bucket, key, etag }) => Op::ExpectEtag {
            bucket: bucket.clone(),
            key: key.clone(),
            etag: etag.clone(),
        },
        txn::Op::Kafka(txn::KafkaOp::CreateTopic(t)) => Op::CreateTopic(t.clone().into()),
        txn::Op::Kafka(txn::KafkaOp::UpdateTopic(t)) => Op::UpdateTopic(t.clone().into()),
        txn::Op::Kafka(txn::KafkaOp::DeleteTopic { name }) => {
            Op::DeleteTopic { name: name.clone() }
        }
        txn::Op::Kafka(txn::KafkaOp::Append {
            topic_id,
            partition,
            offset_count,
            max_timestamp,
            batch: _,
            producer,
            transactional_id: None,
        }) => Op::Append {
            topic_id: *topic_id,
            partition: *partition,
            offset_count: *offset_count,
            max_timestamp: *max_timestamp,
            batch: bytes::Bytes::new(),
            producer: opt(*producer),
        },
        txn::Op::Kafka(txn::KafkaOp::TruncateBefore {
            topic_id,
            partition,
            offset,
        }) => Op::TruncateBefore {
            topic_id: *topic_id,
            partition: *partition,
            offset: *offset,
        },
        txn::Op::Group(txn::GroupOp::CommitOffset {
            group,
            topic,
            partition,
            offset,
        }) => Op::CommitOffset {
            group: group.clone(),
            topic: topic.clone(),
            partition: *partition,
            offset: offset.clone().into(),
        },
        txn::Op::Group(txn::GroupOp::DeleteOffset {
            group,
            topic,
            partition,
        }) => Op::DeleteOffset {
            group: group.clone(),
            topic: topic.clone(),
            partition: *partition,
        },
        txn::Op::Group(txn::GroupOp::PutGroup(g)) => Op::PutGroup(g.clone().into()),
        txn::Op::Group(txn::GroupOp::DeleteGroup { name }) => {
            Op::DeleteGroup { name: name.clone() }
        }
        txn::Op::S3(txn::S3Op::CreateUpload(u)) => Op::CreateUpload(u.clone().into()),
        txn::Op::S3(txn::S3Op::PutPart {
            bucket,
            key,
            upload_id,
            part,
        }) => Op::PutPart {
            bucket: bucket.clone(),
            key: key.clone(),
            upload_id: upload_id.clone(),
            part: part.clone().into(),
        },
        txn::Op::S3(txn::S3Op::DeleteUpload {
            bucket,
            key,
            upload_id,
            keep,
        }) => Op::DeleteUpload {
            bucket: bucket.clone(),
            key: key.clone(),
            upload_id: upload_id.clone(),
            keep: each(keep.clone()),
        },
        txn::Op::Kafka(txn::KafkaOp::AllocateProducerId) => Op::AllocateProducerId,
        txn::Op::Iceberg(txn::IcebergOp::PutTopicTable {
            topic,
            expected,
            table,
        }) => Op::PutTopicTable {
            topic: topic.clone(),
            expected: *expected,
            table: table.clone().into(),
        },
        txn::Op::S3(txn::S3Op::ReplaceBucket { expected, record }) => Op::ReplaceBucket {
            expected: expected.clone().into(),
            record: record.clone().into(),
        },
        txn::Op::Kafka(txn::KafkaOp::CompactPartition { .. })
        | txn::Op::Expansion(txn::ExpansionOp::PutExpansion { .. })
        | txn::Op::Iceberg(txn::IcebergOp::PutTable { .. })
        | txn::Op::Iceberg(txn::IcebergOp::PutNamespace { .. })
        | txn::Op::Iceberg(txn::IcebergOp::PutView { .. })
        | txn::Op::Iceberg(txn::IcebergOp::ForgetTable { .. })
        | txn::Op::Iceberg(txn::IcebergOp::ForgetView { .. })
        | txn::Op::Kafka(txn::KafkaOp::Append { .. })
        | txn::Op::Txn(txn::TxnOp::PutTxn { .. })
        | txn::Op::Txn(txn::TxnOp::DropTxn { .. })
        | txn::Op::Txn(txn::TxnOp::TxnOffsetCommit { .. })
        | txn::Op::Txn(txn::TxnOp::EndTxn { .. })
        | txn::Op::Kafka(txn::KafkaOp::PutQuotas { .. })
        | txn::Op::Iam(txn::IamOp::PutUser { .. })
        | txn::Op::Iam(txn::IamOp::PutPolicy { .. })
        | txn::Op::S3(txn::S3Op::PutBucketPolicy { .. })
        | txn::Op::S3(txn::S3Op::PutBucketConfig { .. })
        | txn::Op::S3(txn::S3Op::ExpectUnlocked { .. })
        | txn::Op::S3(txn::S3Op::SetObjectRetention { .. })
        | txn::Op::S3(txn::S3Op::SetObjectLegalHold { .. })
        | txn::Op::S3(txn::S3Op::SetObjectAcl { .. })
        | txn::Op::Pipeline(_)
        | txn::Op::Schema(_)
        | txn::Op::Group(txn::GroupOp::PutShareState { .. })
        | txn::Op::Group(txn::GroupOp::DeleteShareState { .. }) => return None,
    })
}
