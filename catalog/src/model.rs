//! The records the catalog stores, as the rest of Eddy uses them. These live types are
//! free to change: the store keeps them in a versioned format of their own
//! (`crate::format`), never as their own encoding.

use std::collections::BTreeMap;

use storage::BlobMeta;

/// A bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketRecord {
    /// Bucket name.
    pub name: String,
    /// Access key of the user who created it.
    pub owner: String,
    /// Creation time, ms since the epoch.
    pub created_ms: i64,
    /// Versioning state.
    pub versioning: Versioning,
    /// Bucket tags.
    pub tags: BTreeMap<String, String>,
    /// Other bucket settings (notification configuration, ...) by name, owned by the
    /// front end that defines them.
    pub settings: BTreeMap<String, Vec<u8>>,
}

/// S3 bucket versioning state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Versioning {
    /// Never enabled: every write replaces the `null` version.
    #[default]
    Unversioned,
    /// Every write makes a new version.
    Enabled,
    /// Writes replace the `null` version; older versions are kept.
    Suspended,
}

/// Where an object's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectData {
    /// Small bodies live in the catalog record itself.
    Inline(Vec<u8>),
    /// Erasure-coded blobs, concatenated in order (one per multipart part).
    Blobs(Vec<BlobMeta>),
}

impl ObjectData {
    /// The blobs this data references.
    pub fn blobs(&self) -> &[BlobMeta] {
        match self {
            ObjectData::Inline(_) => &[],
            ObjectData::Blobs(b) => b,
        }
    }
}

/// One version of an object, or a delete marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectVersion {
    /// Version id (`null` for writes to an unversioned or suspended bucket).
    pub version_id: String,
    /// A delete marker rather than data.
    pub delete_marker: bool,
    /// Size in bytes.
    pub size: u64,
    /// Entity tag, without quotes.
    pub etag: String,
    /// Last-Modified, ms since the epoch.
    pub last_modified_ms: i64,
    /// The bytes.
    pub data: ObjectData,
    /// Content headers and user metadata.
    pub metadata: BTreeMap<String, String>,
    /// Object tags.
    pub tags: BTreeMap<String, String>,
    /// Checksums by algorithm name.
    pub checksums: BTreeMap<String, String>,
    /// Part sizes for multipart objects (empty for single-part).
    pub parts: Vec<u64>,
    /// Access key of the user who wrote it (empty: written before format 8 recorded
    /// owners; reported as the bucket's owner).
    pub owner: String,
    /// Its object lock: retention and legal hold.
    pub lock: ObjectLock,
    /// How its bytes are encrypted at rest (`None`: plaintext).
    pub encryption: Option<Encryption>,
    /// Each part's checksums, for multipart objects (empty for single-part ones and for
    /// multipart objects completed before format 8).
    pub part_checksums: Vec<BTreeMap<String, String>>,
    /// Its access control list, as the S3 gateway encodes it (`None`: the owner's full
    /// control alone, which every version written before format 11 has).
    pub acl: Option<String>,
}

impl ObjectVersion {
    /// A version of `data` with nothing else set (no metadata, tags, checksums, parts,
    /// owner, lock or encryption), for callers to fill in what they have.
    pub fn new(
        version_id: String,
        data: ObjectData,
        size: u64,
        etag: String,
        last_modified_ms: i64,
    ) -> Self {
        Self {
            version_id,
            delete_marker: false,
            size,
            etag,
            last_modified_ms,
            data,
            metadata: BTreeMap::new(),
            tags: BTreeMap::new(),
            checksums: BTreeMap::new(),
            parts: Vec::new(),
            owner: String::new(),
            lock: ObjectLock::default(),
            encryption: None,
            part_checksums: Vec::new(),
            acl: None,
        }
    }
}

/// An object version's S3 object lock (format 8 on).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectLock {
    /// Retention: the version cannot be removed before `until_ms`.
    pub retention: Option<Retention>,
    /// A legal hold: the version cannot be removed until the hold is lifted.
    pub legal_hold: bool,
}

impl ObjectLock {
    /// Whether the version may not be removed at `now_ms`; `bypass_governance` lets a
    /// governance-mode retention (never a compliance one or a legal hold) be overridden.
    pub fn protects(&self, now_ms: i64, bypass_governance: bool) -> bool {
        self.legal_hold
            || self.retention.as_ref().is_some_and(|r| {
                r.until_ms > now_ms && !(bypass_governance && r.mode == LockMode::Governance)
            })
    }
}

