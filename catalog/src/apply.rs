//! Checking and applying operations inside one write transaction of the embedded store.
//! `check` runs for every operation of a transaction before any is applied, so a
//! transaction either applies whole or not at all; `apply` is deterministic, which is
//! what lets recovery replay the log into the same state.

use storage::BlobMeta;
use storage::wal::LogPosition;

use crate::error::{CatalogError, CatalogResult};
use crate::format::Stored;
use crate::kv::{KvWrite, Range};
use crate::model::{
    AbortedTxn, BucketConfig, BucketConfigKind, BucketRecord, CompactionState, Expansion, LockMode,
    ObjectVersion, OffsetRecord, PartRecord, PartitionState, ProducerState, Retention, TableRecord,
    TopicRecord, TopicTable, TxnPartition, TxnRecord, UploadRecord,
};
use crate::tables::{self, *};
use crate::txn::{Op, OpOutcome};

/// Longest S3 key, in bytes.
pub const MAX_KEY_LEN: usize = 1024;

/// Encodes a record in the store's format.
pub fn enc<T: Stored>(v: &T) -> CatalogResult<Vec<u8>> {
    v.encode()
}

/// Decodes a record of the store's format.
pub fn dec<T: Stored>(b: &[u8]) -> CatalogResult<T> {
    T::decode(b)
}

/// The catalog's rules, applied through one backend's write transaction for the length of
/// one group commit.
pub struct Tables<'s> {
    s: &'s mut dyn KvWrite,
}

/// Side effects to carry out once the commit is durable.
#[derive(Debug, Default)]
pub struct Effects {
    /// Blobs no longer referenced.
    pub freed_blobs: Vec<BlobMeta>,
}

/// The data section of the log record being built: appended batches go here (base
/// offset already rewritten), and their index entries point at it.
pub struct LogCursor {
    /// Where the record will be.
    pub position: LogPosition,
    /// Batch bytes, in append order.
    pub data: Vec<u8>,
    /// Whether to copy bytes (false when replaying: they are in the log already).
    pub collect: bool,
    len: u64,
}

impl LogCursor {
    /// An empty data section for the record at `position`.
    pub fn new(position: LogPosition, collect: bool) -> Self {
        Self {
            position,
            data: Vec::new(),
            collect,
            len: 0,
        }
    }

    /// Adds a batch with its base offset rewritten; returns its offset in the payload.
    fn push(&mut self, batch: &[u8], base_offset: u64) -> u64 {
        let at = self.len;
        if self.collect {
            self.data.extend_from_slice(batch);
            let start = at as usize;
            self.data[start..start + 8].copy_from_slice(&(base_offset as i64).to_be_bytes());
        }
        self.len += batch.len() as u64;
        at
    }
}

fn get<T: Stored>(s: &mut dyn KvWrite, t: Table, key: &[u8]) -> CatalogResult<Option<T>> {
    s.get(t, key)?.map(|v| dec(&v)).transpose()
}

fn put<T: Stored>(s: &mut dyn KvWrite, t: Table, key: &[u8], v: &T) -> CatalogResult<()> {
    s.put(t, key, enc(v)?.as_slice())
}

fn has_prefix(s: &mut dyn KvWrite, t: Table, prefix: &[u8]) -> CatalogResult<bool> {
    let end = prefix_end(prefix);
    Ok(!s.range(t, Range::prefix(prefix, &end).take(1))?.is_empty())
}

/// Removes every key starting with `prefix`, calling `each` on the values.
fn remove_prefix(
    s: &mut dyn KvWrite,
    t: Table,
    prefix: &[u8],
    mut each: impl FnMut(&[u8]) -> CatalogResult<()>,
) -> CatalogResult<()> {
    let end = prefix_end(prefix);
    for (k, v) in s.range(t, Range::prefix(prefix, &end))? {
        each(&v)?;
        s.remove(t, &k)?;
    }
    Ok(())
}

/// All versions of one key, newest first, with their table keys.
fn versions_of(
    s: &mut dyn KvWrite,
    t: Table,
    bucket: &str,
    key: &str,
) -> CatalogResult<Vec<(Vec<u8>, ObjectVersion)>> {
    let prefix = versions_prefix(bucket, key);
    let end = prefix_end(&prefix);
    s.range(t, Range::prefix(&prefix, &end))?
        .into_iter()
        .map(|(k, v)| Ok((k, dec(&v)?)))
        .collect()
}

fn find_version(
    s: &mut dyn KvWrite,
    t: Table,
    bucket: &str,
    key: &str,
    version_id: Option<&str>,
) -> CatalogResult<Option<(Vec<u8>, ObjectVersion)>> {
    let versions = versions_of(s, t, bucket, key)?;
    Ok(match version_id {
        Some(id) => versions.into_iter().find(|(_, v)| v.version_id == id),
        None => versions
            .into_iter()
            .next()
            .filter(|(_, v)| !v.delete_marker),
    })
}

fn entry(v: &[u8]) -> CatalogResult<tables::BatchEntry> {
    tables::BatchEntry::decode(v).ok_or_else(|| CatalogError::Corrupt("batch index entry".into()))
}

fn locked(bucket: &str, key: &str, version_id: &str) -> CatalogError {
    CatalogError::ObjectLocked(format!("{bucket}/{key} version {version_id}"))
}

/// Whether replacing retention `old` with `new` protects the version less: removed, ended
/// sooner, or compliance turned into governance.
fn weakens(old: &Retention, new: Option<&Retention>) -> bool {
    new.is_none_or(|n| {
        n.until_ms < old.until_ms
            || (old.mode == LockMode::Compliance && n.mode == LockMode::Governance)
    })
}

fn no_such_key(bucket: &str, key: &str) -> CatalogError {
    CatalogError::NoSuchKey {
        bucket: bucket.into(),
        key: key.into(),
    }
}

