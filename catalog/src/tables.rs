//! The embedded store's tables and their key encodings. Every table maps bytes to bytes
//! with keys built so that byte order is the order readers need (S3 lists keys in byte
//! order; a partition's batches by offset), which also lets checkpoints dump and restore
//! every table the same way.

use redb::TableDefinition;

/// A table of the catalog.
pub type Table = TableDefinition<'static, &'static [u8], &'static [u8]>;

/// Counters: applied LSN, version sequence.
pub const META: Table = TableDefinition::new("meta");
/// Bucket name -> `BucketRecord`.
pub const BUCKETS: Table = TableDefinition::new("buckets");
/// `object_key` -> current `ObjectVersion` (absent when the newest is a delete marker).
pub const OBJECTS: Table = TableDefinition::new("objects");
/// `version_key` -> `ObjectVersion`, newest first within a key.
pub const VERSIONS: Table = TableDefinition::new("versions");
/// Topic name -> `TopicRecord`.
pub const TOPICS: Table = TableDefinition::new("topics");
/// Topic id (16 bytes, big-endian) -> topic name.
pub const TOPIC_IDS: Table = TableDefinition::new("topic_ids");
/// `partition_key` -> `PartitionState`.
pub const PARTITIONS: Table = TableDefinition::new("partitions");
/// `batch_key` -> `BatchEntry` (where the batch's bytes are in the log).
pub const BATCHES: Table = TableDefinition::new("batches");
/// Log segment start (8 bytes, big-endian) -> number of batches stored in it (8 bytes):
/// a segment is deleted only once nothing references it.
pub const SEGMENT_REFS: Table = TableDefinition::new(SEGMENT_REFS_NAME);
/// [`SEGMENT_REFS`]'s name (the PostgreSQL catalog's trim queries it by name).
pub const SEGMENT_REFS_NAME: &str = "segment_refs";
/// Group id -> `GroupRecord`.
pub const GROUPS: Table = TableDefinition::new("groups");
/// `offset_key` -> `OffsetRecord`.
pub const OFFSETS: Table = TableDefinition::new("offsets");

/// `producer_key` -> `ProducerState`.
pub const PRODUCERS: Table = TableDefinition::new("producers");
/// `upload_key` -> `UploadRecord`, in key order then upload id.
pub const UPLOADS: Table = TableDefinition::new("uploads");
/// `part_key` -> `PartRecord`.
pub const PARTS: Table = TableDefinition::new("parts");
/// Topic name -> `TopicTable`: how far a topic's Iceberg table reaches.
pub const TOPIC_TABLES: Table = TableDefinition::new("topic_tables");

/// `partition_key` -> `CompactionState` (store format 2 on; absent: never compacted).
pub const COMPACTION: Table = TableDefinition::new("compaction");

/// `expansion_key` -> `Expansion` (store format 3 on).
pub const EXPANSIONS: Table = TableDefinition::new("expansions");
/// `table_key` -> `TableRecord`: tables outside `kafka_topics` (store format 3 on).
pub const OTHER_TABLES: Table = TableDefinition::new("other_tables");

/// Transactional id -> `TxnRecord` (store format 4 on).
pub const TXNS: Table = TableDefinition::new("txns");
/// `txn_offset_key` -> `OffsetRecord`: offsets an open transaction holds (format 4 on).
pub const TXN_OFFSETS: Table = TableDefinition::new("txn_offsets");
/// `partition_key` -> `TxnPartition`: a partition's open transactions (format 4 on).
pub const TXN_PARTITIONS: Table = TableDefinition::new("txn_partitions");
/// `batch_key` of the abort marker -> `AbortedTxn` (format 4 on).
pub const ABORTED_TXNS: Table = TableDefinition::new("aborted_txns");

/// Postcard bytes of a `v5::QuotaEntity` -> `ClientQuotas` (store format 5 on).
pub const CLIENT_QUOTAS: Table = TableDefinition::new("client_quotas");

