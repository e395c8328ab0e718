//! The catalog's reads, written once over [`KvRead`] for every backend: each read takes
//! one snapshot of committed state, which a backend makes visible only once it is
//! durable, so no read sees a change before it is acknowledged.

use std::ops::Bound;

use crate::apply::dec;
use crate::error::{CatalogError, CatalogResult};
use crate::kv::{KvRead, KvSnapshot, Range};
use crate::model::{
    AbortedTxn, BatchInfo, ObjectVersion, OffsetRecord, PartRecord, PartitionState, ProducerState,
    StoredBatch, TxnPartition, UploadRecord,
};
use crate::tables::{self, Table, prefix_end};

/// Index entries read per round while walking a partition's batches.
const WALK_PAGE: usize = 256;

/// Reads of a batch's bytes from wherever its backend stores them.
pub trait BatchLog: Send + Sync {
    /// `len` bytes at `offset` of the log record at `position`.
    fn read(
        &self,
        position: &storage::wal::LogPosition,
        offset: u64,
        len: usize,
    ) -> CatalogResult<Vec<u8>>;
}

impl BatchLog for storage::wal::WalReader {
    fn read(
        &self,
        position: &storage::wal::LogPosition,
        offset: u64,
        len: usize,
    ) -> CatalogResult<Vec<u8>> {
        Ok(storage::wal::WalReader::read(self, position, offset, len)?)
    }
}

/// One raw value.
pub async fn get_raw(kv: &dyn KvRead, def: Table, key: &[u8]) -> CatalogResult<Option<Vec<u8>>> {
    kv.snapshot().await?.get(def, key).await
}

/// One decoded value.
pub async fn get<T: crate::format::Stored>(
    kv: &dyn KvRead,
    def: Table,
    key: &[u8],
) -> CatalogResult<Option<T>> {
    get_raw(kv, def, key).await?.map(|v| dec(&v)).transpose()
}

/// Up to `limit` decoded entries whose keys start with `prefix`.
pub async fn scan<T: crate::format::Stored>(
    kv: &dyn KvRead,
    def: Table,
    prefix: &[u8],
    limit: usize,
) -> CatalogResult<Vec<(Vec<u8>, T)>> {
    let end = prefix_end(prefix);
    kv.snapshot()
        .await?
        .range(def, Range::prefix(prefix, &end).take(limit))
        .await?
        .into_iter()
        .map(|(k, v)| Ok((k, dec(&v)?)))
        .collect()
}

fn key_of(bucket: &str, table_key: &[u8]) -> CatalogResult<String> {
    let start = 1 + bucket.len();
    String::from_utf8(table_key.get(start..).unwrap_or_default().to_vec())
        .map_err(|e| CatalogError::Corrupt(e.to_string()))
}

/// Current objects in byte order after `start_after`, within `prefix`.
pub async fn list_objects(
    kv: &dyn KvRead,
    bucket: &str,
    prefix: &str,
    start_after: Option<&str>,
    limit: usize,
) -> CatalogResult<Vec<(String, ObjectVersion)>> {
    let lo = tables::object_key(bucket, prefix);
    let hi = prefix_end(&lo);
    let after = start_after.map(|s| tables::object_key(bucket, s));
    let mut range = Range::prefix(&lo, &hi).take(limit);
    if let Some(a) = after.as_deref().filter(|a| *a >= lo.as_slice()) {
        range.from = Bound::Excluded(a);
    }
    kv.snapshot()
        .await?
        .range(tables::OBJECTS, range)
        .await?
        .into_iter()
        .map(|(k, v)| Ok((key_of(bucket, &k)?, dec(&v)?)))
        .collect()
}

/// Versions in key order (newest first within a key) from `start_key` on.
pub async fn list_versions(
    kv: &dyn KvRead,
    bucket: &str,
    prefix: &str,
    start_key: Option<&str>,
    limit: usize,
) -> CatalogResult<Vec<(String, ObjectVersion)>> {
    let lo = tables::object_key(bucket, prefix);
    let hi = prefix_end(&lo);
    let from = match start_key {
        Some(k) if tables::object_key(bucket, k) > lo => tables::object_key(bucket, k),
        _ => lo,
    };
    kv.snapshot()
        .await?
        .range(tables::VERSIONS, Range::prefix(&from, &hi).take(limit))
        .await?
        .into_iter()
        .map(|(k, v)| {
            // Strip the NUL separator and the 8-byte sequence.
            let key_part = &k[..k.len().saturating_sub(9)];
            Ok((key_of(bucket, key_part)?, dec(&v)?))
        })
        .collect()
}