impl<'s> Tables<'s> {
    /// The rules over one write transaction.
    pub fn new(s: &'s mut dyn KvWrite) -> Self {
        Self { s }
    }

    /// Reads a meta counter.
    pub fn counter(&mut self, name: &[u8]) -> CatalogResult<u64> {
        Ok(self
            .s
            .get(META, name)?
            .and_then(|v| v.as_slice().try_into().ok().map(u64::from_be_bytes))
            .unwrap_or(0))
    }

    /// Sets a meta counter.
    pub fn set_counter(&mut self, name: &[u8], value: u64) -> CatalogResult<()> {
        self.s.put(META, name, value.to_be_bytes().as_slice())?;
        Ok(())
    }

    fn bucket(&mut self, name: &str) -> CatalogResult<Option<BucketRecord>> {
        get(self.s, BUCKETS, name.as_bytes())
    }

    fn topic(&mut self, name: &str) -> CatalogResult<Option<TopicRecord>> {
        get(self.s, TOPICS, name.as_bytes())
    }

    fn partition(&mut self, topic_id: u128, p: u32) -> CatalogResult<Option<PartitionState>> {
        get(self.s, PARTITIONS, &partition_key(topic_id, p))
    }

    fn require_bucket(&mut self, name: &str) -> CatalogResult<()> {
        match self.bucket(name)? {
            Some(_) => Ok(()),
            None => Err(CatalogError::NoSuchBucket(name.into())),
        }
    }

    fn require_upload(&mut self, bucket: &str, key: &str, upload_id: &str) -> CatalogResult<()> {
        let u: Option<UploadRecord> = get(self.s, UPLOADS, &upload_key(bucket, key, upload_id))?;
        match u {
            Some(_) => Ok(()),
            None => Err(CatalogError::NoSuchUpload(upload_id.into())),
        }
    }

    fn parts_of(&mut self, upload_id: &str) -> CatalogResult<Vec<PartRecord>> {
        let prefix = parts_prefix(upload_id);
        let end = prefix_end(&prefix);
        self.s
            .range(PARTS, Range::prefix(&prefix, &end))?
            .iter()
            .map(|(_, v)| dec(v))
            .collect()
    }

    /// A topic's expansions, by source column.
    fn expansions_of(&mut self, topic: &str) -> CatalogResult<Vec<(String, Expansion)>> {
        let prefix = expansions_prefix(topic);
        let end = prefix_end(&prefix);
        let mut out = Vec::new();
        for (k, v) in self.s.range(EXPANSIONS, Range::prefix(&prefix, &end))? {
            let source = expansion_source(topic, &k).unwrap_or_default();
            out.push((source, dec(&v)?));
        }
        Ok(out)
    }

    /// Refuses to remove records of a partition from `offset` on while the topic has an
    /// expansion whose table has not read them: an expansion keeps every record it was
    /// attached for, so the log keeps them until the table holds them.
    fn require_expanded(
        &mut self,
        topic_id: u128,
        partition: u32,
        offset: u64,
    ) -> CatalogResult<()> {
        let Some(name) = self.s.get(TOPIC_IDS, topic_id.to_be_bytes().as_slice())? else {
            return Ok(());
        };
        let topic = String::from_utf8_lossy(&name).into_owned();
        let expansions = self.expansions_of(&topic)?;
        let table: Option<TopicTable> = get(self.s, TOPIC_TABLES, topic.as_bytes())?;
        let Some(floor) =
            crate::model::expanded_to(&expansions, table.as_ref(), topic_id, partition)
        else {
            return Ok(());
        };
        if offset > floor {
            return Err(CatalogError::NotExpanded {
                topic,
                partition,
                tabled: floor,
            });
        }
        Ok(())
    }

    fn require_partition(&mut self, topic_id: u128, p: u32) -> CatalogResult<PartitionState> {
        self.partition(topic_id, p)?
            .ok_or_else(|| CatalogError::UnknownPartition {
                topic: format!("{topic_id:032x}"),
                partition: p,
            })
    }

