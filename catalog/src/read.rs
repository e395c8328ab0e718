//! Reads over a snapshot of the embedded store. A read transaction sees every commit
//! the committer made visible, which it does only after the log record is durable.

use redb::{Database, ReadableDatabase, ReadableTable, TableError};

use crate::apply::dec;
use crate::error::{CatalogError, CatalogResult};
use crate::model::{
    AbortedTxn, BatchInfo, ObjectVersion, OffsetRecord, PartRecord, PartitionState, ProducerState,
    StoredBatch, TxnPartition, UploadRecord,
};
use crate::tables::{self, Table, prefix_end};

fn open(
    r: &redb::ReadTransaction,
    def: Table,
) -> CatalogResult<Option<redb::ReadOnlyTable<&'static [u8], &'static [u8]>>> {
    match r.open_table(def) {
        Ok(t) => Ok(Some(t)),
        Err(TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// One raw value.
pub fn get_raw(db: &Database, def: Table, key: &[u8]) -> CatalogResult<Option<Vec<u8>>> {
    let r = db.begin_read()?;
    let Some(t) = open(&r, def)? else {
        return Ok(None);
    };
    Ok(t.get(key)?.map(|v| v.value().to_vec()))
}

/// One decoded value.
pub fn get<T: crate::format::Stored>(
    db: &Database,
    def: Table,
    key: &[u8],
) -> CatalogResult<Option<T>> {
    get_raw(db, def, key)?.map(|v| dec(&v)).transpose()
}

/// Up to `limit` decoded entries whose keys start with `prefix`.
pub fn scan<T: crate::format::Stored>(
    db: &Database,
    def: Table,
    prefix: &[u8],
    limit: usize,
) -> CatalogResult<Vec<(Vec<u8>, T)>> {
    let r = db.begin_read()?;
    let Some(t) = open(&r, def)? else {
        return Ok(Vec::new());
    };
    let range = match prefix_end(prefix) {
        Some(end) => t.range(prefix..end.as_slice())?,
        None => t.range(prefix..)?,
    };
    let mut out = Vec::new();
    for e in range.take(limit) {
        let (k, v) = e?;
        out.push((k.value().to_vec(), dec(v.value())?));
    }
    Ok(out)
}

fn key_of(bucket: &str, table_key: &[u8]) -> CatalogResult<String> {
    let start = 1 + bucket.len();
    String::from_utf8(table_key.get(start..).unwrap_or_default().to_vec())
        .map_err(|e| CatalogError::Corrupt(e.to_string()))
}

/// Current objects in byte order after `start_after`, within `prefix`.
pub fn list_objects(
    db: &Database,
    bucket: &str,
    prefix: &str,
    start_after: Option<&str>,
    limit: usize,
) -> CatalogResult<Vec<(String, ObjectVersion)>> {
    let r = db.begin_read()?;
    let Some(t) = open(&r, tables::OBJECTS)? else {
        return Ok(Vec::new());
    };
    let lo = tables::object_key(bucket, prefix);
    let hi = prefix_end(&lo).unwrap_or_default();
    let mut out = Vec::new();
    let after = start_after.map(|s| tables::object_key(bucket, s));
    let range = match &after {
        Some(a) if a.as_slice() >= lo.as_slice() => t.range::<&[u8]>((
            std::ops::Bound::Excluded(a.as_slice()),
            std::ops::Bound::Excluded(hi.as_slice()),
        ))?,
        _ => t.range(lo.as_slice()..hi.as_slice())?,
    };
    for e in range.take(limit) {
        let (k, v) = e?;
        out.push((key_of(bucket, k.value())?, dec(v.value())?));
    }
    Ok(out)
}

/// Versions in key order (newest first within a key) from `start_key` on.
pub fn list_versions(
    db: &Database,
    bucket: &str,
    prefix: &str,
    start_key: Option<&str>,
    limit: usize,
) -> CatalogResult<Vec<(String, ObjectVersion)>> {
    let r = db.begin_read()?;
    let Some(t) = open(&r, tables::VERSIONS)? else {
        return Ok(Vec::new());
    };
    let lo = tables::object_key(bucket, prefix);
    let hi = prefix_end(&lo).unwrap_or_default();
    let from = match start_key {
        Some(k) if tables::object_key(bucket, k) > lo => tables::object_key(bucket, k),
        _ => lo,
    };
    let mut out = Vec::new();
    for e in t.range(from.as_slice()..hi.as_slice())?.take(limit) {
        let (k, v) = e?;
        let full = k.value();
        // Strip the NUL separator and the 8-byte sequence.
        let key_part = &full[..full.len().saturating_sub(9)];
        out.push((key_of(bucket, key_part)?, dec(v.value())?));
    }
    Ok(out)
}

/// Calls `each` on the index entries of one partition from the batch holding
/// `from_offset` on (it may start before that offset), in offset order, while it
/// returns `true`.
fn walk_batches(
    db: &Database,
    topic_id: u128,
    partition: u32,
    from_offset: u64,
    mut each: impl FnMut(u64, tables::BatchEntry) -> CatalogResult<bool>,
) -> CatalogResult<()> {
    let r = db.begin_read()?;
    let Some(t) = open(&r, tables::BATCHES)? else {
        return Ok(());
    };
    let lo = tables::batch_key(topic_id, partition, 0);
    let at = tables::batch_key(topic_id, partition, from_offset);
    let hi = tables::batch_key(topic_id, partition, u64::MAX);
    let start = match t.range(lo.as_slice()..=at.as_slice())?.next_back() {
        Some(e) => e?.0.value().to_vec(),
        None => at.to_vec(),
    };
    for e in t.range(start.as_slice()..=hi.as_slice())? {
        let (k, v) = e?;
        let base = u64::from_be_bytes(k.value()[20..28].try_into().unwrap_or_default());
        let entry = tables::BatchEntry::decode(v.value())
            .ok_or_else(|| CatalogError::Corrupt("batch index entry".into()))?;
        if entry.last_offset >= from_offset && !each(base, entry)? {
            break;
        }
    }
    Ok(())
}

/// Batches from the one containing `from_offset`, up to `max_bytes` (at least one).
pub fn read_batches(
    db: &Database,
    log: &storage::wal::WalReader,
    topic_id: u128,
    partition: u32,
    from_offset: u64,
    max_bytes: usize,
) -> CatalogResult<Vec<StoredBatch>> {
    let mut out = Vec::new();
    let mut total = 0usize;
    walk_batches(db, topic_id, partition, from_offset, |base, e| {
        let len = e.len as usize;
        if !out.is_empty() && total + len > max_bytes {
            return Ok(false);
        }
        total += len;
        out.push(StoredBatch {
            base_offset: base,
            last_offset: e.last_offset,
            max_timestamp: e.max_timestamp,
            bytes: log.read(&e.position, e.data_offset, len)?.into(),
        });
        Ok(total < max_bytes)
    })?;
    Ok(out)
}

/// Index entries from the batch holding `from_offset` on.
pub fn batch_index(
    db: &Database,
    topic_id: u128,
    partition: u32,
    from_offset: u64,
    limit: usize,
) -> CatalogResult<Vec<BatchInfo>> {
    let mut out = Vec::new();
    if limit == 0 {
        return Ok(out);
    }
    walk_batches(db, topic_id, partition, from_offset, |base, e| {
        out.push(BatchInfo {
            base_offset: base,
            last_offset: e.last_offset,
            max_timestamp: e.max_timestamp,
            len: e.len,
        });
        Ok(out.len() < limit)
    })?;
    Ok(out)
}

/// A partition's state and last stable offset, from one read transaction (the fetch path
/// needs both for every partition it reads).
pub fn stable_partition(
    db: &Database,
    key: &[u8; 20],
) -> CatalogResult<Option<(PartitionState, u64)>> {
    let r = db.begin_read()?;
    let Some(parts) = open(&r, tables::PARTITIONS)? else {
        return Ok(None);
    };
    let Some(state) = parts
        .get(key.as_slice())?
        .map(|v| dec::<PartitionState>(v.value()))
        .transpose()?
    else {
        return Ok(None);
    };
    let txns: TxnPartition = match open(&r, tables::TXN_PARTITIONS)? {
        Some(t) => t
            .get(key.as_slice())?
            .map(|v| dec(v.value()))
            .transpose()?
            .unwrap_or_default(),
        None => TxnPartition::default(),
    };
    let lso = txns.last_stable_offset(state.next_offset);
    Ok(Some((state, lso)))
}

/// The aborted transactions whose markers' keys are in `from..to`, in marker order.
pub fn aborted_txns(db: &Database, from: [u8; 28], to: [u8; 28]) -> CatalogResult<Vec<AbortedTxn>> {
    let r = db.begin_read()?;
    let Some(t) = open(&r, tables::ABORTED_TXNS)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for e in t.range(from.as_slice()..to.as_slice())? {
        out.push(dec(e?.1.value())?);
    }
    Ok(out)
}

/// Every producer's state on the partition with key `partition`: a scan of the whole
/// table (its keys lead with the producer id), for admin requests only.
pub fn producers_of(
    db: &Database,
    partition: &[u8; 20],
) -> CatalogResult<Vec<(i64, ProducerState)>> {
    let r = db.begin_read()?;
    let Some(t) = open(&r, tables::PRODUCERS)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for e in t.iter()? {
        let (k, v) = e?;
        let k = k.value();
        if k.len() == 28 && k[8..] == partition[..] {
            let id = i64::from_be_bytes(k[..8].try_into().unwrap_or_default());
            out.push((id, dec(v.value())?));
        }
    }
    Ok(out)
}

/// Every committed offset of a group.
pub fn offsets(db: &Database, group: &str) -> CatalogResult<Vec<(String, u32, OffsetRecord)>> {
    let prefix = tables::group_prefix(group);
    let entries: Vec<(Vec<u8>, OffsetRecord)> = scan(db, tables::OFFSETS, &prefix, usize::MAX)?;
    entries
        .into_iter()
        .map(|(k, v)| {
            let rest = &k[prefix.len()..];
            let tlen = u16::from_be_bytes([rest[0], rest[1]]) as usize;
            let topic = String::from_utf8_lossy(&rest[2..2 + tlen]).into_owned();
            let p = u32::from_be_bytes(rest[2 + tlen..6 + tlen].try_into().unwrap_or_default());
            Ok((topic, p, v))
        })
        .collect()
}

/// Uploads of a bucket whose keys start with `prefix`, in (key, upload id) order,
/// strictly after `after` (a key and optionally an upload id of that key).
pub fn list_uploads(
    db: &Database,
    bucket: &str,
    prefix: &str,
    after: Option<(&str, Option<&str>)>,
    limit: usize,
) -> CatalogResult<Vec<UploadRecord>> {
    let r = db.begin_read()?;
    let Some(t) = open(&r, tables::UPLOADS)? else {
        return Ok(Vec::new());
    };
    let lo = tables::object_key(bucket, prefix);
    let hi = prefix_end(&lo).unwrap_or_default();
    let start = match after {
        // Every upload of a key sorts before `key` + 0x01.
        Some((key, None)) => {
            let mut k = tables::object_key(bucket, key);
            k.push(1);
            Some(k)
        }
        Some((key, Some(id))) => {
            let mut k = tables::upload_key(bucket, key, id);
            k.push(0);
            Some(k)
        }
        None => None,
    };
    let from = match start {
        Some(s) if s > lo => s,
        _ => lo,
    };
    let mut out = Vec::new();
    if from >= hi {
        return Ok(out);
    }
    for e in t.range(from.as_slice()..hi.as_slice())?.take(limit) {
        out.push(dec(e?.1.value())?);
    }
    Ok(out)
}

/// Parts of an upload with numbers above `after`, in order.
pub fn parts(
    db: &Database,
    upload_id: &str,
    after: u32,
    limit: usize,
) -> CatalogResult<Vec<PartRecord>> {
    let r = db.begin_read()?;
    let Some(t) = open(&r, tables::PARTS)? else {
        return Ok(Vec::new());
    };
    let prefix = tables::parts_prefix(upload_id);
    let hi = prefix_end(&prefix).unwrap_or_default();
    let from = match after.checked_add(1) {
        Some(n) => tables::part_key(upload_id, n),
        None => return Ok(Vec::new()),
    };
    let mut out = Vec::new();
    for e in t.range(from.as_slice()..hi.as_slice())?.take(limit) {
        out.push(dec(e?.1.value())?);
    }
    Ok(out)
}

/// Every blob the store references (object versions and multipart parts), read in one
/// snapshot so a part becoming an object's data is seen in one place or the other.
/// `OBJECTS` is not read: it only ever holds copies of the newest entries of `VERSIONS`.
pub fn referenced_blobs(
    db: &Database,
) -> CatalogResult<std::collections::HashSet<storage::BlobId>> {
    let r = db.begin_read()?;
    let mut out = std::collections::HashSet::new();
    if let Some(t) = open(&r, tables::VERSIONS)? {
        for e in t.iter()? {
            let (_, v) = e?;
            let version: ObjectVersion = dec(v.value())?;
            out.extend(version.data.blobs().iter().map(|b| b.id));
        }
    }
    if let Some(t) = open(&r, tables::PARTS)? {
        for e in t.iter()? {
            let (_, v) = e?;
            let part: PartRecord = dec(v.value())?;
            out.insert(part.blob.id);
        }
    }
    Ok(out)
}