/// An object version's retention period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Who may shorten or remove it.
    pub mode: LockMode,
    /// Retain until, ms since the epoch.
    pub until_ms: i64,
}

/// S3's object lock retention modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// Users with `s3:BypassGovernanceRetention` may shorten it or remove the version.
    Governance,
    /// No one may shorten it or remove the version before it ends.
    Compliance,
}

/// How an object's bytes are encrypted at rest (format 8 on): every blob of the object
/// is AES-256-CTR under a key derived from the object's data key and the blob's id
/// (`docs/format.md`), before it is erasure coded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Encryption {
    /// SSE-S3: a random data key, stored wrapped by a master key.
    S3 {
        /// Which master key wrapped it.
        key_id: String,
        /// The data key sealed by the master key (AES-256-GCM: 12-byte nonce, then the
        /// 32-byte key's ciphertext and 16-byte tag).
        wrapped_key: Vec<u8>,
    },
    /// SSE-C: the client's key, never stored; its MD5 (base64) is kept to check the key
    /// every read brings.
    Customer {
        /// Base64 of the key's MD5.
        key_md5: String,
    },
}

/// An in-progress S3 multipart upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadRecord {
    /// Upload id.
    pub upload_id: String,
    /// Bucket.
    pub bucket: String,
    /// Key the object will have.
    pub key: String,
    /// Access key of the user who started it.
    pub owner: String,
    /// Start time, ms since the epoch.
    pub initiated_ms: i64,
    /// Content headers and user metadata the object will get.
    pub metadata: BTreeMap<String, String>,
    /// Tags the object will get.
    pub tags: BTreeMap<String, String>,
    /// Checksum algorithm the client announced, if any.
    pub checksum_algorithm: Option<String>,
    /// `COMPOSITE` or `FULL_OBJECT`: how the object's checksum derives from the parts'.
    pub checksum_type: Option<String>,
    /// The object lock the object will get.
    pub lock: ObjectLock,
    /// How the parts (and so the object) are encrypted at rest.
    pub encryption: Option<Encryption>,
    /// The access control list the object will get (see [`ObjectVersion::acl`]).
    pub acl: Option<String>,
}

/// One uploaded part of a multipart upload: one blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartRecord {
    /// Part number, 1..=10000.
    pub part_number: u32,
    /// MD5 of the part, hex, without quotes.
    pub etag: String,
    /// Size in bytes.
    pub size: u64,
    /// Upload time, ms since the epoch.
    pub last_modified_ms: i64,
    /// The bytes.
    pub blob: BlobMeta,
    /// Checksums by algorithm name.
    pub checksums: BTreeMap<String, String>,
}

/// A topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicRecord {
    /// Topic name.
    pub name: String,
    /// Stable topic id (Kafka's topic UUID).
    pub id: u128,
    /// Partition count.
    pub partitions: u32,
    /// Topic configs that differ from the defaults.
    pub configs: BTreeMap<String, String>,
    /// Creation time, ms since the epoch.
    pub created_ms: i64,
}

impl TopicRecord {
    /// Whether the topic has partition `p` (a Kafka partition index, so possibly negative).
    pub fn has_partition(&self, p: i32) -> bool {
        u32::try_from(p).is_ok_and(|p| p < self.partitions)
    }
}

/// The state of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PartitionState {
    /// The offset the next record gets (= high watermark: only committed data exists).
    pub next_offset: u64,
    /// The first offset still readable.
    pub log_start_offset: u64,
    /// Bytes of stored batches.
    pub bytes: u64,
}

/// Where log compaction stands in one partition (`cleanup.policy=compact`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompactionState {
    /// Offsets below this have been cleaned: every record there that a later record of
    /// the same key superseded is gone (Kafka's "first dirty offset").
    pub cleaned_to: u64,
    /// Passes committed so far; a pass names the count it was planned on, so two passes
    /// never both build on the same state.
    pub passes: u64,
    /// When compaction first reached each cleaned range, ascending by `end`: the
    /// tombstones of a range stay readable `delete.retention.ms` from then.
    pub horizons: Vec<Horizon>,
}