    /// Checks that `op` can apply to the current state.
    pub fn check(&mut self, op: &Op) -> CatalogResult<()> {
        match op {
            Op::CreateBucket(b) => {
                if b.name.is_empty() || b.name.len() > 255 {
                    return Err(CatalogError::Invalid(format!("bucket name {:?}", b.name)));
                }
                if self.bucket(&b.name)?.is_some() {
                    return Err(CatalogError::BucketExists(b.name.clone()));
                }
            }
            Op::ReplaceBucket { expected, record } => {
                if record.name != expected.name {
                    return Err(CatalogError::Invalid(format!(
                        "bucket {} cannot become {}",
                        expected.name, record.name
                    )));
                }
                self.require_bucket(&expected.name)?;
                if self.bucket(&expected.name)?.as_ref() != Some(expected) {
                    return Err(CatalogError::PreconditionFailed(format!(
                        "bucket {} changed",
                        expected.name
                    )));
                }
            }
            Op::DeleteBucket { name } => {
                self.require_bucket(name)?;
                if has_prefix(self.s, VERSIONS, &bucket_prefix(name))? {
                    return Err(CatalogError::BucketNotEmpty(name.clone()));
                }
            }
            Op::PutObject {
                bucket,
                key,
                version,
                replace_null,
            } => {
                self.require_bucket(bucket)?;
                if key.is_empty() || key.len() > MAX_KEY_LEN || key.contains('\0') {
                    return Err(CatalogError::InvalidKey(key.clone()));
                }
                if *replace_null
                    && let Some((_, null)) =
                        find_version(self.s, VERSIONS, bucket, key, Some("null"))?
                    && null.lock.protects(version.last_modified_ms, false)
                {
                    return Err(locked(bucket, key, "null"));
                }
            }
            Op::SetObjectTags {
                bucket,
                key,
                version_id,
                ..
            } => {
                self.require_bucket(bucket)?;
                if find_version(self.s, VERSIONS, bucket, key, version_id.as_deref())?
                    .is_none_or(|(_, v)| v.delete_marker)
                {
                    return Err(no_such_key(bucket, key));
                }
            }
            Op::DeleteObjectVersion {
                bucket,
                key,
                version_id,
            } => {
                self.require_bucket(bucket)?;
                match find_version(self.s, VERSIONS, bucket, key, Some(version_id))? {
                    None => return Err(no_such_key(bucket, key)),
                    // A legal hold needs no clock to judge; retention is judged by the
                    // `ExpectUnlocked` guard every removal carries.
                    Some((_, v)) if v.lock.legal_hold => {
                        return Err(locked(bucket, key, version_id));
                    }
                    Some(_) => {}
                }
            }
            Op::ExpectUnlocked {
                bucket,
                key,
                version_id,
                now_ms,
                bypass_governance,
            } => {
                self.require_bucket(bucket)?;
                if let Some((_, v)) = find_version(self.s, VERSIONS, bucket, key, Some(version_id))?
                    && v.lock.protects(*now_ms, *bypass_governance)
                {
                    return Err(locked(bucket, key, version_id));
                }
            }
            Op::SetObjectRetention {
                bucket,
                key,
                version_id,
                retention,
                now_ms,
                bypass_governance,
            } => {
                self.require_bucket(bucket)?;
                let Some((_, v)) = find_version(self.s, VERSIONS, bucket, key, Some(version_id))?
                else {
                    return Err(no_such_key(bucket, key));
                };
                if v.delete_marker {
                    return Err(no_such_key(bucket, key));
                }
                if let Some(old) = v.lock.retention
                    && old.until_ms > *now_ms
                    && weakens(&old, retention.as_ref())
                    && !(old.mode == LockMode::Governance && *bypass_governance)
                {
                    return Err(locked(bucket, key, version_id));
                }
            }
            Op::SetObjectLegalHold {
                bucket,
                key,
                version_id,
                ..
            } => {
                self.require_bucket(bucket)?;
                if find_version(self.s, VERSIONS, bucket, key, Some(version_id))?
                    .is_none_or(|(_, v)| v.delete_marker)
                {
                    return Err(no_such_key(bucket, key));
                }
            }
            Op::ExpectEtag { bucket, key, etag } => {
                self.require_bucket(bucket)?;
                let current: Option<ObjectVersion> =
                    get(self.s, OBJECTS, &object_key(bucket, key))?;
                let actual = current.as_ref().map(|v| v.etag.as_str());
                if actual != etag.as_deref() {
                    return Err(CatalogError::PreconditionFailed(format!(
                        "{bucket}/{key}: etag is {actual:?}, expected {etag:?}"
                    )));
                }
            }
            Op::CreateUpload(u) => {
                self.require_bucket(&u.bucket)?;
                if u.key.is_empty() || u.key.len() > MAX_KEY_LEN || u.key.contains('\0') {
                    return Err(CatalogError::InvalidKey(u.key.clone()));
                }
                if u.upload_id.is_empty()
                    || self
                        .s
                        .get(
                            UPLOADS,
                            upload_key(&u.bucket, &u.key, &u.upload_id).as_slice(),
                        )?
                        .is_some()
                {
                    return Err(CatalogError::Invalid(format!("upload id {}", u.upload_id)));
                }
            }
            Op::PutPart {
                bucket,
                key,
                upload_id,
                part,
            } => {
                self.require_upload(bucket, key, upload_id)?;
                if !(1..=10_000).contains(&part.part_number) {
                    return Err(CatalogError::Invalid(format!(
                        "part number {}",
                        part.part_number
                    )));
                }
            }
            Op::DeleteUpload {
                bucket,
                key,
                upload_id,
                keep,
            } => {
                self.require_upload(bucket, key, upload_id)?;
                if !keep.is_empty() {
                    let parts = self.parts_of(upload_id)?;
                    for b in keep {
                        if !parts.iter().any(|p| p.blob.id == b.id) {
                            return Err(CatalogError::InvalidPart(format!(
                                "blob {} is no longer a part of upload {upload_id}",
                                b.id
                            )));
                        }
                    }
                }
            }
            Op::CreateTopic(t) => {
                if t.name.is_empty() || t.partitions == 0 {
                    return Err(CatalogError::Invalid(format!(
                        "topic {:?} with {} partitions",
                        t.name, t.partitions
                    )));
                }
                if self.topic(&t.name)?.is_some()
                    || self
                        .s
                        .get(TOPIC_IDS, t.id.to_be_bytes().as_slice())?
                        .is_some()
                {
                    return Err(CatalogError::TopicExists(t.name.clone()));
                }
            }
            Op::UpdateTopic(t) => match self.topic(&t.name)? {
                Some(old) if old.id == t.id && t.partitions >= old.partitions => {}
                Some(old) if old.id == t.id => {
                    return Err(CatalogError::Invalid(format!(
                        "topic {} cannot shrink from {} to {} partitions",
                        t.name, old.partitions, t.partitions
                    )));
                }
                _ => return Err(CatalogError::UnknownTopic(t.name.clone())),
            },
            Op::DeleteTopic { name } => {
                if self.topic(name)?.is_none() {
                    return Err(CatalogError::UnknownTopic(name.clone()));
                }
                for (source, e) in self.expansions_of(name)? {
                    if let Some(spec) = e.current() {
                        return Err(CatalogError::TopicHasExpansion {
                            topic: name.clone(),
                            column: source,
                            target: format!("{}.{}", spec.namespace, spec.table),
                        });
                    }
                }
            }
            Op::Append {
                topic_id,
                partition,
                offset_count,
                batch,
                producer,
                transactional_id,
                ..
            } => {
                self.require_partition(*topic_id, *partition)?;
                if batch.len() < 8 || *offset_count == 0 {
                    return Err(CatalogError::Invalid("empty record batch".into()));
                }
                if let Some(p) = producer {
                    let key = producer_key(p.producer_id, *topic_id, *partition);
                    let state: Option<ProducerState> = get(self.s, PRODUCERS, &key)?;
                    ProducerState::check(state.as_ref(), p)?;
                }
                if let Some(id) = transactional_id {
                    self.require_in_txn(id, producer.as_ref(), *topic_id, *partition)?;
                }
            }
            Op::PutTxn { .. }
            | Op::DropTxn { .. }
            | Op::PutQuotas { .. }
            | Op::PutUser { .. }
            | Op::PutPolicy { .. } => {}
            Op::PutBucketPolicy { bucket, .. } | Op::PutBucketConfig { bucket, .. } => {
                self.require_bucket(bucket)?
            }
            Op::TxnOffsetCommit {
                id,
                producer_id,
                epoch,
                group,
                ..
            } => {
                let r = self.open_txn(id, *producer_id, *epoch)?;
                if !r.groups.contains(group) {
                    return Err(CatalogError::InvalidTxnState(format!(
                        "group {group} is not in transaction {id}"
                    )));
                }
            }
            Op::EndTxn {
                id,
                producer_id,
                epoch,
                ..
            } => {
                let stored: Option<TxnRecord> = get(self.s, TXNS, id.as_bytes())?;
                let open = stored.is_some_and(|r| {
                    r.phase == crate::model::TxnPhase::Ongoing
                        && r.producer_id == *producer_id
                        && r.epoch <= *epoch
                });
                if !open {
                    return Err(CatalogError::InvalidTxnState(format!(
                        "transaction {id} of producer {producer_id} is not open"
                    )));
                }
            }
            Op::AllocateProducerId => {}
            Op::PutTopicTable {
                topic,
                expected,
                table,
            } => {
                if self.topic(topic)?.is_none_or(|t| t.id != table.topic_id) {
                    return Err(CatalogError::UnknownTopic(topic.clone()));
                }
                let current: Option<TopicTable> = get(self.s, TOPIC_TABLES, topic.as_bytes())?;
                let generation = current
                    .filter(|c| c.topic_id == table.topic_id)
                    .map_or(0, |c| c.generation);
                if generation != *expected || table.generation != expected + 1 {
                    return Err(CatalogError::PreconditionFailed(format!(
                        "table of topic {topic} is at generation {generation}, not {expected}"
                    )));
                }
            }
            Op::TruncateBefore {
                topic_id,
                partition,
                offset,
            } => {
                let st = self.require_partition(*topic_id, *partition)?;
                if *offset > st.next_offset {
                    return Err(CatalogError::Invalid(format!(
                        "offset {offset} is past the end {}",
                        st.next_offset
                    )));
                }
                if *offset > st.log_start_offset {
                    self.require_expanded(*topic_id, *partition, *offset)?;
                }
            }
            Op::CompactPartition {
                topic_id,
                partition,
                log_start,
                expected_passes,
                removed,
                added: _,
                state,
            } => {
                let st = self.require_partition(*topic_id, *partition)?;
                let passes = get::<CompactionState>(
                    self.s,
                    COMPACTION,
                    &partition_key(*topic_id, *partition),
                )?
                .map_or(0, |c| c.passes);
                let stale = |why: String| Err(CatalogError::PreconditionFailed(why));
                if st.log_start_offset != *log_start {
                    return stale(format!(
                        "partition starts at {}, not {log_start}",
                        st.log_start_offset
                    ));
                }
                if passes != *expected_passes || state.passes != expected_passes + 1 {
                    return stale(format!(
                        "compaction is at pass {passes}, not {expected_passes}"
                    ));
                }
                let mut end = 0;
                for base in removed {
                    let key = batch_key(*topic_id, *partition, *base);
                    match self.s.get(BATCHES, key.as_slice())? {
                        Some(v) => end = end.max(entry(&v)?.last_offset + 1),
                        None => return stale(format!("batch {base} is gone")),
                    }
                }
                if end > 0 {
                    self.require_expanded(*topic_id, *partition, end)?;
                }
            }
            Op::PutExpansion {
                topic,
                source,
                expected,
                expansion,
            } => {
                let t = self
                    .topic(topic)?
                    .ok_or_else(|| CatalogError::UnknownTopic(topic.clone()))?;
                if source.is_empty() {
                    return Err(CatalogError::Invalid("expansion without a source".into()));
                }
                let stored: Option<Expansion> =
                    get(self.s, EXPANSIONS, &expansion_key(topic, source))?;
                let changes = stored.map_or(0, |e| e.changes);
                let fits = expansion
                    .as_ref()
                    .is_none_or(|e| e.topic_id == t.id && e.changes == expected + 1);
                if changes != *expected || !fits {
                    return Err(CatalogError::PreconditionFailed(format!(
                        "expansion of {topic}'s {source} is at change {changes}, not {expected}"
                    )));
                }
            }
            Op::PutTable {
                namespace,
                name,
                expected,
                table,
            } => {
                let stored: Option<TableRecord> =
                    get(self.s, OTHER_TABLES, &table_key(namespace, name))?;
                let generation = stored.map_or(0, |t| t.generation);
                if generation != *expected
                    || table.as_ref().is_some_and(|t| t.generation != expected + 1)
                {
                    return Err(CatalogError::PreconditionFailed(format!(
                        "table {namespace}.{name} is at generation {generation}, not {expected}"
                    )));
                }
            }
            Op::CommitOffset { .. }
            | Op::DeleteOffset { .. }
            | Op::PutGroup(_)
            | Op::DeleteGroup { .. } => {}
        }
        Ok(())
    }

