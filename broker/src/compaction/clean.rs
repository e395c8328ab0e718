//! One cleaning pass over one partition, planned from a catalog snapshot: map the latest
//! offset of every key in the cleanable dirty range, then filter the batches from the log
//! start to the end of that range, keeping per key only its latest record (at its
//! original offset) and tombstones until `delete.retention.ms` after compaction first
//! reached them. Only batches that lose records are rewritten; the pass becomes one
//! `CompactPartition` op, committed in a transaction of its own.
//!
//! Memory is bounded by the key map, one page of batches being read, and the rewritten
//! batches of one pass ([`Limits::max_pass_bytes`]; a partition that needs more takes
//! several passes, each one whole).

use bytes::{Bytes, BytesMut};
use catalog::KafkaOp;
use catalog::{
    Catalog, CatalogResult, CompactedBatch, CompactionState, Horizon, Op, PartitionState,
    StoredBatch,
};
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::dirty::{Dirty, Walk};
use super::keymap::KeyMap;
use super::policy::Policy;

/// Batch index entries read at a time while walking the dirty part.
const INDEX_PAGE: usize = 1024;
/// Batch bytes read from the log at a time.
const READ_PAGE: usize = 4 << 20;
/// Most horizons a partition keeps; older neighbours merge (keeping the later time, so a
/// tombstone is only ever kept longer, never shorter).
const MAX_HORIZONS: usize = 32;

const ATTR_CONTROL: i16 = 1 << 5;
/// Bytes of a v2 batch header, before the records.
const HEADER_LEN: usize = 61;

/// Bounds of one pass.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes the key map may take.
    pub map_bytes: usize,
    /// Rewritten batch bytes one pass may produce.
    pub max_pass_bytes: usize,
}

/// A planned pass and what it removes.
#[derive(Debug)]
pub struct Pass {
    /// The op to commit.
    pub op: Op,
    /// Records it removes.
    pub records: u64,
    /// Batch bytes it frees.
    pub bytes: u64,
    /// Whether the partition has cleanable work left after it.
    pub more: bool,
}

/// What looking at a partition found.
#[derive(Debug)]
pub struct Examined {
    /// Its dirty ratio (for the metrics).
    pub ratio: f64,
    /// The pass to commit, when one is due and changes something.
    pub pass: Option<Pass>,
}

/// Looks at one partition and plans a pass if one is due at `now_ms`.
pub async fn examine(
    catalog: &dyn Catalog,
    topic: &catalog::TopicRecord,
    partition: u32,
    policy: &Policy,
    now_ms: i64,
    limits: Limits,
) -> CatalogResult<Examined> {
    let topic_id = topic.id;
    let Some((st, lso)) = catalog
        .kafka()
        .stable_partition(topic_id, partition)
        .await?
    else {
        return Ok(Examined {
            ratio: 0.0,
            pass: None,
        });
    };
    let state = catalog
        .kafka()
        .compaction(topic_id, partition)
        .await?
        .unwrap_or_default();
    let first_dirty = state.cleaned_to.max(st.log_start_offset);
    // Records a topic's expansion has not read stay as they are until its table holds
    // them.
    // Nor does anything at or past the last stable offset: an open transaction may
    // still abort, and its records must not hide older values of their keys.
    let limit = match catalog.iceberg().expanded_to(topic, partition).await? {
        Some(l) => Some(l.min(lso)),
        None => (lso < st.next_offset).then_some(lso),
    };
    let mut walk = Walk::new(*policy, now_ms, first_dirty).keeping_from(limit);
    let mut from = first_dirty;
    loop {
        let page = catalog
            .kafka()
            .batch_index(topic_id, partition, from, INDEX_PAGE)
            .await?;
        for b in page.iter().filter(|b| b.base_offset >= first_dirty) {
            walk.step(b);
        }
        match page.last() {
            Some(b) if page.len() == INDEX_PAGE => from = b.last_offset + 1,
            _ => break,
        }
    }
    let dirty = walk.finish(st.next_offset, st.bytes);
    let ratio = dirty.ratio();
    let tombstones_due = state.horizons.iter().any(|h| {
        h.tombstones > 0
            && h.end > st.log_start_offset
            && h.reached_ms.saturating_add(policy.delete_retention_ms) <= now_ms
    });
    if !dirty.due(policy, now_ms) && !tombstones_due {
        return Ok(Examined { ratio, pass: None });
    }
    let aborted = catalog
        .txns()
        .aborted_txns(
            topic_id,
            partition,
            st.log_start_offset,
            dirty.cleanable_end,
        )
        .await?;
    let cleaner = Cleaner {
        catalog,
        topic_id,
        partition,
        policy,
        now_ms,
        limits,
        st,
        state,
        aborted,
    };
    Ok(Examined {
        ratio,
        pass: cleaner.run(&dirty).await?,
    })
}