/// Calls `each` on the index entries of one partition from the batch holding
/// `from_offset` on (it may start before that offset), in offset order, while it
/// returns `true`. One snapshot for the whole walk.
async fn walk_batches(
    kv: &dyn KvRead,
    topic_id: u128,
    partition: u32,
    from_offset: u64,
    mut each: impl FnMut(u64, tables::BatchEntry) -> CatalogResult<bool>,
) -> CatalogResult<()> {
    let snap = kv.snapshot().await?;
    let lo = tables::batch_key(topic_id, partition, 0);
    let at = tables::batch_key(topic_id, partition, from_offset);
    let hi = tables::batch_key(topic_id, partition, u64::MAX);
    // The batch holding `from_offset` starts at or before it.
    let before = Range {
        from: Bound::Included(lo.as_slice()),
        to: Bound::Included(at.as_slice()),
        reverse: true,
        limit: 1,
    };
    let mut start = match snap.range(tables::BATCHES, before).await?.pop() {
        Some((k, _)) => k,
        None => at.to_vec(),
    };
    let mut from = Bound::Included(start.as_slice());
    loop {
        let page = Range {
            from,
            to: Bound::Included(hi.as_slice()),
            reverse: false,
            limit: WALK_PAGE,
        };
        let entries = snap.range(tables::BATCHES, page).await?;
        let full = entries.len() == WALK_PAGE;
        for (k, v) in &entries {
            let base = u64::from_be_bytes(k[20..28].try_into().unwrap_or_default());
            let entry = tables::BatchEntry::decode(v)
                .ok_or_else(|| CatalogError::Corrupt("batch index entry".into()))?;
            if entry.last_offset >= from_offset && !each(base, entry)? {
                return Ok(());
            }
        }
        match entries.into_iter().next_back() {
            Some((k, _)) if full => start = k,
            _ => return Ok(()),
        }
        from = Bound::Excluded(start.as_slice());
    }
}

/// Batches from the one containing `from_offset`, up to `max_bytes` (at least one).
pub async fn read_batches(
    kv: &dyn KvRead,
    log: &dyn BatchLog,
    topic_id: u128,
    partition: u32,
    from_offset: u64,
    max_bytes: usize,
) -> CatalogResult<Vec<StoredBatch>> {
    let mut out = Vec::new();
    let mut total = 0usize;
    walk_batches(kv, topic_id, partition, from_offset, |base, e| {
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
    })
    .await?;
    Ok(out)
}

/// Index entries from the batch holding `from_offset` on.
pub async fn batch_index(
    kv: &dyn KvRead,
    topic_id: u128,
    partition: u32,
    from_offset: u64,
    limit: usize,
) -> CatalogResult<Vec<BatchInfo>> {
    let mut out = Vec::new();
    if limit == 0 {
        return Ok(out);
    }
    walk_batches(kv, topic_id, partition, from_offset, |base, e| {
        out.push(BatchInfo {
            base_offset: base,
            last_offset: e.last_offset,
            max_timestamp: e.max_timestamp,
            len: e.len,
        });
        Ok(out.len() < limit)
    })
    .await?;
    Ok(out)
}

/// A partition's state and last stable offset, from one snapshot (the fetch path needs
/// both for every partition it reads).
pub async fn stable_partition(
    kv: &dyn KvRead,
    key: &[u8; 20],
) -> CatalogResult<Option<(PartitionState, u64)>> {
    let snap = kv.snapshot().await?;
    let Some(state) = snap
        .get(tables::PARTITIONS, key)
        .await?
        .map(|v| dec::<PartitionState>(&v))
        .transpose()?
    else {
        return Ok(None);
    };
    let txns: TxnPartition = snap
        .get(tables::TXN_PARTITIONS, key)
        .await?
        .map(|v| dec(&v))
        .transpose()?
        .unwrap_or_default();
    let lso = txns.last_stable_offset(state.next_offset);
    Ok(Some((state, lso)))
}