/// User name -> `UserRecord` (store format 6 on).
pub const USERS: Table = TableDefinition::new("users");
/// Policy name -> `PolicyRecord` (store format 6 on).
pub const POLICIES: Table = TableDefinition::new("policies");
/// Bucket name -> `BucketPolicy` (store format 6 on).
pub const BUCKET_POLICIES: Table = TableDefinition::new("bucket_policies");
/// `BucketConfig::key` -> `BucketConfig` (store format 7 on).
pub const BUCKET_CONFIGS: Table = TableDefinition::new("bucket_configs");
/// Pipeline name -> `PipelineRecord` (store format 9 on).
pub const PIPELINES: Table = TableDefinition::new("pipelines");
/// `pipeline_position_key` -> `PipelinePosition` (store format 9 on).
pub const PIPELINE_POSITIONS: Table = TableDefinition::new("pipeline_positions");
/// Namespace (levels joined by 0x1F) -> `NamespaceRecord` (store format 10 on).
pub const NAMESPACES: Table = TableDefinition::new("namespaces");
/// `table_key` -> `TableRecord` of an Iceberg view (store format 10 on).
pub const ICEBERG_VIEWS: Table = TableDefinition::new("iceberg_views");
/// Schema id (big-endian u32) -> `SchemaRecord` (store format 12 on).
pub const SCHEMAS: Table = TableDefinition::new("schemas");
/// Subject name -> `SubjectRecord`; the empty name holds the registry's settings (store
/// format 12 on).
pub const SCHEMA_SUBJECTS: Table = TableDefinition::new("schema_subjects");
/// A schema's fingerprint -> its id (big-endian u32): the index that gives a schema
/// registered again its first id (store format 12 on).
pub const SCHEMA_FINGERPRINTS: Table = TableDefinition::new("schema_fingerprints");
/// `share_state_key` -> `ShareStateRecord`: a share group's state of one partition
/// (store format 13 on).
pub const SHARE_STATES: Table = TableDefinition::new("share_states");

/// Every table, with the tag checkpoints use for it.
pub const ALL: [(u8, Table); 35] = [
    (1, META),
    (2, BUCKETS),
    (3, OBJECTS),
    (4, VERSIONS),
    (5, TOPICS),
    (6, TOPIC_IDS),
    (7, PARTITIONS),
    (8, BATCHES),
    (9, GROUPS),
    (10, OFFSETS),
    (11, SEGMENT_REFS),
    (12, PRODUCERS),
    (13, UPLOADS),
    (14, PARTS),
    (15, TOPIC_TABLES),
    (16, COMPACTION),
    (17, EXPANSIONS),
    (18, OTHER_TABLES),
    (19, TXNS),
    (20, TXN_OFFSETS),
    (21, TXN_PARTITIONS),
    (22, ABORTED_TXNS),
    (23, CLIENT_QUOTAS),
    (24, USERS),
    (25, POLICIES),
    (26, BUCKET_POLICIES),
    (27, BUCKET_CONFIGS),
    (28, PIPELINES),
    (29, PIPELINE_POSITIONS),
    (30, NAMESPACES),
    (31, ICEBERG_VIEWS),
    (32, SCHEMAS),
    (33, SCHEMA_SUBJECTS),
    (34, SCHEMA_FINGERPRINTS),
    (35, SHARE_STATES),
];

/// Meta key of the last applied log record.
pub const APPLIED_LSN: &[u8] = b"applied_lsn";
/// Meta key of the last allocated producer id.
pub const PRODUCER_ID: &[u8] = b"producer_id";
/// Meta key of the object version sequence.
pub const VERSION_SEQ: &[u8] = b"version_seq";
/// Meta key of the highest schema id bound (format 12 on).
pub const SCHEMA_ID: &[u8] = b"schema_id";

/// Prefix of every key of one bucket: its length, then its name.
pub fn bucket_prefix(bucket: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + bucket.len());
    k.push(bucket.len() as u8);
    k.extend_from_slice(bucket.as_bytes());
    k
}

/// Key of an object in `OBJECTS`.
pub fn object_key(bucket: &str, key: &str) -> Vec<u8> {
    let mut k = bucket_prefix(bucket);
    k.extend_from_slice(key.as_bytes());
    k
}

/// Prefix of every version of one key in `VERSIONS` (keys never hold a NUL byte).
pub fn versions_prefix(bucket: &str, key: &str) -> Vec<u8> {
    let mut k = object_key(bucket, key);
    k.push(0);
    k
}

/// Key of one version: newest (highest sequence) first.
pub fn version_key(bucket: &str, key: &str, seq: u64) -> Vec<u8> {
    let mut k = versions_prefix(bucket, key);
    k.extend_from_slice(&(!seq).to_be_bytes());
    k
}

/// Key of a multipart upload: the object key, a NUL, then the upload id (keys never
/// hold a NUL byte, so uploads sort by key, then by id).
pub fn upload_key(bucket: &str, key: &str, upload_id: &str) -> Vec<u8> {
    let mut k = versions_prefix(bucket, key);
    k.extend_from_slice(upload_id.as_bytes());
    k
}

/// Prefix of every part of one upload.
pub fn parts_prefix(upload_id: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(2 + upload_id.len());
    k.extend_from_slice(&(upload_id.len() as u16).to_be_bytes());
    k.extend_from_slice(upload_id.as_bytes());
    k
}