struct Cleaner<'a> {
    catalog: &'a dyn Catalog,
    topic_id: u128,
    partition: u32,
    policy: &'a Policy,
    now_ms: i64,
    limits: Limits,
    st: PartitionState,
    state: CompactionState,
    /// The aborted transactions of the range a pass reads: their batches hold no value
    /// a reader sees, so they go, and they never count as a key's latest.
    aborted: Vec<catalog::AbortedTxn>,
}

/// What filtering found so far.
#[derive(Default)]
struct Filtered {
    removed: Vec<u64>,
    added: Vec<CompactedBatch>,
    added_bytes: usize,
    records: u64,
    bytes: u64,
    /// Retained tombstones per horizon (index into the old horizons; one more slot for
    /// the range this pass reaches first).
    tombstones: Vec<u64>,
}

impl Cleaner<'_> {
    /// Calls `each` on the stored batches from `from` until `end` (exclusive), while it
    /// returns `true`.
    async fn batches(
        &self,
        from: u64,
        end: u64,
        mut each: impl FnMut(&StoredBatch) -> bool,
    ) -> CatalogResult<()> {
        let mut pos = from;
        while pos < end {
            let page = self
                .catalog
                .kafka()
                .read_batches(self.topic_id, self.partition, pos, READ_PAGE)
                .await?;
            if page.is_empty() {
                break;
            }
            for b in &page {
                if b.base_offset >= end {
                    return Ok(());
                }
                if b.last_offset < from {
                    continue;
                }
                if !each(b) {
                    return Ok(());
                }
                pos = b.last_offset + 1;
            }
        }
        Ok(())
    }

    async fn run(self, dirty: &Dirty) -> CatalogResult<Option<Pass>> {
        let log_start = self.st.log_start_offset;
        let first_dirty = dirty.first_dirty;
        // 1. The key map over as much of the cleanable dirty range as it holds.
        let mut map = KeyMap::with_bytes(self.limits.map_bytes);
        let mut map_end = first_dirty;
        if dirty.any() {
            self.batches(first_dirty, dirty.cleanable_end, |b| {
                if b.is_aborted(&self.aborted) {
                    map_end = b.last_offset + 1;
                    return !map.full();
                }
                if let Some(records) = records_of(b) {
                    for r in &records {
                        if let Some(key) = &r.key {
                            map.insert(key, r.offset as u64);
                        }
                    }
                }
                map_end = b.last_offset + 1;
                !map.full()
            })
            .await?;
        }
        // 2. Filter everything before the map's end.
        let horizons = self
            .state
            .horizons
            .iter()
            .filter(|h| h.end > log_start)
            .copied()
            .collect::<Vec<_>>();
        let mut f = Filtered {
            tombstones: vec![0; horizons.len() + 1],
            ..Filtered::default()
        };
        let mut clean_end = map_end;
        let scan_end = map_end.max(first_dirty);
        self.batches(log_start, scan_end, |b| {
            let more = self.filter(b, &map, first_dirty, &horizons, &mut f);
            if !more {
                clean_end = b.last_offset + 1;
            }
            more
        })
        .await?;
        // 3. The new state.
        let cleaned_to = if clean_end > first_dirty {
            clean_end.min(map_end)
        } else {
            first_dirty
        };
        let mut new_horizons = Vec::with_capacity(horizons.len() + 1);
        for (i, h) in horizons.iter().enumerate() {
            // A range the filter went all the way through has its tombstones recounted;
            // one it stopped in keeps the old count (too many only brings a pass sooner).
            let tombstones = if h.end <= clean_end {
                f.tombstones[i]
            } else {
                h.tombstones
            };
            new_horizons.push(Horizon { tombstones, ..*h });
        }
        if cleaned_to > first_dirty {
            new_horizons.push(Horizon {
                end: cleaned_to,
                reached_ms: self.now_ms,
                tombstones: f.tombstones[horizons.len()],
            });
        }
        merge_horizons(&mut new_horizons);
        let state = CompactionState {
            cleaned_to,
            passes: self.state.passes + 1,
            horizons: new_horizons,
        };
        if f.removed.is_empty()
            && state.cleaned_to == self.state.cleaned_to
            && state.horizons == self.state.horizons
        {
            return Ok(None);
        }
        let more = cleaned_to < dirty.cleanable_end;
        Ok(Some(Pass {
            op: Op::Kafka(KafkaOp::CompactPartition {
                topic_id: self.topic_id,
                partition: self.partition,
                log_start,
                expected_passes: self.state.passes,
                removed: f.removed,
                added: f.added,
                state,
            }),
            records: f.records,
            bytes: f.bytes,
            more,
        }))
    }

    /// Filters one batch into `f`; `false` once the pass has produced its most bytes.
    fn filter(
        &self,
        b: &StoredBatch,
        map: &KeyMap,
        first_dirty: u64,
        horizons: &[Horizon],
        f: &mut Filtered,
    ) -> bool {
        let Some(records) = records_of(b) else {
            return true;
        };
        let log_start = self.st.log_start_offset;
        let horizon_of = |offset: u64| horizons.iter().position(|h| offset < h.end);
        let mut kept = Vec::with_capacity(records.len());
        let mut kept_tombstones = Vec::new();
        let aborted = b.is_aborted(&self.aborted);
        for r in records.iter().filter(|_| !aborted) {
            let offset = r.offset as u64;
            let keep = match &r.key {
                // Only ever readable before the topic was compacted; Kafka's cleaner
                // drops such records too.
                None => false,
                Some(_) if offset < log_start => false,
                Some(key) if map.latest(key).is_some_and(|latest| latest > offset) => false,
                Some(_) if r.value.is_some() => true,
                // A tombstone: kept while its horizon has not passed.
                Some(_) => {
                    let slot = if offset >= first_dirty {
                        None
                    } else {
                        horizon_of(offset)
                    };
                    let reached = slot.map_or(self.now_ms, |i| horizons[i].reached_ms);
                    let keep =
                        reached.saturating_add(self.policy.delete_retention_ms) > self.now_ms;
                    if keep {
                        kept_tombstones.push(slot.unwrap_or(horizons.len()));
                    }
                    keep
                }
            };
            if keep {
                kept.push(r.clone());
            }
        }
        for slot in kept_tombstones {
            f.tombstones[slot] += 1;
        }
        if kept.len() == records.len() {
            return true;
        }
        let replacement = if kept.is_empty() {
            // The partition's last batch stays, empty, as Kafka's cleaner keeps it: its
            // last offset is what carries a reader to the high watermark.
            (b.last_offset + 1 >= self.st.next_offset)
                .then(|| empty(b))
                .flatten()
        } else {
            match rewrite(b, &kept) {
                Some(r) => Some(r),
                // Kept whole rather than lose what it cannot rewrite.
                None => return true,
            }
        };
        f.removed.push(b.base_offset);
        f.records += (records.len() - kept.len()) as u64;
        let old_len = b.bytes.len() as u64;
        match replacement {
            Some(added) => {
                f.bytes += old_len.saturating_sub(added.batch.len() as u64);
                f.added_bytes += added.batch.len();
                f.added.push(added);
            }
            None => f.bytes += old_len,
        }
        f.added_bytes < self.limits.max_pass_bytes
    }
}