/// One cleaned offset range's first-reached time (see [`CompactionState::horizons`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Horizon {
    /// The range ends before this offset (it starts at the previous horizon's end).
    pub end: u64,
    /// When the pass that first cleaned it ran (ms since the epoch).
    pub reached_ms: i64,
    /// Tombstones the range still holds.
    pub tombstones: u64,
}

/// A stored Kafka record batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBatch {
    /// Offset of its first record.
    pub base_offset: u64,
    /// Offset of its last record.
    pub last_offset: u64,
    /// Its largest timestamp.
    pub max_timestamp: i64,
    /// The batch as stored (base offset field rewritten).
    pub bytes: bytes::Bytes,
}

/// What the broker remembers of an idempotent producer on one partition: its epoch and
/// its last five batches, so retries are recognised as duplicates.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProducerState {
    /// Current epoch.
    pub epoch: i16,
    /// Recent batches, oldest first: (first sequence, last sequence, base offset).
    pub recent: Vec<(i32, i32, u64)>,
}

/// Batches an idempotent producer's state remembers per partition.
pub const PRODUCER_RECENT_BATCHES: usize = 5;

impl ProducerState {
    /// Checks a batch against this state (`None`: a producer never seen here).
    pub fn check(state: Option<&Self>, batch: &ProducerBatch) -> Result<(), crate::CatalogError> {
        use crate::CatalogError;
        let Some(st) = state else {
            return if batch.first_sequence == 0 {
                Ok(())
            } else {
                Err(CatalogError::OutOfOrderSequence)
            };
        };
        if batch.epoch < st.epoch {
            return Err(CatalogError::ProducerFenced);
        }
        if batch.epoch > st.epoch {
            return if batch.first_sequence == 0 {
                Ok(())
            } else {
                Err(CatalogError::OutOfOrderSequence)
            };
        }
        if let Some(&(_, _, base)) = st
            .recent
            .iter()
            .find(|(f, l, _)| *f == batch.first_sequence && *l == batch.last_sequence)
        {
            return Err(CatalogError::DuplicateSequence { base_offset: base });
        }
        let expected = st
            .recent
            .last()
            .map_or(0, |(_, l, _)| l.wrapping_add(1) & i32::MAX);
        if batch.first_sequence == expected {
            Ok(())
        } else {
            Err(CatalogError::OutOfOrderSequence)
        }
    }

    /// Records an accepted batch.
    pub fn record(&mut self, batch: &ProducerBatch, base_offset: u64) {
        if batch.epoch != self.epoch {
            self.epoch = batch.epoch;
            self.recent.clear();
        }
        self.recent
            .push((batch.first_sequence, batch.last_sequence, base_offset));
        if self.recent.len() > PRODUCER_RECENT_BATCHES {
            self.recent.remove(0);
        }
    }
}

/// A batch's offsets and timestamp, without its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchInfo {
    /// Offset of its first record.
    pub base_offset: u64,
    /// Offset of its last record.
    pub last_offset: u64,
    /// Its largest timestamp.
    pub max_timestamp: i64,
    /// Its length in bytes.
    pub len: u32,
}

/// A committed consumer-group offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetRecord {
    /// Next offset to consume.
    pub offset: i64,
    /// Leader epoch the client saw (-1 when unknown).
    pub leader_epoch: i32,
    /// Client metadata, returned as committed.
    pub metadata: Option<String>,
    /// Commit time, ms since the epoch.
    pub commit_ms: i64,
}

/// A consumer group's durable state, owned by the broker's group coordinator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRecord {
    /// Group id.
    pub name: String,
    /// Encoded coordinator state.
    pub state: Vec<u8>,
}

/// A share partition's state as the broker encodes it (opaque to the catalog): one per
/// (share group, topic id, partition) in table `share_states`, removed with its group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareStateRecord {
    /// The broker's encoding, its first byte the broker's own version (like
    /// [`GroupRecord::state`]).
    pub state: Vec<u8>,
}

/// Where a topic's Iceberg table stands: its current metadata file and, per partition,
/// the first offset not yet in a data file. Owned by the tables front end; the catalog
/// only keeps it consistent with the topic (dropped, with the table's objects, when the
/// topic is deleted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicTable {
    /// Id of the topic the table belongs to (a re-created topic gets a new table).
    pub topic_id: u128,
    /// Bumped by every change; a change names the generation it was built on.
    pub generation: u64,
    /// Bucket that holds the table's files.
    pub bucket: String,
    /// Key prefix of every file of the table (ends with `/`).
    pub prefix: String,
    /// Location of the current `metadata.json` (`s3://bucket/key`).
    pub metadata_location: String,
    /// Per partition: the first offset not yet in a data file.
    pub tabled: Vec<u64>,
    /// Per partition: the first offset the table shows (it follows the log start
    /// offset that DeleteRecords and retention move).
    pub start: Vec<u64>,
}

