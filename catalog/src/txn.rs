//! Transactions: lists of operations that commit all together or not at all.

use crate::model::{
    BucketRecord, GroupRecord, ObjectVersion, OffsetRecord, PartRecord, TopicRecord, TopicTable,
    UploadRecord,
};
use storage::BlobMeta;

/// One change. Operations in a transaction are checked against the state before the
/// transaction, then applied in order; an operation cannot depend on an earlier one in
/// the same transaction (create a topic, then append to it, in two transactions).
///
/// This is the live type, free to change: the log stores ops in a versioned format of
/// their own (`crate::format`).
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Creates a bucket (fails if it exists).
    CreateBucket(BucketRecord),
    /// Deletes an empty bucket.
    DeleteBucket {
        /// Bucket.
        name: String,
    },
    /// Adds a version (or delete marker) and makes it current. With `replace_null`, the
    /// existing `null` version is removed first (unversioned and suspended buckets).
    PutObject {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// The new version.
        version: ObjectVersion,
        /// Remove the existing `null` version.
        replace_null: bool,
    },
    /// Replaces the tags of one version (the current one when `version_id` is `None`).
    SetObjectTags {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Version, or the current one.
        version_id: Option<String>,
        /// The new tags.
        tags: std::collections::BTreeMap<String, String>,
    },
    /// Permanently removes one version; the newest remaining one becomes current.
    DeleteObjectVersion {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Version id.
        version_id: String,
    },
    /// Fails the transaction unless the object's current version has this ETag
    /// (`None`: unless the key has no current version).
    ExpectEtag {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Expected ETag.
        etag: Option<String>,
    },
    /// Fails the transaction with [`crate::CatalogError::ObjectLocked`] if the version
    /// exists and its object lock protects it at `now_ms` (a guard placed before every
    /// removal of a version; a missing version passes).
    ExpectUnlocked {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Version id.
        version_id: String,
        /// The time the removal is judged at, ms since the epoch (in the op, so a replay
        /// judges the same).
        now_ms: i64,
        /// Whether a governance-mode retention may be overridden.
        bypass_governance: bool,
    },
    /// Sets (`Some`) or removes (`None`) a version's retention. While the stored retention
    /// is in force at `now_ms`, a change that ends it sooner, removes it or turns
    /// compliance into governance fails with [`crate::CatalogError::ObjectLocked`], unless
    /// it is in governance mode and `bypass_governance` is set.
    SetObjectRetention {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Version id.
        version_id: String,
        /// The new retention.
        retention: Option<crate::model::Retention>,
        /// The time the change is judged at, ms since the epoch.
        now_ms: i64,
        /// Whether a governance-mode retention may be weakened.
        bypass_governance: bool,
    },
    /// Places or lifts a version's legal hold.
    SetObjectLegalHold {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Version id.
        version_id: String,
        /// Whether the hold is on.
        on: bool,
    },
    /// Creates a topic.
    CreateTopic(TopicRecord),
    /// Replaces a topic's configs or grows its partitions.
    UpdateTopic(TopicRecord),
    /// Deletes a topic and all its data.
    DeleteTopic {
        /// Topic name.
        name: String,
    },
    /// Appends a Kafka record batch; its first 8 bytes (the base offset field) are
    /// overwritten with the offset assigned at commit.
    Append {
        /// Topic id.
        topic_id: u128,
        /// Partition.
        partition: u32,
        /// Number of offsets the batch covers (last offset delta + 1).
        offset_count: u32,
        /// Largest timestamp in the batch.
        max_timestamp: i64,
        /// The batch bytes.
        batch: bytes::Bytes,
        /// The idempotent producer's ids and sequences, checked and recorded at commit.
        producer: Option<ProducerBatch>,
        /// The transactional id of a transactional batch: the commit fails unless that
        /// id's transaction is open for the batch's producer and epoch and holds this
        /// partition (KIP-890's check, made where it cannot race an EndTxn).
        transactional_id: Option<String>,
    },
    /// Moves a partition's log start offset forward, deleting the batches wholly before it.
    TruncateBefore {
        /// Topic id.
        topic_id: u128,
        /// Partition.
        partition: u32,
        /// New log start offset.
        offset: u64,
    },
    /// Commits a consumer group offset.
    CommitOffset {
        /// Group id.
        group: String,
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
        /// The offset.
        offset: OffsetRecord,
    },
    /// Deletes a committed offset.
    DeleteOffset {
        /// Group id.
        group: String,
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
    },
    /// Stores a group's coordinator state.
    PutGroup(GroupRecord),
    /// Deletes a group and its committed offsets.
    DeleteGroup {
        /// Group id.
        name: String,
    },
    /// Starts a multipart upload (the bucket must exist; the id must be new).
    CreateUpload(UploadRecord),
    /// Stores one part of an upload, replacing (and freeing) an earlier part of the same
    /// number.
    PutPart {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Upload id.
        upload_id: String,
        /// The part.
        part: PartRecord,
    },
    /// Ends an upload: removes it and its parts and frees every part blob not in `keep`
    /// (complete keeps the blobs the new object references; abort keeps none). Fails
    /// unless every blob in `keep` is still one of the upload's parts.
    DeleteUpload {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// Upload id.
        upload_id: String,
        /// Part blobs that live on (in the completed object).
        keep: Vec<BlobMeta>,
    },
    /// Allocates the next producer id ([`OpOutcome::ProducerId`]).
    AllocateProducerId,
    /// Moves a topic's Iceberg table to a new state. Fails unless the topic exists with
    /// the table's topic id and the stored table is at generation `expected` (0: no
    /// table yet), so two writers never both build on the same snapshot.
    PutTopicTable {
        /// Topic name.
        topic: String,
        /// Generation the change was built on.
        expected: u64,
        /// The new state (its generation must be `expected + 1`).
        table: TopicTable,
    },
    /// Commits one log compaction pass over a partition: removes the batches whose base
    /// offsets are in `removed`, indexes `added` (their compacted forms, records at their
    /// original offsets; the bytes go into the log record) and stores `state`. Fails with
    /// [`crate::CatalogError::PreconditionFailed`] unless the partition still starts at
    /// `log_start`, its compaction is still at `expected_passes` passes and every removed
    /// batch is still there, so a pass planned on an older partition never commits.
    CompactPartition {
        /// Topic id.
        topic_id: u128,
        /// Partition.
        partition: u32,
        /// The log start offset the pass was planned on.
        log_start: u64,
        /// The pass count the pass was planned on.
        expected_passes: u64,
        /// Base offsets of the batches the pass replaces or drops.
        removed: Vec<u64>,
        /// The replacements, in offset order.
        added: Vec<CompactedBatch>,
        /// The partition's compaction state after the pass (`passes` = expected + 1).
        state: crate::model::CompactionState,
    },
    /// Creates, changes or removes (`None`) the expansion of one source column of a
    /// topic. Fails with [`crate::CatalogError::PreconditionFailed`] unless the stored one
    /// is at `expected` changes (0: none) and the new one at `expected + 1`, and unless the
    /// topic exists with the expansion's topic id.
    PutExpansion {
        /// Topic name.
        topic: String,
        /// Source column (`key` or `value`).
        source: String,
        /// Change count the change was built on.
        expected: u64,
        /// The new state.
        expansion: Option<crate::model::Expansion>,
    },
    /// Creates, moves or drops (`None`, deleting every object under its prefix) a table
    /// outside `kafka_topics`. Fails unless the stored one is at generation `expected` (0:
    /// none) and the new one at `expected + 1`.
    PutTable {
        /// Namespace.
        namespace: String,
        /// Table name.
        name: String,
        /// Generation the change was built on.
        expected: u64,
        /// The new state.
        table: Option<crate::model::TableRecord>,
    },
    /// Stores a transactional id's coordinator state (the coordinator serializes the
    /// changes of one id, so this is a plain write).
    PutTxn {
        /// Transactional id.
        id: String,
        /// The new state.
        record: crate::model::TxnRecord,
    },
    /// Sets an entity's client quotas (all of them: an empty map removes the entity).
    PutQuotas {
        /// The entity.
        entity: crate::model::QuotaEntity,
        /// Values by quota key.
        values: std::collections::BTreeMap<String, f64>,
    },
    /// Makes, replaces (`Some`) or removes (`None`) a user.
    PutUser {
        /// Its name.
        name: String,
        /// The new record.
        record: Option<crate::model::UserRecord>,
    },
    /// Makes, replaces (`Some`) or removes (`None`) a named identity policy.
    PutPolicy {
        /// Its name.
        name: String,
        /// The new record.
        record: Option<crate::model::PolicyRecord>,
    },
    /// Sets (`Some`) or removes (`None`) a bucket's policy; the bucket must exist.
    PutBucketPolicy {
        /// The bucket.
        bucket: String,
        /// The document.
        document: Option<String>,
    },
    /// Sets (`Some`) or removes (`None`) one of a bucket's sub-resource configurations;
    /// the bucket must exist.
    PutBucketConfig {
        /// The bucket.
        bucket: String,
        /// Which configuration.
        kind: crate::model::BucketConfigKind,
        /// The XML document.
        document: Option<String>,
    },
    /// Forgets a transactional id (its expiration: no transaction open, unused for
    /// `transactional.id.expiration.ms`).
    DropTxn {
        /// Transactional id.
        id: String,
    },
    /// Holds a consumer group offset in an open transaction, to be committed with it.
    /// Fails with [`crate::CatalogError::InvalidTxnState`] unless the transaction is open
    /// for this producer and epoch and holds the group.
    TxnOffsetCommit {
        /// Transactional id.
        id: String,
        /// Producer id.
        producer_id: i64,
        /// Producer epoch.
        epoch: i16,
        /// Group id.
        group: String,
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
        /// The offset.
        offset: OffsetRecord,
    },
    /// Ends a transaction: appends a control batch (commit or abort marker) to every
    /// partition in `markers`, commits (or drops) every offset the transaction holds, and
    /// stores `record`. Fails with [`crate::CatalogError::InvalidTxnState`] unless the
    /// stored state is the open transaction of `producer_id` at an epoch up to `epoch`
    /// (a fencing abort writes the bumped epoch).
    EndTxn {
        /// Transactional id.
        id: String,
        /// Producer id.
        producer_id: i64,
        /// The epoch the markers carry.
        epoch: i16,
        /// Commit or abort.
        commit: bool,
        /// One control batch per partition (a partition no longer there is skipped).
        markers: Vec<TxnMarker>,
        /// The state after it.
        record: crate::model::TxnRecord,
    },
    /// Replaces a bucket's record if it is still `expected`: a read-modify-write that
    /// fails with [`crate::CatalogError::PreconditionFailed`] when another change (or a
    /// delete and re-create) came first, so concurrent setting changes are never lost.
    ReplaceBucket {
        /// The record the change was built on.
        expected: BucketRecord,
        /// The new record (same name).
        record: BucketRecord,
    },
}