/// The records of a data batch; `None` for control batches (kept as they are: they
/// carry no key, and transaction markers must outlive the data they end) and for bytes
/// that do not decode (kept too: the cleaner never drops what it cannot read).
fn records_of(b: &StoredBatch) -> Option<Vec<Record>> {
    let attributes = b
        .bytes
        .get(21..23)
        .map(|a| i16::from_be_bytes([a[0], a[1]]))?;
    if attributes & ATTR_CONTROL != 0 {
        return None;
    }
    match RecordBatchDecoder::decode(&mut b.bytes.clone()) {
        Ok(set) => Some(set.records),
        Err(e) => {
            tracing::warn!(base_offset = b.base_offset, error = %e, "compaction skips a batch it cannot decode");
            None
        }
    }
}

/// The compacted form of `b` holding `kept` (`None` when nothing is kept): the same
/// compression, producer fields and timestamp type, each record at its own offset, and
/// the batch's original last offset (so a reader moves past every offset it covered, as
/// with Kafka's cleaner).
fn rewrite(b: &StoredBatch, kept: &[Record]) -> Option<CompactedBatch> {
    let first = kept.first()?;
    let compression = match b.bytes.get(22).map(|a| a & 7) {
        Some(1) => Compression::Gzip,
        Some(2) => Compression::Snappy,
        Some(3) => Compression::Lz4,
        Some(4) => Compression::Zstd,
        _ => Compression::None,
    };
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression,
    };
    if let Err(e) = RecordBatchEncoder::encode(&mut buf, kept.iter(), &options) {
        tracing::warn!(base_offset = b.base_offset, error = %e, "compaction cannot re-encode a batch; keeping it");
        return None;
    }
    // One batch, or the bytes would not be what the index says they are (records of one
    // decoded batch always encode as one).
    let encoded_len = buf
        .get(8..12)
        .map(|l| i32::from_be_bytes([l[0], l[1], l[2], l[3]]) as usize + 12);
    if buf.len() < HEADER_LEN || encoded_len != Some(buf.len()) {
        tracing::warn!(
            base_offset = b.base_offset,
            "compaction re-encoded a batch into several; keeping it"
        );
        return None;
    }
    if buf[43..51] == (-1i64).to_be_bytes() {
        // Not an idempotent producer's: no sequence, as it was.
        buf[53..57].copy_from_slice(&(-1i32).to_be_bytes());
    }
    let base_offset = first.offset as u64;
    let delta = i32::try_from(b.last_offset - base_offset).ok()?;
    buf[23..27].copy_from_slice(&delta.to_be_bytes());
    let mut max_timestamp = kept.iter().map(|r| r.timestamp).max().unwrap_or(-1);
    if first.timestamp_type == TimestampType::LogAppend {
        // Readers take a LogAppendTime batch's max timestamp as every record's time.
        max_timestamp = b.max_timestamp;
        buf[35..43].copy_from_slice(&max_timestamp.to_be_bytes());
    }
    reseal(&mut buf);
    Some(CompactedBatch {
        base_offset,
        last_offset: b.last_offset,
        max_timestamp,
        batch: Bytes::from(buf),
    })
}