/// A topic's expansion of one source column (its key or value) into the rows of a table
/// outside `kafka_topics`, as a history of versions: each takes effect, per partition, at
/// the offset the partition had reached when it was made, so every record is expanded by
/// the version that was current when it was committed. Owned by the tables front end,
/// which writes the target rows in the same transaction as the topic-table snapshot that
/// holds their records; the catalog keeps it consistent with the topic (it refuses to
/// delete a topic with a live expansion, and to remove records not yet expanded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    /// The topic it expands (a re-created topic has none).
    pub topic_id: u128,
    /// Bumped by every change; a change names the count it was built on.
    pub changes: u64,
    /// In the order they were made; the last one is current. Versions every partition's
    /// table has passed are pruned.
    pub versions: Vec<ExpansionVersion>,
}

impl Expansion {
    /// The current spec (none once the expansion was dropped).
    pub fn current(&self) -> Option<&ExpansionSpec> {
        self.versions.last().and_then(|v| v.spec.as_ref())
    }

    /// The version that expands `offset` of `partition` (none before the first version).
    pub fn version_at(&self, partition: u32, offset: u64) -> Option<&ExpansionVersion> {
        self.versions
            .iter()
            .rev()
            .find(|v| v.from(partition) <= offset)
    }

    /// The first offset of `partition` after `offset` at which another version takes
    /// effect.
    pub fn next_boundary(&self, partition: u32, offset: u64) -> Option<u64> {
        self.versions
            .iter()
            .map(|v| v.from(partition))
            .filter(|f| *f > offset)
            .min()
    }
}

/// One version of an expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpansionVersion {
    /// Per partition: the first offset it expands (a partition added later starts at 0).
    pub from: Vec<u64>,
    /// What it does; none: records from here are not expanded (the expansion was dropped).
    pub spec: Option<ExpansionSpec>,
    /// Per partition: the next offset below `from` still to expand once (a backfill of
    /// records committed before the version); empty when none was asked for.
    pub backfill: Vec<u64>,
}

impl ExpansionVersion {
    /// The first offset of `partition` this version expands.
    pub fn from(&self, partition: u32) -> u64 {
        self.from.get(partition as usize).copied().unwrap_or(0)
    }
}

/// What an expansion version does: where its rows go, how records are parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpansionSpec {
    /// Namespace of the target table.
    pub namespace: String,
    /// Name of the target table.
    pub table: String,
    /// Source format (`json`).
    pub format: String,
    /// The expansion schema: an Iceberg struct type in the REST catalog's JSON form.
    pub schema: String,
    /// Struct fields become top-level columns named with `flatten_delimiter`.
    pub flatten_path: bool,
    /// Joins flattened names.
    pub flatten_delimiter: String,
    /// The raw source bytes as a column.
    pub copy_source_column: bool,
    /// An `_missing_values` column.
    pub missing_values_output: bool,
    /// An `_excess_values` column.
    pub excess_values_output: bool,
}

/// An Iceberg table or view outside `kafka_topics` (an expansion's target, or a user's
/// own table or view): its current metadata file. An expansion's target outlives the
/// expansions that write into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRecord {
    /// Bumped by every change; a change names the generation it was built on.
    pub generation: u64,
    /// Bucket that holds the table's files.
    pub bucket: String,
    /// Key prefix of every file of the table (ends with `/`).
    pub prefix: String,
    /// Location of the current `metadata.json` (`s3://bucket/key`).
    pub metadata_location: String,
}

/// A namespace of users' Iceberg tables and views, made through the REST catalog: who
/// made it (who may do anything in it when no policy says otherwise) and its properties.
/// Namespaces of expansions' target tables have none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceRecord {
    /// Bumped by every change, and by every table or view created in it (so a create
    /// and a drop of the namespace never both commit); a change names the generation it
    /// was built on.
    pub generation: u64,
    /// The user who made it.
    pub owner: String,
    /// Its properties (`location` among them).
    pub properties: BTreeMap<String, String>,
}