/// A record batch rewritten by compaction: the records it keeps, at their offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactedBatch {
    /// Offset of its first record (its base offset field holds it).
    pub base_offset: u64,
    /// Offset of its last record.
    pub last_offset: u64,
    /// Its largest timestamp.
    pub max_timestamp: i64,
    /// The batch bytes.
    pub batch: bytes::Bytes,
}

/// A transaction marker for one partition: a control batch of one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMarker {
    /// Topic id.
    pub topic_id: u128,
    /// Partition.
    pub partition: u32,
    /// Its timestamp.
    pub timestamp: i64,
    /// The control batch (base offset overwritten at commit).
    pub batch: bytes::Bytes,
}

/// An idempotent producer's fields of one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerBatch {
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub epoch: i16,
    /// Sequence of the batch's first record.
    pub first_sequence: i32,
    /// Sequence of its last record.
    pub last_sequence: i32,
}

/// Operations that commit together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transaction {
    /// In order.
    pub ops: Vec<Op>,
    /// The address leases the transaction is made under (a cluster node's Kafka work):
    /// it commits only while its node still holds every one of them at its epoch. A
    /// precondition of the commit, not stored in the log.
    pub leases: Vec<Lease>,
}

/// A cluster address held at an epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The address, as the cluster's address list spells it.
    pub address: String,
    /// The epoch it is held at.
    pub epoch: i64,
}