/// `b` with no records left: its header (offsets, producer fields, timestamps) over an
/// uncompressed empty record set, as Kafka keeps a batch whose records all went.
fn empty(b: &StoredBatch) -> Option<CompactedBatch> {
    let mut buf = BytesMut::from(b.bytes.get(..HEADER_LEN)?);
    buf[8..12].copy_from_slice(&((HEADER_LEN - 12) as i32).to_be_bytes());
    buf[22] &= !7;
    buf[57..61].copy_from_slice(&0i32.to_be_bytes());
    reseal(&mut buf);
    Some(CompactedBatch {
        base_offset: b.base_offset,
        last_offset: b.last_offset,
        max_timestamp: b.max_timestamp,
        batch: buf.freeze(),
    })
}

/// Recomputes a batch's CRC-32C (over everything from the attributes on).
fn reseal(buf: &mut BytesMut) {
    let crc = crc32c::crc32c(&buf[21..]);
    buf[17..21].copy_from_slice(&crc.to_be_bytes());
}

/// Merges neighbouring horizons until at most [`MAX_HORIZONS`] are left: first ranges
/// without tombstones, then the oldest pair.
fn merge_horizons(h: &mut Vec<Horizon>) {
    while h.len() > MAX_HORIZONS {
        let i = (0..h.len() - 1)
            .find(|&i| h[i].tombstones == 0 && h[i + 1].tombstones == 0)
            .unwrap_or(0);
        let (a, b) = (h[i], h[i + 1]);
        h[i + 1] = Horizon {
            end: b.end,
            reached_ms: a.reached_ms.max(b.reached_ms),
            tombstones: a.tombstones + b.tombstones,
        };
        h.remove(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_tombstones_longer_never_shorter() {
        let mut h: Vec<Horizon> = (0..40)
            .map(|i| Horizon {
                end: (i + 1) * 10,
                reached_ms: i as i64,
                tombstones: u64::from(i % 2 == 0),
            })
            .collect();
        merge_horizons(&mut h);
        assert_eq!(h.len(), MAX_HORIZONS);
        assert_eq!(h.last().unwrap().end, 400);
        assert_eq!(h.iter().map(|x| x.tombstones).sum::<u64>(), 20);
        // Every original range's time is at most the time of the horizon now holding it.
        for i in 0..40u64 {
            let holder = h.iter().find(|x| i * 10 < x.end).unwrap();
            assert!(holder.reached_ms >= i as i64);
        }
    }

    fn record(offset: i64, key: &str, value: Option<&str>) -> Record {
        Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset,
            // As the decoder gives them for a batch without a producer id.
            sequence: (offset - 100) as i32 - 1,
            timestamp: 1000 + offset,
            key: Some(Bytes::from(key.to_owned())),
            value: value.map(|v| Bytes::from(v.to_owned())),
            headers: Default::default(),
        }
    }

    #[test]
    fn a_rewritten_batch_keeps_offsets_and_compression() {
        let records: Vec<_> = (0..5)
            .map(|i| record(100 + i, &format!("k{}", i % 2), Some("v")))
            .collect();
        let mut buf = BytesMut::new();
        RecordBatchEncoder::encode(
            &mut buf,
            records.iter(),
            &RecordEncodeOptions {
                version: 2,
                compression: Compression::Lz4,
            },
        )
        .unwrap();
        let stored = StoredBatch {
            base_offset: 100,
            last_offset: 104,
            max_timestamp: 1104,
            bytes: buf.freeze(),
        };
        let decoded = records_of(&stored).unwrap();
        let kept: Vec<_> = decoded.into_iter().filter(|r| r.offset >= 103).collect();
        let out = rewrite(&stored, &kept).unwrap();
        assert_eq!((out.base_offset, out.last_offset), (103, 104));
        let dropped_last: Vec<_> = records_of(&stored)
            .unwrap()
            .into_iter()
            .filter(|r| r.offset == 101)
            .collect();
        let mid = rewrite(&stored, &dropped_last).unwrap();
        assert_eq!(
            (mid.base_offset, mid.last_offset),
            (101, 104),
            "covers to 104"
        );
        let e = empty(&stored).unwrap();
        assert_eq!(e.batch.len(), HEADER_LEN);
        let set = RecordBatchDecoder::decode(&mut e.batch.clone()).unwrap();
        assert!(set.records.is_empty());
        assert_eq!(out.max_timestamp, 1104);
        assert_eq!(out.batch[22] & 7, 3, "still lz4");
        assert_eq!(out.batch[53..57], (-1i32).to_be_bytes(), "no sequence");
        let again = RecordBatchDecoder::decode(&mut out.batch.clone()).unwrap();
        let offsets: Vec<_> = again.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, [103, 104]);
        assert_eq!(again.records[0].key.as_deref(), Some(&b"k1"[..]));
    }
}