/// How far a partition's records are expanded: the first offset that an expansion of the
/// topic (`expansions`, its table `table`) still has to read, below which records may be
/// removed; none when the topic has no expansion. Records reach an expansion with the
/// topic table's snapshots, so this is the table's tabled offset, or less while a
/// backfill has not read older records yet.
pub fn expanded_to(
    expansions: &[(String, Expansion)],
    table: Option<&TopicTable>,
    topic_id: u128,
    partition: u32,
) -> Option<u64> {
    if expansions.is_empty() {
        return None;
    }
    let mut floor = table
        .filter(|t| t.topic_id == topic_id)
        .and_then(|t| t.tabled.get(partition as usize).copied())
        .unwrap_or(0);
    for (_, e) in expansions {
        for v in &e.versions {
            if let Some(b) = v.backfill.get(partition as usize)
                && *b < v.from(partition)
            {
                floor = floor.min(*b);
            }
        }
    }
    Some(floor)
}

/// Where a transactional id stands, as the catalog keeps it (store format 4). The
/// coordinator's `Prepare*` states are never stored: one EndTxn's markers, offsets and
/// new state are one catalog transaction, so a crash leaves the state before it or after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TxnPhase {
    /// A producer id and epoch, no transaction open.
    #[default]
    Empty,
    /// A transaction is open.
    Ongoing,
    /// The last transaction committed.
    CompleteCommit,
    /// The last transaction aborted.
    CompleteAbort,
}

/// One transactional id's coordinator state (store format 4, table `txns`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TxnRecord {
    /// Producer id.
    pub producer_id: i64,
    /// Current epoch.
    pub epoch: i16,
    /// `transaction.timeout.ms` the producer asked for.
    pub timeout_ms: u32,
    /// Where it stands.
    pub phase: TxnPhase,
    /// Partitions of the open transaction, by topic name.
    pub partitions: Vec<(String, u32)>,
    /// Groups whose offsets the open transaction holds.
    pub groups: Vec<String>,
    /// When the open transaction began (ms since the epoch; -1: none open).
    pub started_ms: i64,
    /// Last change (ms since the epoch).
    pub updated_ms: i64,
}

impl TxnRecord {
    /// Whether `producer_id`/`epoch` may write in the open transaction.
    pub fn is_open_for(&self, producer_id: i64, epoch: i16) -> bool {
        self.phase == TxnPhase::Ongoing && self.producer_id == producer_id && self.epoch == epoch
    }
}

/// A transaction's first offset in a partition it has written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenTxn {
    /// Producer id.
    pub producer_id: i64,
    /// Offset of its first batch in the partition.
    pub first_offset: u64,
}

/// A partition's transactions (store format 4, table `txn_partitions`): the open ones,
/// whose first offsets bound the last stable offset, and the longest span of an aborted
/// one, which bounds how far back of a fetch an aborted transaction can start.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TxnPartition {
    /// Open transactions, at most one per producer.
    pub open: Vec<OpenTxn>,
    /// The largest `last_offset - first_offset` of an aborted transaction kept.
    pub max_aborted_span: u64,
}

impl TxnPartition {
    /// The last stable offset of a partition whose next offset is `next_offset`: the
    /// first offset of its earliest open transaction, or the end.
    pub fn last_stable_offset(&self, next_offset: u64) -> u64 {
        self.open
            .iter()
            .map(|o| o.first_offset)
            .min()
            .unwrap_or(next_offset)
            .min(next_offset)
    }
}

/// An aborted transaction in one partition (table `aborted_txns`, keyed by its marker's
/// offset): read_committed consumers drop its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    /// Producer id.
    pub producer_id: i64,
    /// Offset of its first batch in the partition.
    pub first_offset: u64,
    /// Offset of its abort marker.
    pub last_offset: u64,
}

/// Who a client quota applies to (Kafka's quota entity): each part is absent (not part
/// of the entity), the default of its kind (`Some(None)`) or one name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct QuotaEntity {
    /// `user`: a principal name.
    pub user: Option<Option<String>>,
    /// `client-id`.
    pub client_id: Option<Option<String>>,
    /// `ip`: a client address (connection-rate quotas).
    pub ip: Option<Option<String>>,
}

/// An entity's client quotas (table `client_quotas`), by Kafka's quota keys
/// (`producer_byte_rate`, `consumer_byte_rate`, `request_percentage`, ...).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClientQuotas {
    /// The entity.
    pub entity: QuotaEntity,
    /// Values by key.
    pub values: BTreeMap<String, f64>,
}