    /// Applies an operation that passed [`Tables::check`].
    pub fn apply(
        &mut self,
        op: &Op,
        effects: &mut Effects,
        log: &mut LogCursor,
    ) -> CatalogResult<OpOutcome> {
        match op {
            Op::CreateBucket(b) | Op::ReplaceBucket { record: b, .. } => {
                put(self.s, BUCKETS, b.name.as_bytes(), b)?;
            }
            Op::DeleteBucket { name } => {
                self.s.remove(BUCKETS, name.as_bytes())?;
                self.s.remove(BUCKET_POLICIES, name.as_bytes())?;
                for kind in [BucketConfigKind::Lifecycle, BucketConfigKind::Cors] {
                    self.s
                        .remove(BUCKET_CONFIGS, BucketConfig::key(name, kind).as_slice())?;
                }
            }
            Op::PutObject {
                bucket,
                key,
                version,
                replace_null,
            } => {
                if *replace_null
                    && let Some((vk, old)) =
                        find_version(self.s, VERSIONS, bucket, key, Some("null"))?
                {
                    self.s.remove(VERSIONS, vk.as_slice())?;
                    effects.freed_blobs.extend_from_slice(old.data.blobs());
                }
                let seq = self.counter(VERSION_SEQ)? + 1;
                self.set_counter(VERSION_SEQ, seq)?;
                // Encoded once for both tables: the PUT path's one conversion.
                let stored = enc(version)?;
                self.s.put(
                    VERSIONS,
                    version_key(bucket, key, seq).as_slice(),
                    stored.as_slice(),
                )?;
                let ok = object_key(bucket, key);
                if version.delete_marker {
                    self.s.remove(OBJECTS, ok.as_slice())?;
                } else {
                    self.s.put(OBJECTS, ok.as_slice(), stored.as_slice())?;
                }
            }
            Op::SetObjectTags {
                bucket,
                key,
                version_id,
                tags,
            } => {
                if let Some((vk, mut v)) =
                    find_version(self.s, VERSIONS, bucket, key, version_id.as_deref())?
                {
                    v.tags = tags.clone();
                    put(self.s, VERSIONS, &vk, &v)?;
                    self.refresh_current(bucket, key)?;
                }
            }
            Op::DeleteObjectVersion {
                bucket,
                key,
                version_id,
            } => {
                if let Some((vk, old)) =
                    find_version(self.s, VERSIONS, bucket, key, Some(version_id))?
                {
                    self.s.remove(VERSIONS, vk.as_slice())?;
                    effects.freed_blobs.extend_from_slice(old.data.blobs());
                    self.refresh_current(bucket, key)?;
                }
            }
            Op::ExpectEtag { .. } | Op::ExpectUnlocked { .. } => {}
            Op::SetObjectRetention {
                bucket,
                key,
                version_id,
                retention,
                ..
            } => {
                if let Some((vk, mut v)) =
                    find_version(self.s, VERSIONS, bucket, key, Some(version_id))?
                {
                    v.lock.retention = *retention;
                    put(self.s, VERSIONS, &vk, &v)?;
                    self.refresh_current(bucket, key)?;
                }
            }
            Op::SetObjectLegalHold {
                bucket,
                key,
                version_id,
                on,
            } => {
                if let Some((vk, mut v)) =
                    find_version(self.s, VERSIONS, bucket, key, Some(version_id))?
                {
                    v.lock.legal_hold = *on;
                    put(self.s, VERSIONS, &vk, &v)?;
                    self.refresh_current(bucket, key)?;
                }
            }
            Op::CreateUpload(u) => {
                put(
                    self.s,
                    UPLOADS,
                    &upload_key(&u.bucket, &u.key, &u.upload_id),
                    u,
                )?;
            }
            Op::PutPart {
                upload_id, part, ..
            } => {
                let pk = part_key(upload_id, part.part_number);
                let old: Option<PartRecord> = get(self.s, PARTS, &pk)?;
                if let Some(old) = old
                    && old.blob.id != part.blob.id
                {
                    effects.freed_blobs.push(old.blob);
                }
                put(self.s, PARTS, &pk, part)?;
            }
            Op::DeleteUpload {
                bucket,
                key,
                upload_id,
                keep,
            } => {
                self.s
                    .remove(UPLOADS, upload_key(bucket, key, upload_id).as_slice())?;
                let mut freed = Vec::new();
                remove_prefix(self.s, PARTS, &parts_prefix(upload_id), |v| {
                    let p: PartRecord = dec(v)?;
                    if !keep.iter().any(|b| b.id == p.blob.id) {
                        freed.push(p.blob);
                    }
                    Ok(())
                })?;
                effects.freed_blobs.extend(freed);
            }
            Op::CreateTopic(t) => {
                put(self.s, TOPICS, t.name.as_bytes(), t)?;
                self.s
                    .put(TOPIC_IDS, t.id.to_be_bytes().as_slice(), t.name.as_bytes())?;
                for p in 0..t.partitions {
                    put(
                        self.s,
                        PARTITIONS,
                        &partition_key(t.id, p),
                        &PartitionState::default(),
                    )?;
                }
            }
            Op::UpdateTopic(t) => {
                let old = self.topic(&t.name)?.map(|o| o.partitions).unwrap_or(0);
                put(self.s, TOPICS, t.name.as_bytes(), t)?;
                for p in old..t.partitions {
                    put(
                        self.s,
                        PARTITIONS,
                        &partition_key(t.id, p),
                        &PartitionState::default(),
                    )?;
                }
            }
            Op::DeleteTopic { name } => {
                if let Some(t) = self.topic(name)? {
                    self.s.remove(TOPICS, name.as_bytes())?;
                    self.s.remove(TOPIC_IDS, t.id.to_be_bytes().as_slice())?;
                    let prefix = t.id.to_be_bytes();
                    remove_prefix(self.s, PARTITIONS, &prefix, |_| Ok(()))?;
                    remove_prefix(self.s, COMPACTION, &prefix, |_| Ok(()))?;
                    remove_prefix(self.s, TXN_PARTITIONS, &prefix, |_| Ok(()))?;
                    remove_prefix(self.s, ABORTED_TXNS, &prefix, |_| Ok(()))?;
                    remove_prefix(self.s, EXPANSIONS, &expansions_prefix(name), |_| Ok(()))?;
                    let mut segments = Vec::new();
                    remove_prefix(self.s, BATCHES, &prefix, |v| {
                        segments.push(entry(v)?.position.segment);
                        Ok(())
                    })?;
                    for segment in segments {
                        self.add_segment_ref(segment, -1)?;
                    }
                }
                if let Some(table) = get::<TopicTable>(self.s, TOPIC_TABLES, name.as_bytes())? {
                    self.s.remove(TOPIC_TABLES, name.as_bytes())?;
                    self.remove_objects_under(&table.bucket, &table.prefix, effects)?;
                }
            }
            Op::PutTopicTable { topic, table, .. } => {
                put(self.s, TOPIC_TABLES, topic.as_bytes(), table)?;
            }
            Op::PutExpansion {
                topic,
                source,
                expansion,
                ..
            } => {
                let key = expansion_key(topic, source);
                match expansion {
                    Some(e) => put(self.s, EXPANSIONS, &key, e)?,
                    None => {
                        self.s.remove(EXPANSIONS, key.as_slice())?;
                    }
                }
            }
            Op::PutTable {
                namespace,
                name,
                table,
                ..
            } => {
                let key = table_key(namespace, name);
                match table {
                    Some(t) => put(self.s, OTHER_TABLES, &key, t)?,
                    None => {
                        if let Some(old) = get::<TableRecord>(self.s, OTHER_TABLES, &key)? {
                            self.s.remove(OTHER_TABLES, key.as_slice())?;
                            self.remove_objects_under(&old.bucket, &old.prefix, effects)?;
                        }
                    }
                }
            }
            Op::AllocateProducerId => {
                let id = self.counter(PRODUCER_ID)? + 1;
                self.set_counter(PRODUCER_ID, id)?;
                return Ok(OpOutcome::ProducerId(id as i64));
            }
            Op::Append {
                topic_id,
                partition,
                offset_count,
                max_timestamp,
                batch,
                producer,
                transactional_id,
            } => {
                let pk = partition_key(*topic_id, *partition);
                let mut st: PartitionState = get(self.s, PARTITIONS, &pk)?.unwrap_or_default();
                let base = self.append_batch(
                    *topic_id,
                    *partition,
                    &mut st,
                    batch,
                    *offset_count,
                    *max_timestamp,
                    log,
                )?;
                if let Some(p) = producer {
                    let key = producer_key(p.producer_id, *topic_id, *partition);
                    let mut state: ProducerState =
                        get(self.s, PRODUCERS, &key)?.unwrap_or_default();
                    state.record(p, base);
                    put(self.s, PRODUCERS, &key, &state)?;
                    if transactional_id.is_some() {
                        self.open_in_partition(&pk, p.producer_id, base)?;
                    }
                }
                put(self.s, PARTITIONS, &pk, &st)?;
                return Ok(OpOutcome::Appended {
                    base_offset: base,
                    log_start_offset: st.log_start_offset,
                });
            }
            Op::PutTxn { id, record } => put(self.s, TXNS, id.as_bytes(), record)?,
            Op::PutQuotas { entity, values } => {
                let key = quota_key(entity);
                if values.is_empty() {
                    self.s.remove(CLIENT_QUOTAS, key.as_slice())?;
                } else {
                    let quotas = crate::model::ClientQuotas {
                        entity: entity.clone(),
                        values: values.clone(),
                    };
                    put(self.s, CLIENT_QUOTAS, &key, &quotas)?;
                }
            }
            Op::PutUser { name, record } => match record {
                Some(r) => put(self.s, USERS, name.as_bytes(), r)?,
                None => {
                    self.s.remove(USERS, name.as_bytes())?;
                }
            },
            Op::PutPolicy { name, record } => match record {
                Some(r) => put(self.s, POLICIES, name.as_bytes(), r)?,
                None => {
                    self.s.remove(POLICIES, name.as_bytes())?;
                }
            },
            Op::PutBucketPolicy { bucket, document } => match document {
                Some(d) => put(
                    self.s,
                    BUCKET_POLICIES,
                    bucket.as_bytes(),
                    &crate::model::BucketPolicy {
                        bucket: bucket.clone(),
                        document: d.clone(),
                    },
                )?,
                None => {
                    self.s.remove(BUCKET_POLICIES, bucket.as_bytes())?;
                }
            },
            Op::PutBucketConfig {
                bucket,
                kind,
                document,
            } => {
                let key = BucketConfig::key(bucket, *kind);
                match document {
                    Some(d) => put(
                        self.s,
                        BUCKET_CONFIGS,
                        &key,
                        &BucketConfig {
                            bucket: bucket.clone(),
                            kind: *kind,
                            document: d.clone(),
                        },
                    )?,
                    None => {
                        self.s.remove(BUCKET_CONFIGS, key.as_slice())?;
                    }
                }
            }
            Op::DropTxn { id } => {
                self.s.remove(TXNS, id.as_bytes())?;
            }
            Op::TxnOffsetCommit {
                id,
                group,
                topic,
                partition,
                offset,
                ..
            } => put(
                self.s,
                TXN_OFFSETS,
                &txn_offset_key(group, topic, *partition, id),
                offset,
            )?,
            Op::EndTxn {
                id,
                producer_id,
                epoch,
                commit,
                markers,
                record,
            } => self.end_txn(id, *producer_id, *epoch, *commit, markers, record, log)?,
            Op::TruncateBefore {
                topic_id,
                partition,
                offset,
            } => {
                let pk = partition_key(*topic_id, *partition);
                let mut st: PartitionState = get(self.s, PARTITIONS, &pk)?.unwrap_or_default();
                if *offset > st.log_start_offset {
                    st.log_start_offset = *offset;
                    let from = batch_key(*topic_id, *partition, 0);
                    let to = batch_key(*topic_id, *partition, *offset);
                    let mut doomed = Vec::new();
                    for (k, v) in self.s.range(BATCHES, Range::between(&from, Some(&to)))? {
                        let e = entry(&v)?;
                        if e.last_offset < *offset {
                            doomed.push((k, e));
                        }
                    }
                    for (k, e) in doomed {
                        self.s.remove(BATCHES, k.as_slice())?;
                        self.add_segment_ref(e.position.segment, -1)?;
                        st.bytes = st.bytes.saturating_sub(u64::from(e.len));
                    }
                    put(self.s, PARTITIONS, &pk, &st)?;
                    // Aborted transactions whose markers are gone concern no reader.
                    let gone = self
                        .s
                        .range(ABORTED_TXNS, Range::between(&from, Some(&to)))?;
                    for (k, _) in gone {
                        self.s.remove(ABORTED_TXNS, k.as_slice())?;
                    }
                }
            }
            Op::CompactPartition {
                topic_id,
                partition,
                removed,
                added,
                state,
                ..
            } => {
                let pk = partition_key(*topic_id, *partition);
                let mut st: PartitionState = get(self.s, PARTITIONS, &pk)?.unwrap_or_default();
                for base in removed {
                    let key = batch_key(*topic_id, *partition, *base);
                    let old = self.s.get(BATCHES, key.as_slice())?;
                    self.s.remove(BATCHES, key.as_slice())?;
                    if let Some(e) = old.map(|v| entry(&v)).transpose()? {
                        self.add_segment_ref(e.position.segment, -1)?;
                        st.bytes = st.bytes.saturating_sub(u64::from(e.len));
                    }
                }
                for b in added {
                    let e = tables::BatchEntry {
                        last_offset: b.last_offset,
                        max_timestamp: b.max_timestamp,
                        position: log.position,
                        data_offset: log.push(&b.batch, b.base_offset),
                        len: b.batch.len() as u32,
                    };
                    self.s.put(
                        BATCHES,
                        batch_key(*topic_id, *partition, b.base_offset).as_slice(),
                        e.encode().as_slice(),
                    )?;
                    self.add_segment_ref(log.position.segment, 1)?;
                    st.bytes += b.batch.len() as u64;
                }
                put(self.s, PARTITIONS, &pk, &st)?;
                put(self.s, COMPACTION, &pk, state)?;
            }
            Op::CommitOffset {
                group,
                topic,
                partition,
                offset,
            } => put(
                self.s,
                OFFSETS,
                &offset_key(group, topic, *partition),
                offset,
            )?,
            Op::DeleteOffset {
                group,
                topic,
                partition,
            } => {
                self.s
                    .remove(OFFSETS, offset_key(group, topic, *partition).as_slice())?;
            }
            Op::PutGroup(g) => put(self.s, GROUPS, g.name.as_bytes(), g)?,
            Op::DeleteGroup { name } => {
                self.s.remove(GROUPS, name.as_bytes())?;
                remove_prefix(self.s, OFFSETS, &group_prefix(name), |_| Ok(()))?;
            }
        }
        Ok(OpOutcome::Done)
    }