/// Key of one part: parts sort by number.
pub fn part_key(upload_id: &str, part_number: u32) -> Vec<u8> {
    let mut k = parts_prefix(upload_id);
    k.extend_from_slice(&part_number.to_be_bytes());
    k
}

/// Key of a partition.
pub fn partition_key(topic_id: u128, partition: u32) -> [u8; 20] {
    let mut k = [0u8; 20];
    k[..16].copy_from_slice(&topic_id.to_be_bytes());
    k[16..].copy_from_slice(&partition.to_be_bytes());
    k
}

/// Key of a batch by its base offset.
pub fn batch_key(topic_id: u128, partition: u32, base_offset: u64) -> [u8; 28] {
    let mut k = [0u8; 28];
    k[..20].copy_from_slice(&partition_key(topic_id, partition));
    k[20..].copy_from_slice(&base_offset.to_be_bytes());
    k
}

/// A batch's index entry: its offsets and timestamp, and where its bytes are in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchEntry {
    /// Offset of its last record.
    pub last_offset: u64,
    /// Largest timestamp in it.
    pub max_timestamp: i64,
    /// The log record holding it.
    pub position: storage::wal::LogPosition,
    /// Byte offset of the batch within that record's payload.
    pub data_offset: u64,
    /// Batch length in bytes.
    pub len: u32,
}

impl BatchEntry {
    const LEN: usize = 60;

    /// Fixed-width big-endian encoding.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut v = [0u8; Self::LEN];
        v[..8].copy_from_slice(&self.last_offset.to_be_bytes());
        v[8..16].copy_from_slice(&self.max_timestamp.to_be_bytes());
        v[16..24].copy_from_slice(&self.position.lsn.to_be_bytes());
        v[24..32].copy_from_slice(&self.position.segment.to_be_bytes());
        v[32..40].copy_from_slice(&self.position.offset.to_be_bytes());
        v[40..48].copy_from_slice(&self.data_offset.to_be_bytes());
        v[48..52].copy_from_slice(&self.len.to_be_bytes());
        v
    }

    /// Decodes [`BatchEntry::encode`]'s output.
    pub fn decode(v: &[u8]) -> Option<Self> {
        if v.len() != Self::LEN {
            return None;
        }
        let u = |r: std::ops::Range<usize>| v[r].try_into().ok().map(u64::from_be_bytes);
        Some(Self {
            last_offset: u(0..8)?,
            max_timestamp: u(8..16)? as i64,
            position: storage::wal::LogPosition {
                lsn: u(16..24)?,
                segment: u(24..32)?,
                offset: u(32..40)?,
            },
            data_offset: u(40..48)?,
            len: u32::from_be_bytes(v[48..52].try_into().ok()?),
        })
    }
}

/// Key of an idempotent producer's state on one partition.
pub fn producer_key(producer_id: i64, topic_id: u128, partition: u32) -> [u8; 28] {
    let mut k = [0u8; 28];
    k[..8].copy_from_slice(&producer_id.to_be_bytes());
    k[8..].copy_from_slice(&partition_key(topic_id, partition));
    k
}

/// Prefix of one group's offsets.
pub fn group_prefix(group: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(2 + group.len());
    k.extend_from_slice(&(group.len() as u16).to_be_bytes());
    k.extend_from_slice(group.as_bytes());
    k
}

/// Key of a committed offset.
pub fn offset_key(group: &str, topic: &str, partition: u32) -> Vec<u8> {
    let mut k = group_prefix(group);
    k.extend_from_slice(&(topic.len() as u16).to_be_bytes());
    k.extend_from_slice(topic.as_bytes());
    k.extend_from_slice(&partition.to_be_bytes());
    k
}

/// Key of a share group's state of one partition: the group's prefix (as in
/// [`OFFSETS`], so one group's states are one prefix and a longer group name cannot
/// share it), then the topic id (16 bytes) and the partition (4 bytes), big-endian, so a
/// group's states sort by topic id, then partition.
pub fn share_state_key(group: &str, topic_id: u128, partition: u32) -> Vec<u8> {
    let mut k = group_prefix(group);
    k.extend_from_slice(&partition_key(topic_id, partition));
    k
}

/// The (topic id, partition) of a `share_state_key` of `group`.
pub fn share_state_of(group: &str, key: &[u8]) -> Option<(u128, u32)> {
    let rest = key.strip_prefix(group_prefix(group).as_slice())?;
    let (id, partition) = rest.split_first_chunk::<16>()?;
    Some((
        u128::from_be_bytes(*id),
        u32::from_be_bytes(partition.try_into().ok()?),
    ))
}