/// A SCRAM hash (table `users`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    /// SCRAM-SHA-256.
    Sha256,
    /// SCRAM-SHA-512.
    Sha512,
}

/// One stored SCRAM credential (RFC 5802): what a server needs to check a proof and
/// prove itself, never the password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramCredential {
    /// Its hash.
    pub mechanism: ScramMechanism,
    /// The salt.
    pub salt: Vec<u8>,
    /// PBKDF2 iterations (at least 4096).
    pub iterations: u32,
    /// H(HMAC(SaltedPassword, "Client Key")).
    pub stored_key: Vec<u8>,
    /// HMAC(SaltedPassword, "Server Key").
    pub server_key: Vec<u8>,
}

/// An Eddy user (table `users`, keyed by name, which is also its S3 access key and its
/// Kafka principal).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserRecord {
    /// The name.
    pub name: String,
    /// The S3 secret access key, kept as written: SigV4 signs with it, so a server must
    /// have it (absent: the user has no S3 access).
    pub s3_secret: Option<String>,
    /// Its SCRAM credentials, at most one per mechanism (a PLAIN password is checked
    /// against them).
    pub scram: Vec<ScramCredential>,
    /// Whether the config file made it (it is then made again from the config at each
    /// start; users made by the CLI or by Kafka clients are kept as they are).
    pub from_config: bool,
}

/// A named identity policy (table `policies`): the IAM JSON document as it was put, and
/// the principals it is attached to (user names, `ANONYMOUS`, or `*` for everyone).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PolicyRecord {
    /// The name.
    pub name: String,
    /// The document (validated when put).
    pub document: String,
    /// Who it applies to.
    pub attached: Vec<String>,
}

/// A bucket's resource policy (table `bucket_policies`, keyed by bucket name; removed
/// with the bucket).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BucketPolicy {
    /// The bucket.
    pub bucket: String,
    /// The document (validated when put).
    pub document: String,
}

/// Which bucket sub-resource a [`BucketConfig`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BucketConfigKind {
    /// The lifecycle configuration (`?lifecycle`).
    Lifecycle,
    /// The CORS configuration (`?cors`).
    Cors,
}

impl BucketConfigKind {
    /// The byte that ends its key in table `bucket_configs` (format 7's variant index).
    pub fn tag(self) -> u8 {
        match self {
            Self::Lifecycle => 0,
            Self::Cors => 1,
        }
    }
}

/// A bucket sub-resource's configuration (table `bucket_configs`, keyed by
/// [`BucketConfig::key`]; removed with the bucket): the S3 XML document as the gateway
/// validated and re-serialized it, so its meaning is S3's schema, not a Rust type's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketConfig {
    /// The bucket.
    pub bucket: String,
    /// Which configuration.
    pub kind: BucketConfigKind,
    /// The XML document.
    pub document: String,
}

impl BucketConfig {
    /// Its key: the bucket's name, a NUL (no bucket name holds one), the kind's tag.
    pub fn key(bucket: &str, kind: BucketConfigKind) -> Vec<u8> {
        let mut k = Vec::with_capacity(bucket.len() + 2);
        k.extend_from_slice(bucket.as_bytes());
        k.push(0);
        k.push(kind.tag());
        k
    }
}

impl StoredBatch {
    /// The producer id of a transactional data batch (`None` for any other batch): the
    /// attributes' transactional bit (4) set and the control bit (5) clear.
    pub fn transactional_producer(&self) -> Option<i64> {
        let attributes = *self.bytes.get(22)?;
        if attributes & (1 << 4) == 0 || attributes & (1 << 5) != 0 {
            return None;
        }
        self.bytes
            .get(43..51)
            .and_then(|p| p.try_into().ok())
            .map(i64::from_be_bytes)
    }