    /// Indexes a batch at the partition's next offset (its bytes go to the record's data
    /// section) and moves the partition on; returns its base offset. The caller stores
    /// `st`.
    #[allow(clippy::too_many_arguments)]
    fn append_batch(
        &mut self,
        topic_id: u128,
        partition: u32,
        st: &mut PartitionState,
        batch: &[u8],
        offset_count: u32,
        max_timestamp: i64,
        log: &mut LogCursor,
    ) -> CatalogResult<u64> {
        let base = st.next_offset;
        let last = base + u64::from(offset_count) - 1;
        let e = tables::BatchEntry {
            last_offset: last,
            max_timestamp,
            position: log.position,
            data_offset: log.push(batch, base),
            len: batch.len() as u32,
        };
        self.s.put(
            BATCHES,
            batch_key(topic_id, partition, base).as_slice(),
            e.encode().as_slice(),
        )?;
        self.add_segment_ref(log.position.segment, 1)?;
        st.next_offset = last + 1;
        st.bytes += batch.len() as u64;
        Ok(base)
    }

    /// The stored transaction `id`, if it is open for this producer and epoch.
    fn open_txn(&mut self, id: &str, producer_id: i64, epoch: i16) -> CatalogResult<TxnRecord> {
        let stored: Option<TxnRecord> = get(self.s, TXNS, id.as_bytes())?;
        match stored {
            Some(r) if r.is_open_for(producer_id, epoch) => Ok(r),
            Some(r) if r.producer_id == producer_id && r.epoch > epoch => {
                Err(CatalogError::ProducerFenced)
            }
            _ => Err(CatalogError::InvalidTxnState(format!(
                "transaction {id} is not open for producer {producer_id} epoch {epoch}"
            ))),
        }
    }