/// Key of an offset held by an open transaction: the committed offset's key, then the
/// transactional id, so a group's pending offsets for one partition are one prefix.
pub fn txn_offset_key(group: &str, topic: &str, partition: u32, id: &str) -> Vec<u8> {
    let mut k = offset_key(group, topic, partition);
    k.extend_from_slice(id.as_bytes());
    k
}

/// The (topic, partition, transactional id) of a `txn_offset_key` of `group`.
pub fn txn_offset_parts(group: &str, key: &[u8]) -> Option<(String, u32, String)> {
    let at = 2 + group.len();
    let len = u16::from_be_bytes(key.get(at..at + 2)?.try_into().ok()?) as usize;
    let topic = String::from_utf8(key.get(at + 2..at + 2 + len)?.to_vec()).ok()?;
    let p = at + 2 + len;
    let partition = u32::from_be_bytes(key.get(p..p + 4)?.try_into().ok()?);
    let id = String::from_utf8(key.get(p + 4..)?.to_vec()).ok()?;
    Some((topic, partition, id))
}

/// Key of an entity's client quotas: its frozen format-5 encoding.
pub fn quota_key(entity: &crate::model::QuotaEntity) -> Vec<u8> {
    // Plain owned data: serializing into a Vec cannot fail.
    postcard::to_stdvec(&crate::format::v5::QuotaEntity::from(entity.clone())).unwrap_or_default()
}

/// A name as a key part that sorts by name and cannot run into what follows: its length
/// (u16, big-endian), then its bytes.
fn push_name(k: &mut Vec<u8>, name: &str) {
    k.extend_from_slice(&(name.len() as u16).to_be_bytes());
    k.extend_from_slice(name.as_bytes());
}

/// Prefix of every expansion of one topic.
pub fn expansions_prefix(topic: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(2 + topic.len());
    push_name(&mut k, topic);
    k
}

/// Key of a topic's expansion of one source column.
pub fn expansion_key(topic: &str, source: &str) -> Vec<u8> {
    let mut k = expansions_prefix(topic);
    k.extend_from_slice(source.as_bytes());
    k
}

/// The source column of an `expansion_key` whose prefix is `expansions_prefix(topic)`.
pub fn expansion_source(topic: &str, key: &[u8]) -> Option<String> {
    let source = key.get(2 + topic.len()..)?;
    String::from_utf8(source.to_vec()).ok()
}

/// Prefix of every table of one namespace.
pub fn namespace_prefix(namespace: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(2 + namespace.len());
    push_name(&mut k, namespace);
    k
}

/// Key of a table outside `kafka_topics`.
pub fn table_key(namespace: &str, name: &str) -> Vec<u8> {
    let mut k = namespace_prefix(namespace);
    push_name(&mut k, name);
    k
}

/// The (namespace, name) of a `table_key`.
pub fn table_of_key(key: &[u8]) -> Option<(String, String)> {
    let name_at = |at: usize| -> Option<(String, usize)> {
        let len = u16::from_be_bytes(key.get(at..at + 2)?.try_into().ok()?) as usize;
        let s = String::from_utf8(key.get(at + 2..at + 2 + len)?.to_vec()).ok()?;
        Some((s, at + 2 + len))
    };
    let (namespace, at) = name_at(0)?;
    let (name, _) = name_at(at)?;
    Some((namespace, name))
}

/// The smallest key greater than every key starting with `prefix`, if any.
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Prefix of every position of one pipeline: its name and a NUL (no name holds one).
pub fn pipeline_positions_prefix(pipeline: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(pipeline.len() + 1);
    k.extend_from_slice(pipeline.as_bytes());
    k.push(0);
    k
}

/// Key of one cursor's position: the pipeline's prefix, the cursor's name, a NUL, the
/// partition (u32, big-endian).
pub fn pipeline_position_key(pipeline: &str, cursor: &str, partition: u32) -> Vec<u8> {
    let mut k = pipeline_positions_prefix(pipeline);
    k.extend_from_slice(cursor.as_bytes());
    k.push(0);
    k.extend_from_slice(&partition.to_be_bytes());
    k
}

/// The cursor and partition of a `pipeline_position_key` under `prefix`.
pub fn pipeline_position_of(prefix: &[u8], key: &[u8]) -> Option<(String, u32)> {
    let rest = key.strip_prefix(prefix)?;
    let (cursor, partition) = rest.split_at(rest.len().checked_sub(5)?);
    let partition = partition.strip_prefix(&[0])?;
    Some((
        String::from_utf8(cursor.to_vec()).ok()?,
        u32::from_be_bytes(partition.try_into().ok()?),
    ))
}