    /// Whether this is a batch of one of the `aborted` transactions.
    pub fn is_aborted(&self, aborted: &[AbortedTxn]) -> bool {
        if aborted.is_empty() {
            return false;
        }
        self.transactional_producer().is_some_and(|producer| {
            aborted.iter().any(|a| {
                a.producer_id == producer
                    && a.first_offset <= self.base_offset
                    && self.base_offset < a.last_offset
            })
        })
    }
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

/// Where the newest checkpoint is (`crate::checkpoint` writes and reads it).
#[derive(Debug, Clone, Copy)]
pub struct CheckpointPointer {
    /// The last log record the checkpoint includes.
    pub lsn: u64,
    /// The dump.
    pub blob: BlobMeta,
}

/// Where a function pipeline stands (`eddy pipeline get`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PipelineStatus {
    /// Stored, never deployed.
    Draft,
    /// A revision is being deployed (instances starting, topics being made).
    InProgress,
    /// The deployed revision runs.
    Ready,
    /// The deployed revision failed; the record's reason says why.
    Error,
    /// Being deleted: its instances stop, then the record goes.
    Deleting,
}

impl PipelineStatus {
    /// Its name as the CLI and the admin API show it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Draft => "Draft",
            Self::InProgress => "InProgress",
            Self::Ready => "Ready",
            Self::Error => "Error",
            Self::Deleting => "Deleting",
        }
    }
}

/// One stored revision of a pipeline's definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineRevision {
    /// Its number, from 1, never reused.
    pub number: u64,
    /// The definition as JSON, as the pipelines crate validated and re-serialized it (its
    /// meaning is that crate's schema, as a bucket configuration's is S3's).
    pub document: String,
    /// When it was stored, in ms since the epoch.
    pub created_ms: i64,
}

/// A function pipeline (table `pipelines`, keyed by name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineRecord {
    /// Its name.
    pub name: String,
    /// How many times the record changed (the precondition of the next change).
    pub changes: u64,
    /// Its newest revisions, oldest first (the deployed one is always kept).
    pub revisions: Vec<PipelineRevision>,
    /// The revision that runs (none: a draft).
    pub deployed: Option<u64>,
    /// Where it stands.
    pub status: PipelineStatus,
    /// Why (the failing part's own message in `Error`).
    pub reason: String,
    /// When the status last changed, in ms since the epoch.
    pub status_ms: i64,
}

impl PipelineRecord {
    /// The newest revision's number (0: none).
    pub fn latest(&self) -> u64 {
        self.revisions.last().map_or(0, |r| r.number)
    }

    /// A stored revision.
    pub fn revision(&self, number: u64) -> Option<&PipelineRevision> {
        self.revisions.iter().find(|r| r.number == number)
    }
}

/// How far one cursor of a pipeline (a link over one partition of its source, or a
/// schedule's ticks) has gone: the next offset (or tick) it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PipelinePosition {
    /// The next offset (or tick, in seconds since the epoch) not yet handed on.
    pub next: u64,
}

/// A schema of the schema registry (table `schemas`, keyed by its id, big-endian u32). A
/// schema is never removed or changed once stored, so its id means the same schema for
/// as long as the store lives, whatever happens to the subjects that used it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaRecord {
    /// `AVRO`, `PROTOBUF` or `JSON`.
    pub schema_type: String,
    /// The schema's text as the registry normalised it.
    pub schema: String,
    /// Schemas it imports, by the name it imports them under.
    pub references: Vec<SchemaReference>,
    /// What the registry identifies it by (a hash of its type, text and references):
    /// the same schema registered again, under any subject, gets the same id.
    pub fingerprint: Vec<u8>,
}

/// A schema imported by another: the name the importing schema uses for it, and the
/// subject version that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaReference {
    /// The name it is imported under (an Avro full name, a `.proto` file name, a URL).
    pub name: String,
    /// The subject it is registered under.
    pub subject: String,
    /// The subject's version.
    pub version: u32,
}

/// A subject of the schema registry (table `schema_subjects`, keyed by its name; the
/// empty key holds the registry's own settings): its versions and settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubjectRecord {
    /// Bumped by every change; a change names the count it was built on.
    pub changes: u64,
    /// Its versions, ascending; soft-deleted ones stay until deleted permanently.
    pub versions: Vec<SubjectVersion>,
    /// Its compatibility level, when set (otherwise the registry's).
    pub compatibility: Option<String>,
    /// Its mode (`READWRITE`, `READONLY`, `IMPORT`), when set (otherwise the registry's).
    pub mode: Option<String>,
}

/// One version of a subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectVersion {
    /// Its number, from 1, never reused while the subject keeps any version.
    pub version: u32,
    /// The schema it is.
    pub id: u32,
    /// Soft-deleted: hidden from reads unless deleted ones are asked for.
    pub deleted: bool,
}