    /// Refuses a transactional batch unless its transaction is open and holds the
    /// partition.
    fn require_in_txn(
        &mut self,
        id: &str,
        producer: Option<&crate::txn::ProducerBatch>,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<()> {
        let p = producer.ok_or_else(|| {
            CatalogError::Invalid("a transactional batch without a producer id".into())
        })?;
        let r = self.open_txn(id, p.producer_id, p.epoch)?;
        let name = self
            .s
            .get(TOPIC_IDS, topic_id.to_be_bytes().as_slice())?
            .map(|n| String::from_utf8_lossy(&n).into_owned())
            .unwrap_or_default();
        if !r
            .partitions
            .iter()
            .any(|(t, q)| *t == name && *q == partition)
        {
            return Err(CatalogError::InvalidTxnState(format!(
                "{name}/{partition} is not in transaction {id}"
            )));
        }
        Ok(())
    }

    /// Records that a producer's transaction has written to a partition from `offset`
    /// on (its first write there counts).
    fn open_in_partition(&mut self, pk: &[u8], producer_id: i64, offset: u64) -> CatalogResult<()> {
        let mut tp: TxnPartition = get(self.s, TXN_PARTITIONS, pk)?.unwrap_or_default();
        if !tp.open.iter().any(|o| o.producer_id == producer_id) {
            tp.open.push(crate::model::OpenTxn {
                producer_id,
                first_offset: offset,
            });
            put(self.s, TXN_PARTITIONS, pk, &tp)?;
        }
        Ok(())
    }

    /// Writes one EndTxn: a marker per partition that is still there, the transaction's
    /// offsets committed or dropped, the new state.
    #[allow(clippy::too_many_arguments)]
    fn end_txn(
        &mut self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        markers: &[crate::txn::TxnMarker],
        record: &TxnRecord,
        log: &mut LogCursor,
    ) -> CatalogResult<()> {
        for m in markers {
            let pk = partition_key(m.topic_id, m.partition);
            let Some(mut st) = self.partition(m.topic_id, m.partition)? else {
                continue;
            };
            let at = self.append_batch(
                m.topic_id,
                m.partition,
                &mut st,
                &m.batch,
                1,
                m.timestamp,
                log,
            )?;
            put(self.s, PARTITIONS, &pk, &st)?;
            // A fencing abort's bumped epoch fences the old producer here too; the new
            // one starts its sequences again.
            let key = producer_key(producer_id, m.topic_id, m.partition);
            if let Some(mut ps) = get::<ProducerState>(self.s, PRODUCERS, &key)?
                && epoch > ps.epoch
            {
                ps.epoch = epoch;
                ps.recent.clear();
                put(self.s, PRODUCERS, &key, &ps)?;
            }
            let mut tp: TxnPartition = get(self.s, TXN_PARTITIONS, &pk)?.unwrap_or_default();
            if let Some(i) = tp.open.iter().position(|o| o.producer_id == producer_id) {
                let open = tp.open.remove(i);
                if !commit {
                    let aborted = AbortedTxn {
                        producer_id,
                        first_offset: open.first_offset,
                        last_offset: at,
                    };
                    put(
                        self.s,
                        ABORTED_TXNS,
                        &batch_key(m.topic_id, m.partition, at),
                        &aborted,
                    )?;
                    tp.max_aborted_span = tp.max_aborted_span.max(at - open.first_offset);
                }
                if tp == TxnPartition::default() {
                    self.s.remove(TXN_PARTITIONS, pk.as_slice())?;
                } else {
                    put(self.s, TXN_PARTITIONS, &pk, &tp)?;
                }
            }
        }
        let stored: Option<TxnRecord> = get(self.s, TXNS, id.as_bytes())?;
        for group in stored.map(|r| r.groups).unwrap_or_default() {
            let prefix = group_prefix(&group);
            let end = prefix_end(&prefix);
            let mut held = Vec::new();
            for (k, v) in self.s.range(TXN_OFFSETS, Range::prefix(&prefix, &end))? {
                if let Some((topic, partition, holder)) = txn_offset_parts(&group, &k)
                    && holder == id
                {
                    held.push((k, topic, partition, v));
                }
            }
            for (k, topic, partition, v) in held {
                self.s.remove(TXN_OFFSETS, k.as_slice())?;
                if commit {
                    let o: OffsetRecord = dec(&v)?;
                    put(self.s, OFFSETS, &offset_key(&group, &topic, partition), &o)?;
                }
            }
        }
        put(self.s, TXNS, id.as_bytes(), record)
    }

    fn add_segment_ref(&mut self, segment: u64, delta: i64) -> CatalogResult<()> {
        let key = segment.to_be_bytes();
        let n = self
            .s
            .get(SEGMENT_REFS, key.as_slice())?
            .and_then(|v| v.as_slice().try_into().ok().map(u64::from_be_bytes))
            .unwrap_or(0)
            .saturating_add_signed(delta);
        if n == 0 {
            self.s.remove(SEGMENT_REFS, key.as_slice())?;
        } else {
            self.s
                .put(SEGMENT_REFS, key.as_slice(), n.to_be_bytes().as_slice())?;
        }
        Ok(())
    }

    /// Removes every object (all versions) whose key starts with `prefix`, freeing their
    /// blobs: a dropped topic table takes its files with it.
    fn remove_objects_under(
        &mut self,
        bucket: &str,
        prefix: &str,
        effects: &mut Effects,
    ) -> CatalogResult<()> {
        let p = object_key(bucket, prefix);
        remove_prefix(self.s, OBJECTS, &p, |_| Ok(()))?;
        remove_prefix(self.s, VERSIONS, &p, |v| {
            let old: ObjectVersion = dec(v)?;
            effects.freed_blobs.extend_from_slice(old.data.blobs());
            Ok(())
        })
    }

    /// Makes `OBJECTS` show the newest version of a key, or nothing when that is a delete
    /// marker or no version is left.
    fn refresh_current(&mut self, bucket: &str, key: &str) -> CatalogResult<()> {
        let ok = object_key(bucket, key);
        match versions_of(self.s, VERSIONS, bucket, key)?
            .into_iter()
            .next()
        {
            Some((_, v)) if !v.delete_marker => put(self.s, OBJECTS, &ok, &v)?,
            _ => {
                self.s.remove(OBJECTS, ok.as_slice())?;
            }
        }
        Ok(())
    }
}