/// The aborted transactions whose markers' keys are in `from..to`, in marker order.
pub async fn aborted_txns(
    kv: &dyn KvRead,
    from: [u8; 28],
    to: [u8; 28],
) -> CatalogResult<Vec<AbortedTxn>> {
    kv.snapshot()
        .await?
        .range(tables::ABORTED_TXNS, Range::between(&from, Some(&to)))
        .await?
        .iter()
        .map(|(_, v)| dec(v))
        .collect()
}

/// Every producer's state on the partition with key `partition`: a scan of the whole
/// table (its keys lead with the producer id), for admin requests only.
pub async fn producers_of(
    kv: &dyn KvRead,
    partition: &[u8; 20],
) -> CatalogResult<Vec<(i64, ProducerState)>> {
    let all = kv
        .snapshot()
        .await?
        .range(tables::PRODUCERS, Range::between(&[], None))
        .await?;
    let mut out = Vec::new();
    for (k, v) in all {
        if k.len() == 28 && k[8..] == partition[..] {
            let id = i64::from_be_bytes(k[..8].try_into().unwrap_or_default());
            out.push((id, dec(&v)?));
        }
    }
    Ok(out)
}

/// Every committed offset of a group.
pub async fn offsets(
    kv: &dyn KvRead,
    group: &str,
) -> CatalogResult<Vec<(String, u32, OffsetRecord)>> {
    let prefix = tables::group_prefix(group);
    let entries: Vec<(Vec<u8>, OffsetRecord)> =
        scan(kv, tables::OFFSETS, &prefix, usize::MAX).await?;
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
pub async fn list_uploads(
    kv: &dyn KvRead,
    bucket: &str,
    prefix: &str,
    after: Option<(&str, Option<&str>)>,
    limit: usize,
) -> CatalogResult<Vec<UploadRecord>> {
    let lo = tables::object_key(bucket, prefix);
    let hi = prefix_end(&lo);
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
    kv.snapshot()
        .await?
        .range(tables::UPLOADS, Range::prefix(&from, &hi).take(limit))
        .await?
        .iter()
        .map(|(_, v)| dec(v))
        .collect()
}

/// Parts of an upload with numbers above `after`, in order.
pub async fn parts(
    kv: &dyn KvRead,
    upload_id: &str,
    after: u32,
    limit: usize,
) -> CatalogResult<Vec<PartRecord>> {
    let prefix = tables::parts_prefix(upload_id);
    let hi = prefix_end(&prefix);
    let Some(from) = after.checked_add(1).map(|n| tables::part_key(upload_id, n)) else {
        return Ok(Vec::new());
    };
    kv.snapshot()
        .await?
        .range(tables::PARTS, Range::prefix(&from, &hi).take(limit))
        .await?
        .iter()
        .map(|(_, v)| dec(v))
        .collect()
}

/// Calls `each` on every entry of a table, a page at a time, from one snapshot.
async fn for_each(
    snap: &dyn KvSnapshot,
    table: Table,
    mut each: impl FnMut(&[u8]) -> CatalogResult<()>,
) -> CatalogResult<()> {
    let mut after: Option<Vec<u8>> = None;
    loop {
        let range = Range {
            from: after.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
            to: Bound::Unbounded,
            reverse: false,
            limit: WALK_PAGE * 16,
        };
        let page = snap.range(table, range).await?;
        let full = page.len() == range.limit;
        for (_, v) in &page {
            each(v)?;
        }
        match page.into_iter().next_back() {
            Some((k, _)) if full => after = Some(k),
            _ => return Ok(()),
        }
    }
}

/// Every blob the store references (object versions and multipart parts), read in one
/// snapshot so a part becoming an object's data is seen in one place or the other.
/// `OBJECTS` is not read: it only ever holds copies of the newest entries of `VERSIONS`.
pub async fn referenced_blobs(
    kv: &dyn KvRead,
) -> CatalogResult<std::collections::HashSet<storage::BlobId>> {
    let snap = kv.snapshot().await?;
    let mut out = std::collections::HashSet::new();
    for_each(snap.as_ref(), tables::VERSIONS, |v| {
        let version: ObjectVersion = dec(v)?;
        out.extend(version.data.blobs().iter().map(|b| b.id));
        Ok(())
    })
    .await?;
    for_each(snap.as_ref(), tables::PARTS, |v| {
        let part: PartRecord = dec(v)?;
        out.insert(part.blob.id);
        Ok(())
    })
    .await?;
    Ok(out)
}