impl Transaction {
    /// A transaction of these operations.
    pub fn new(ops: Vec<Op>) -> Self {
        Self {
            ops,
            leases: Vec::new(),
        }
    }

    /// The same transaction, made under `leases`.
    pub fn under(self, leases: Vec<Lease>) -> Self {
        Self { leases, ..self }
    }

    /// Approximate size, for batching.
    pub fn approx_bytes(&self) -> usize {
        self.ops
            .iter()
            .map(|op| match op {
                Op::Append { batch, .. } => batch.len() + 64,
                Op::CompactPartition { added, .. } => {
                    added.iter().map(|b| b.batch.len() + 64).sum::<usize>() + 128
                }
                Op::EndTxn { markers, .. } => {
                    markers.iter().map(|m| m.batch.len() + 64).sum::<usize>() + 128
                }
                Op::PutObject { version, .. } => match &version.data {
                    crate::model::ObjectData::Inline(d) => d.len() + 256,
                    _ => 256,
                },
                _ => 128,
            })
            .sum()
    }
}

/// What one operation produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpOutcome {
    /// Nothing to report.
    Done,
    /// A batch was appended at this base offset.
    Appended {
        /// Offset of its first record.
        base_offset: u64,
        /// The partition's log start offset after the append (Produce answers it, and
        /// reading it again would cost a PostgreSQL catalog a transaction).
        log_start_offset: u64,
    },
    /// A producer id was allocated.
    ProducerId(i64),
}

/// What a committed transaction produced, one outcome per operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitOutcome {
    /// The log record that holds it.
    pub lsn: u64,
    /// Per operation, in order.
    pub ops: Vec<OpOutcome>,
}
