//! The write-ahead log: a sequence of records numbered by log sequence number (LSN), each
//! erasure-coded into `k+m` shards with one frame per drive, fsync'd on every drive before
//! [`Wal::append`] returns.
//!
//! Segments are named by their first LSN and rotated for every drive at once, so a
//! segment's frames on different drives cover the same LSNs at the same offsets. Frames
//! are written at their offsets, into files that may have been made full of zeros ahead
//! (`wal_zeroed`), so a commit's syncs need not grow the files.
//!
//! A frame is a checksummed header (layout version, LSN, payload length, the payload's
//! format as the log's user names it), the shard, and one checksum per 64 KiB chunk of the
//! shard, so a small range of a record can be read and verified without reading its whole
//! shard ([`WalReader`]). Recovery decodes each LSN from any `k` good frames and stops at
//! the first LSN that has fewer (a torn tail: that record was never acknowledged); a
//! header of zeros is no frame, so a zero-filled segment's frames end where its zeros
//! start.
//!
//! The log is also where Kafka record batches live (the catalog indexes them by
//! [`LogPosition`]), so segments are kept until nothing references them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::checksum;
use crate::drives::{DriveSet, fsync_dir, start_writeback};
use crate::erasure::{shard_len, split};
use crate::error::{StorageError, StorageResult};
use crate::wal_sync::SyncThreads;
use crate::wal_zeroed::{self, ZeroedSegments};

const FRAME_MAGIC: &[u8; 4] = b"EWAL";
const FRAME_HEADER: usize = 32;
/// Frame layout 1 (builds up to 2026-11-30): `[EWAL][1 u16][shard u16][lsn u64]
/// [payload len u64][checksum u64]`; its payloads are format 1.
const FRAME_V1: u16 = 1;
/// Frame layout 2: `[EWAL][2 u16][shard u16][lsn u64][payload len u32][payload format u16]
/// [0 u16][checksum u64]`: the same 32 bytes, with the payload's format in it.
const FRAME_V2: u16 = 2;
/// The newest frame layout this build reads, and the one it writes.
pub const FRAME_VERSION: u16 = FRAME_V2;
/// The default of [`WalConfig::zero_fill_below_record_bytes`]. Zeros save each commit
/// about 1.1 ms of `fdatasync`s (2.3 ms growing, 1.2 overwriting: `bench/wal_fsync.py` on
/// the 2-core VM of 2026-12-06) and cost the disk a segment's worth of writes, about 0.1 s
/// there: worth it when a 64 MiB segment holds over about 90 commits, records under some
/// 700 KiB. Above it, a log written at hundreds of MB/s by librdkafka (6-8 MiB records)
/// ran 0.86-0.87x as fast with the zeros written beside it. Those figures are for syncs in
/// turn; with a commit's syncs at once (`wal_sync`) the same script gave 0.86 ms growing
/// against 0.68 overwriting, so the zeros now save less, and this threshold has not been
/// measured again since.
pub const ZERO_FILL_BELOW_RECORD_BYTES: u64 = 512 << 10;
/// Bytes of shard covered by one checksum.
const CHUNK: usize = 64 * 1024;

/// Bytes of the checksum table after a shard of `sl` bytes.
fn trailer_len(sl: usize) -> usize {
    8 * sl.div_ceil(CHUNK)
}

/// Bytes of a whole frame for a record of `payload_len` bytes.
pub fn frame_len(payload_len: u64, k: usize) -> u64 {
    let sl = shard_len(payload_len as usize, k);
    (FRAME_HEADER + sl + trailer_len(sl)) as u64
}

/// Where a record is: its LSN, its segment, and the offset of its frames in that segment
/// (the same on every drive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LogPosition {
    /// The record's sequence number.
    pub lsn: u64,
    /// First LSN of its segment (the segment's name).
    pub segment: u64,
    /// Byte offset of its frame in the segment file.
    pub offset: u64,
}

/// Tuning for the log.
#[derive(Debug, Clone, Copy)]
pub struct WalConfig {
    /// Payload bytes after which a new segment starts.
    pub segment_bytes: u64,
    /// The format of the payloads this writer appends, stored in every frame and handed
    /// back with each [`Record`]; what it means is the log user's business (the catalog's
    /// record formats). Frames of layout 1 carry none and read back as format 1.
    pub payload_format: u16,
    /// The next segment is zero-filled ahead ([`crate::wal_zeroed`]) while the current
    /// one's records average fewer bytes than this; 0 never zero-fills (for filesystems
    /// that allocate on every overwrite, btrfs or ZFS, where the zeros save nothing).
    pub zero_fill_below_record_bytes: u64,
}

impl Default for WalConfig {
    fn default() -> Self {
        Self {
            segment_bytes: 64 << 20,
            payload_format: 1,
            zero_fill_below_record_bytes: ZERO_FILL_BELOW_RECORD_BYTES,
        }
    }
}

fn segment_name(start: u64) -> String {
    format!("{start:020}.wal")
}

/// The catalog's log, under every drive (a node's batch log in a cluster lives in a
/// directory of its own: [`Wal::open_in`]).
pub const DEFAULT_DIR: &str = "wal";

fn wal_dir(root: &Path, dir: &Path) -> PathBuf {
    root.join(dir)
}

fn frame_header(shard_index: usize, lsn: u64, payload_len: u32, format: u16) -> [u8; FRAME_HEADER] {
    let mut h = [0u8; FRAME_HEADER];
    h[..4].copy_from_slice(FRAME_MAGIC);
    h[4..6].copy_from_slice(&FRAME_V2.to_le_bytes());
    h[6..8].copy_from_slice(&(shard_index as u16).to_le_bytes());
    h[8..16].copy_from_slice(&lsn.to_le_bytes());
    h[16..20].copy_from_slice(&payload_len.to_le_bytes());
    h[20..22].copy_from_slice(&format.to_le_bytes());
    let sum = checksum::bytes(&h[..24]);
    h[24..].copy_from_slice(&sum.to_le_bytes());
    h
}

/// A frame header that verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FrameHeader {
    shard_index: usize,
    lsn: u64,
    payload_len: u64,
    /// The payload's format (1 for layout-1 frames).
    format: u16,
}

/// What 32 bytes at a frame position are.
#[derive(Debug, PartialEq, Eq)]
enum HeaderRead {
    /// A frame of a layout this build knows.
    Frame(FrameHeader),
    /// A whole, checksummed header of a layout newer than this build: the log was written
    /// by a newer Eddy and must not be read (or cut back as if torn).
    Newer(u16),
    /// No frame: a torn write, the end of the file, or garbage.
    Torn,
}

fn parse_header(h: &[u8]) -> HeaderRead {
    let field = |r: std::ops::Range<usize>| h.get(r).unwrap_or_default();
    let u16_at = |at: usize| u16::from_le_bytes(field(at..at + 2).try_into().unwrap_or_default());
    let u64_at = |at: usize| u64::from_le_bytes(field(at..at + 8).try_into().unwrap_or_default());
    if h.len() < FRAME_HEADER || &h[..4] != FRAME_MAGIC || u64_at(24) != checksum::bytes(&h[..24]) {
        return HeaderRead::Torn;
    }
    let (payload_len, format) = match u16_at(4) {
        FRAME_V1 => (u64_at(16), 1),
        FRAME_V2 => (
            u32::from_le_bytes(field(16..20).try_into().unwrap_or_default()) as u64,
            u16_at(20),
        ),
        newer if newer > FRAME_VERSION => return HeaderRead::Newer(newer),
        _ => return HeaderRead::Torn,
    };
    HeaderRead::Frame(FrameHeader {
        shard_index: u16_at(6) as usize,
        lsn: u64_at(8),
        payload_len,
        format,
    })
}

fn newer_frame(found: u16) -> StorageError {
    StorageError::Format {
        what: "log frame layout".into(),
        found: found as u32,
        newest: FRAME_VERSION as u32,
    }
}

fn chunk_checksum(shard_index: usize, lsn: u64, chunk_index: usize, chunk: &[u8]) -> u64 {
    checksum::block(
        &shard_identity(shard_index),
        lsn,
        &[&(chunk_index as u32).to_le_bytes(), chunk],
    )
}

/// The checksum table of a shard (never empty: shards hold at least 2 bytes): one per
/// 64 KiB chunk.
fn shard_checksums(shard_index: usize, lsn: u64, shard: &[u8]) -> Vec<u8> {
    shard
        .chunks(CHUNK)
        .enumerate()
        .flat_map(|(j, c)| chunk_checksum(shard_index, lsn, j, c).to_le_bytes())
        .collect()
}

/// Verifies `bytes` (chunks `first..` of a shard) against their checksums.
fn verify_chunks(shard_index: usize, lsn: u64, first: usize, bytes: &[u8], sums: &[u8]) -> bool {
    sums.len() == 8 * bytes.len().div_ceil(CHUNK)
        && bytes
            .chunks(CHUNK)
            .zip(sums.chunks_exact(8))
            .enumerate()
            .all(|(j, (c, s))| s == chunk_checksum(shard_index, lsn, first + j, c).to_le_bytes())
}

/// One whole frame (header, shard, checksum), for rewrites by heal.
fn frame(shard_index: usize, lsn: u64, payload_len: u32, format: u16, shard: &[u8]) -> Vec<u8> {
    [
        &frame_header(shard_index, lsn, payload_len, format)[..],
        shard,
        &shard_checksums(shard_index, lsn, shard),
    ]
    .concat()
}

/// A record split into its shards: each drive's frame is written straight from here (no
/// per-drive copy).
struct EncodedRecord {
    lsn: u64,
    payload_len: u32,
    format: u16,
    /// The payload zero-padded to `k` shards.
    data: Vec<u8>,
    shard_len: usize,
    parity: Vec<Vec<u8>>,
}

impl EncodedRecord {
    fn shard(&self, i: usize) -> &[u8] {
        let k = self.data.len() / self.shard_len;
        if i < k {
            &self.data[i * self.shard_len..(i + 1) * self.shard_len]
        } else {
            &self.parity[i - k]
        }
    }

    /// Writes drive `i`'s frame at `offset` and starts its writeback (see
    /// [`Wal::append`]). Frames go at their offsets, not at the file's end: a segment may
    /// be a file of zeros made ahead ([`crate::wal_zeroed`]).
    fn write_frame(&self, i: usize, f: &File, offset: u64) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let shard = self.shard(i);
        let header = frame_header(i, self.lsn, self.payload_len, self.format);
        f.write_all_at(&header, offset)?;
        f.write_all_at(shard, offset + FRAME_HEADER as u64)?;
        f.write_all_at(
            &shard_checksums(i, self.lsn, shard),
            offset + (FRAME_HEADER + shard.len()) as u64,
        )?;
        start_writeback(f);
        Ok(())
    }
}

fn shard_identity(shard_index: usize) -> [u8; 5] {
    let i = (shard_index as u16).to_le_bytes();
    [b'w', b'a', b'l', i[0], i[1]]
}

/// One frame found on a drive.
#[derive(Debug, Clone)]
struct FrameInfo {
    lsn: u64,
    payload_len: u64,
    /// The payload's format.
    format: u16,
    /// End of the whole frame in its segment file.
    end: u64,
    /// The shard, when its checksum verified.
    shard: Option<Vec<u8>>,
}

/// The frames of one segment file, up to the first unreadable header.
#[derive(Debug, Default)]
struct SegmentScan {
    frames: Vec<FrameInfo>,
    /// The layout of a whole header that this build does not know, where the scan stopped.
    newer: Option<u16>,
}

/// Parses the frames of one segment file until the first unreadable header.
fn scan_frames(bytes: &[u8], shard_index: usize, k: usize) -> SegmentScan {
    let mut scan = SegmentScan::default();
    let mut pos = 0usize;
    while bytes.len() - pos >= FRAME_HEADER {
        let h = match parse_header(&bytes[pos..pos + FRAME_HEADER]) {
            HeaderRead::Frame(h) if h.shard_index == shard_index => h,
            HeaderRead::Newer(v) => {
                scan.newer = Some(v);
                break;
            }
            _ => break,
        };
        let Ok(payload) = usize::try_from(h.payload_len) else {
            break;
        };
        let sl = shard_len(payload, k);
        let Some(end) = (pos + FRAME_HEADER + sl)
            .checked_add(trailer_len(sl))
            .filter(|e| *e <= bytes.len())
        else {
            break;
        };
        let shard = &bytes[pos + FRAME_HEADER..pos + FRAME_HEADER + sl];
        let ok = verify_chunks(
            shard_index,
            h.lsn,
            0,
            shard,
            &bytes[pos + FRAME_HEADER + sl..end],
        );
        scan.frames.push(FrameInfo {
            lsn: h.lsn,
            payload_len: h.payload_len,
            format: h.format,
            end: end as u64,
            shard: ok.then(|| shard.to_vec()),
        });
        pos = end;
    }
    scan
}

/// Opens a new segment file at `path`: the zero-filled file `zeroed` renamed, or else an
/// empty one (anything already there is no record of this segment: recovery removed the
/// segments it did not keep). Its name is durable on return.
fn open_segment(path: &Path, zeroed: Option<&Path>) -> std::io::Result<File> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let f = match zeroed {
        Some(z) => wal_zeroed::adopt(z, path)?,
        None => OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(path)?,
    };
    File::open(dir)?.sync_all()?;
    Ok(f)
}

/// The log's writer. One per process: the catalog's committer owns it.
pub struct Wal {
    set: Arc<DriveSet>,
    /// Its directory under every drive.
    dir: Arc<Path>,
    config: WalConfig,
    /// The current segment's file on each drive (`None` where it could not be opened),
    /// shared with the sync threads.
    files: Vec<Option<Arc<File>>>,
    /// Segment starts, oldest first; the last is being written.
    segments: Vec<u64>,
    segment_written: u64,
    /// Records in the current segment.
    segment_records: u64,
    /// Frame bytes in the current segment: where the next frame goes.
    segment_offset: u64,
    next_lsn: u64,
    poisoned: bool,
    /// The next segment's files, zero-filled ahead.
    zeroed: ZeroedSegments,
    /// Threads that sync a commit's frames at once.
    sync: SyncThreads,
}

/// A record read back during recovery.
pub struct Record {
    /// Its sequence number.
    pub lsn: u64,
    /// Where it is.
    pub position: LogPosition,
    /// Its bytes.
    pub payload: Vec<u8>,
    /// Their format, as [`WalConfig::payload_format`] named it when they were appended.
    pub format: u16,
}

impl Wal {
    /// Recovers the log: calls `replay` for every record with LSN `>= from`, in order,
    /// drops a torn tail, and returns a writer that continues after the last record.
    pub fn open(
        set: Arc<DriveSet>,
        config: WalConfig,
        from: u64,
        replay: impl FnMut(Record) -> StorageResult<()>,
    ) -> StorageResult<Self> {
        Self::open_in(set, Path::new(DEFAULT_DIR), config, from, replay)
    }

    /// [`Wal::open`] for the log in directory `dir` (relative) of every drive.
    pub fn open_in(
        set: Arc<DriveSet>,
        dir: &Path,
        config: WalConfig,
        from: u64,
        mut replay: impl FnMut(Record) -> StorageResult<()>,
    ) -> StorageResult<Self> {
        let dir: Arc<Path> = Arc::from(dir);
        let segments = list_segments(&set, &dir);
        let mut next = from;
        let mut tail: Option<u64> = None;
        // Per drive: the end offset of its last frame at or below the recovered end.
        let mut keep: BTreeMap<(usize, u64), u64> = BTreeMap::new();
        let mut scanned = BTreeSet::new();
        for (i, &start) in segments.iter().enumerate() {
            let seg_end = segments.get(i + 1).copied();
            if seg_end.is_some_and(|e| e <= from) {
                continue;
            }
            scanned.insert(start);
            let frames = read_segment_frames(&set, &dir, start)?;
            let mut by_lsn: BTreeMap<u64, Vec<(usize, &FrameInfo)>> = BTreeMap::new();
            for (drive, fs) in frames.iter().enumerate() {
                for f in fs {
                    by_lsn.entry(f.lsn).or_default().push((drive, f));
                }
            }
            let mut frame_offset = 0u64;
            for (&lsn, shards) in &by_lsn {
                let offset = frame_offset;
                if let Some((_, f)) = shards.first() {
                    frame_offset += frame_len(f.payload_len, set.k());
                }
                if lsn < next {
                    for (drive, f) in shards {
                        keep.insert((*drive, start), f.end);
                    }
                    continue;
                }
                if tail.is_some() || lsn > next {
                    if decode_record(&set, shards).is_some() {
                        return Err(StorageError::Log(format!(
                            "record {next} is unrecoverable but record {lsn} after it is intact: more than m drives lost data"
                        )));
                    }
                    tail.get_or_insert(next);
                    continue;
                }
                match decode_record(&set, shards) {
                    Some((payload, format)) => {
                        let position = LogPosition {
                            lsn,
                            segment: start,
                            offset,
                        };
                        replay(Record {
                            lsn,
                            position,
                            payload,
                            format,
                        })?;
                        for (drive, f) in shards {
                            keep.insert((*drive, start), f.end);
                        }
                        next = lsn + 1;
                    }
                    None => {
                        tail = Some(lsn);
                    }
                }
            }
        }
        if let Some(t) = tail {
            tracing::warn!(lsn = t, "dropped a torn log tail");
        }
        truncate_tail(&set, &dir, &scanned, next, &keep)?;
        let dirs: Vec<PathBuf> = set
            .drives()
            .iter()
            .map(|d| wal_dir(&d.path, &dir))
            .collect();
        wal_zeroed::remove_leftovers(dirs.iter().map(PathBuf::as_path));
        let mut segments: Vec<u64> = segments.into_iter().filter(|s| *s < next).collect();
        segments.push(next);
        let files = set.drives().iter().map(|_| None).collect();
        let mut wal = Self {
            set,
            dir,
            config,
            files,
            segments,
            segment_written: 0,
            segment_records: 0,
            segment_offset: 0,
            next_lsn: next,
            poisoned: false,
            zeroed: ZeroedSegments::new(),
            sync: SyncThreads::default(),
        };
        wal.open_segment(next)?;
        Ok(wal)
    }

    /// The LSN the next record will get.
    pub fn next_lsn(&self) -> u64 {
        self.next_lsn
    }

    /// Starts of the segments on disk, oldest first.
    pub fn segments(&self) -> &[u64] {
        &self.segments
    }

    fn open_segment(&mut self, start: u64) -> StorageResult<()> {
        // A drive left out here (offline) has no file in this segment, so it cannot be
        // written at the old segment's offsets should it come back.
        for f in self.files.iter_mut().filter_map(Option::take) {
            // The sealed segment's unused zeros go; they read as its end either way, so
            // this needs no sync.
            if f.metadata().is_ok_and(|m| m.len() > self.segment_offset) {
                let _ = f.set_len(self.segment_offset);
            }
        }
        let zeroed: BTreeMap<usize, PathBuf> =
            self.zeroed.take().unwrap_or_default().into_iter().collect();
        let mut results = Vec::new();
        for i in self.online_drives() {
            let path = wal_dir(&self.set.drives()[i].path, &self.dir).join(segment_name(start));
            match open_segment(&path, zeroed.get(&i).map(PathBuf::as_path)) {
                Ok(f) => {
                    self.files[i] = Some(Arc::new(f));
                    results.push((i, Ok(())));
                }
                Err(e) => results.push((i, Err(e))),
            }
        }
        self.collect(results, "open segment")?;
        if self.segments.last() != Some(&start) {
            self.segments.push(start);
        }
        self.segment_written = 0;
        self.segment_records = 0;
        self.segment_offset = 0;
        Ok(())
    }

    /// Where the next record will go, rotating to a new segment first if the current one
    /// is full; the next [`Wal::append`] lands exactly here.
    pub fn next_position(&mut self) -> StorageResult<LogPosition> {
        if self.segment_written >= self.config.segment_bytes {
            self.open_segment(self.next_lsn)?;
        }
        Ok(LogPosition {
            lsn: self.next_lsn,
            segment: self.segments.last().copied().unwrap_or(self.next_lsn),
            offset: self.segment_offset,
        })
    }

    /// A reader for records already appended.
    pub fn reader(&self) -> WalReader {
        WalReader {
            set: self.set.clone(),
            dir: self.dir.clone(),
        }
    }

    fn online_drives(&self) -> Vec<usize> {
        self.set
            .drives()
            .iter()
            .filter(|d| d.is_online())
            .map(|d| d.index)
            .collect()
    }

    /// Takes the drives' results of one round: a drive that failed is taken offline, and
    /// the call fails when fewer than `k` drives succeeded.
    fn collect(
        &mut self,
        results: Vec<(usize, std::io::Result<()>)>,
        what: &str,
    ) -> StorageResult<()> {
        let mut ok = 0;
        for (i, result) in results {
            match result {
                Ok(()) => ok += 1,
                Err(e) => {
                    tracing::error!(drive = i, error = %e, "log {what} failed; drive taken offline");
                    self.set.drives()[i].record_error(true);
                }
            }
        }
        if ok < self.set.k() {
            self.poisoned = true;
            return Err(StorageError::TooFewShards {
                present: ok,
                needed: self.set.k(),
            });
        }
        Ok(())
    }

    /// Appends one record and returns its LSN once every online drive has fsync'd its
    /// frame. After a failure the log refuses further appends (the process must restart
    /// and recover), so a half-written LSN is never reused.
    pub fn append(&mut self, payload: Vec<u8>) -> StorageResult<LogPosition> {
        if self.poisoned {
            return Err(StorageError::Log(
                "an earlier append failed; restart to recover".into(),
            ));
        }
        let position = self.next_position()?;
        let lsn = position.lsn;
        let k = self.set.k();
        let payload_len = u32::try_from(payload.len()).map_err(|_| {
            StorageError::Log(format!(
                "a record of {} bytes is over the 4 GiB a frame holds",
                payload.len()
            ))
        })?;
        let shard_len = shard_len(payload.len(), k);
        // Padded in place: the payload is not copied on its way to the drives.
        let mut data = payload;
        data.resize(shard_len * k, 0);
        let parity = {
            let refs: Vec<&[u8]> = data.chunks(shard_len).collect();
            self.set.code().encode(&refs)?
        };
        let record = EncodedRecord {
            lsn,
            payload_len,
            format: self.config.payload_format,
            data,
            shard_len,
            parity,
        };
        // Every frame is written and its writeback started from this thread, then all are
        // synced at once (`wal_sync` has what that saves over syncing them in turn).
        let mut results = Vec::new();
        let mut written = Vec::new();
        for i in self.online_drives() {
            let Some(f) = &self.files[i] else {
                results.push((i, Err(std::io::Error::other("no open segment"))));
                continue;
            };
            match record.write_frame(i, f, position.offset) {
                Ok(()) => written.push((i, f.clone())),
                Err(e) => results.push((i, Err(e))),
            }
        }
        results.extend(self.sync.sync_data(written));
        self.collect(results, "append")?;
        self.next_lsn += 1;
        self.segment_written += payload_len as u64;
        self.segment_records += 1;
        self.segment_offset += frame_len(payload_len as u64, k);
        if self.segment_written >= self.config.segment_bytes / 4
            && self.segment_written / self.segment_records
                < self.config.zero_fill_below_record_bytes
        {
            self.zero_fill_next();
        }
        Ok(position)
    }

    /// Starts making the next segment's zero-filled files (see [`crate::wal_zeroed`]),
    /// sized for a full segment of frames plus an eighth for framing and padding.
    fn zero_fill_next(&mut self) {
        let bytes = frame_len(self.config.segment_bytes, self.set.k()).saturating_mul(9) / 8;
        let (set, dir) = (&self.set, &self.dir);
        let paths = || {
            set.drives()
                .iter()
                .filter(|d| d.is_online())
                .map(|d| (d.index, wal_dir(&d.path, dir).join(wal_zeroed::FILE_NAME)))
                .collect()
        };
        self.zeroed.request(paths, bytes);
    }

    /// Takes the sealed segments whose every record is below `lsn` (covered by a
    /// checkpoint) and for which `removable` says nothing references them any more out of
    /// the log, and returns their files to delete with [`DetachedSegments::remove`].
    ///
    /// Detaching is quick; deleting is not, so it belongs on another thread than the
    /// commits'. Unlinking a segment's files can wait on the disk for the blocks it frees
    /// (on a filesystem mounted with `discard`, a synchronous discard per file): done on
    /// the committer, a checkpoint's trim stopped every commit for 0.6-2.2 s under load
    /// (docs/benchmarks.md, 2026-12-07). Files left by a crash before they are deleted are
    /// found at the next open and detached again.
    pub fn detach_before(&mut self, lsn: u64, removable: impl Fn(u64) -> bool) -> DetachedSegments {
        let doomed: Vec<u64> = self
            .segments
            .windows(2)
            .filter(|w| w[1] <= lsn && removable(w[0]))
            .map(|w| w[0])
            .collect();
        self.segments.retain(|s| !doomed.contains(s));
        let files = doomed
            .iter()
            .flat_map(|start| {
                self.set
                    .drives()
                    .iter()
                    .map(|d| wal_dir(&d.path, &self.dir).join(segment_name(*start)))
            })
            .collect();
        DetachedSegments {
            segments: doomed.len(),
            files,
        }
    }
}

/// Sealed segments taken out of the log, whose files are still to be deleted.
#[derive(Debug, Default, Clone)]
#[must_use = "the segments' files stay on the drives until `remove` is called"]
pub struct DetachedSegments {
    segments: usize,
    files: Vec<PathBuf>,
}

impl DetachedSegments {
    /// How many segments were taken out of the log.
    pub fn segments(&self) -> usize {
        self.segments
    }

    /// Deletes the files on a thread of its own (on this one if none can be started),
    /// for a caller that must not wait for it; a failure is logged.
    pub fn remove_in_background(self) {
        if self.files.is_empty() {
            return;
        }
        // A copy of the paths, for when the thread cannot be started and takes them with it.
        let here = self.clone();
        let spawned = std::thread::Builder::new()
            .name("log-remove".into())
            .spawn(move || self.remove_or_warn());
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start a thread to delete old log segments; deleting them here");
            here.remove_or_warn();
        }
    }

    fn remove_or_warn(self) {
        if let Err(e) = self.remove() {
            tracing::warn!(error = %e, "deleting the log's old segments failed");
        }
    }

    /// Deletes the segments' files on every drive (one already gone is fine); returns how
    /// many segments there were.
    pub fn remove(self) -> StorageResult<usize> {
        for path in self.files {
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(StorageError::io("remove", path, e)),
            }
        }
        Ok(self.segments)
    }
}

/// Reads byte ranges of records already in the log. A healthy read touches only the data
/// shards that hold the range and the 64 KiB chunks around it, verifying each chunk;
/// when a shard is missing or corrupt the record is rebuilt from the other drives.
#[derive(Clone)]
pub struct WalReader {
    set: Arc<DriveSet>,
    dir: Arc<Path>,
}

impl WalReader {
    /// A reader of the log in directory `dir` (relative) of every drive of `set`, which
    /// another process may be writing: only records that writer reported appended are
    /// read.
    pub fn new_in(set: Arc<DriveSet>, dir: &Path) -> Self {
        Self {
            set,
            dir: Arc::from(dir),
        }
    }

    fn segment_path(&self, drive: usize, segment: u64) -> PathBuf {
        wal_dir(&self.set.drives()[drive].path, &self.dir).join(segment_name(segment))
    }

    /// The record's payload length, from the first drive with a valid frame header.
    fn payload_len(&self, pos: &LogPosition) -> Option<u64> {
        (0..self.set.drives().len()).find_map(|i| {
            let f = File::open(self.segment_path(i, pos.segment)).ok()?;
            read_frame_header(&f, i, pos)
        })
    }

    /// Bytes `a..b` of shard `i` of the record, verified, or `None`.
    fn read_shard_range(
        &self,
        i: usize,
        pos: &LogPosition,
        sl: usize,
        a: usize,
        b: usize,
    ) -> Option<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let f = File::open(self.segment_path(i, pos.segment)).ok()?;
        read_frame_header(&f, i, pos)?;
        let c0 = a / CHUNK;
        let c1 = b.max(a + 1).div_ceil(CHUNK);
        let lo = c0 * CHUNK;
        let hi = sl.min(c1 * CHUNK);
        let base = pos.offset + FRAME_HEADER as u64;
        let mut data = vec![0u8; hi - lo];
        f.read_exact_at(&mut data, base + lo as u64).ok()?;
        let mut sums = vec![0u8; 8 * (c1 - c0)];
        f.read_exact_at(&mut sums, base + (sl + 8 * c0) as u64)
            .ok()?;
        if !verify_chunks(i, pos.lsn, c0, &data, &sums) {
            tracing::warn!(
                drive = i,
                lsn = pos.lsn,
                "corrupt log chunk; reading from parity"
            );
            return None;
        }
        data.truncate(b - lo);
        data.drain(..a - lo);
        Some(data)
    }

    /// Reads `len` bytes at `offset` of the record at `pos`.
    pub fn read(&self, pos: &LogPosition, offset: u64, len: usize) -> StorageResult<Vec<u8>> {
        let k = self.set.k();
        let unreadable =
            |why: &str| StorageError::Log(format!("record {} unreadable: {why}", pos.lsn));
        let payload_len = self
            .payload_len(pos)
            .ok_or_else(|| unreadable("no drive has its frame"))?;
        let end = offset
            .checked_add(len as u64)
            .filter(|e| *e <= payload_len)
            .ok_or_else(|| unreadable("range outside the record"))?;
        if len == 0 {
            return Ok(Vec::new());
        }
        let sl = shard_len(payload_len as usize, k) as u64;
        let mut out = Vec::with_capacity(len);
        for i in offset / sl..=(end - 1) / sl {
            let a = offset.max(i * sl) - i * sl;
            let b = end.min((i + 1) * sl) - i * sl;
            match self.read_shard_range(i as usize, pos, sl as usize, a as usize, b as usize) {
                Some(bytes) => out.extend_from_slice(&bytes),
                None => return self.read_degraded(pos, sl as usize, offset, len),
            }
        }
        Ok(out)
    }

    fn read_degraded(
        &self,
        pos: &LogPosition,
        sl: usize,
        offset: u64,
        len: usize,
    ) -> StorageResult<Vec<u8>> {
        let n = self.set.drives().len();
        let mut shards: Vec<Option<Vec<u8>>> = (0..n)
            .map(|i| self.read_shard_range(i, pos, sl, 0, sl))
            .collect();
        self.set
            .code()
            .reconstruct(&mut shards)
            .map_err(|e| StorageError::Log(format!("record {} unrecoverable: {e}", pos.lsn)))?;
        let k = self.set.k();
        let data: Vec<u8> = shards.into_iter().take(k).flatten().flatten().collect();
        let start = offset as usize;
        Ok(data[start..start + len].to_vec())
    }
}

/// Validates the frame header at `pos` in one drive's segment; returns the payload length.
fn read_frame_header(f: &File, shard_index: usize, pos: &LogPosition) -> Option<u64> {
    use std::os::unix::fs::FileExt;
    let mut h = [0u8; FRAME_HEADER];
    f.read_exact_at(&mut h, pos.offset).ok()?;
    match parse_header(&h) {
        HeaderRead::Frame(h) if h.shard_index == shard_index && h.lsn == pos.lsn => {
            Some(h.payload_len)
        }
        _ => None,
    }
}

/// Segment starts found on any drive, oldest first.
fn list_segments(set: &DriveSet, dir: &Path) -> Vec<u64> {
    let mut starts = BTreeSet::new();
    for d in set.drives() {
        let Ok(entries) = fs::read_dir(wal_dir(&d.path, dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            if let Some(start) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".wal"))
                .and_then(|n| n.parse().ok())
            {
                starts.insert(start);
            }
        }
    }
    starts.into_iter().collect()
}

/// Every drive's frames of one segment; fails when any drive's copy holds a frame of a
/// newer layout.
fn read_segment_frames(
    set: &DriveSet,
    dir: &Path,
    start: u64,
) -> StorageResult<Vec<Vec<FrameInfo>>> {
    set.drives()
        .iter()
        .map(|d| {
            let path = wal_dir(&d.path, dir).join(segment_name(start));
            let mut bytes = Vec::new();
            match File::open(&path).and_then(|mut f| f.read_to_end(&mut bytes)) {
                Ok(_) => {
                    let scan = scan_frames(&bytes, d.index, set.k());
                    match scan.newer {
                        Some(v) => Err(newer_frame(v)),
                        None => Ok(scan.frames),
                    }
                }
                Err(_) => Ok(Vec::new()),
            }
        })
        .collect()
}

/// Decodes one record (payload and format) from the frames found for its LSN, or `None`
/// with fewer than `k` good shards of one agreed length and format.
fn decode_record(set: &DriveSet, shards: &[(usize, &FrameInfo)]) -> Option<(Vec<u8>, u16)> {
    let (k, m) = (set.k(), set.m());
    let mut kinds: BTreeMap<(u64, u16), usize> = BTreeMap::new();
    for (_, f) in shards.iter().filter(|(_, f)| f.shard.is_some()) {
        *kinds.entry((f.payload_len, f.format)).or_default() += 1;
    }
    let (&(payload_len, format), &count) = kinds.iter().max_by_key(|(_, c)| **c)?;
    if count < k {
        return None;
    }
    let mut slots: Vec<Option<Vec<u8>>> = vec![None; k + m];
    for (drive, f) in shards {
        if (f.payload_len, f.format) == (payload_len, format) && *drive < k + m {
            slots[*drive] = f.shard.clone();
        }
    }
    set.code().reconstruct(&mut slots).ok()?;
    let mut payload: Vec<u8> = slots.into_iter().take(k).flatten().flatten().collect();
    payload.truncate(payload_len as usize);
    Some((payload, format))
}

/// Cuts every drive's copy of the scanned segments back to the recovered end: frames past
/// it are torn and must not mix with the records written after restart. Segments wholly
/// before the replay start were not scanned and are left alone.
fn truncate_tail(
    set: &DriveSet,
    log_dir: &Path,
    segments: &BTreeSet<u64>,
    next: u64,
    keep: &BTreeMap<(usize, u64), u64>,
) -> StorageResult<()> {
    for d in set.drives().iter().filter(|d| d.is_online()) {
        let dir = wal_dir(&d.path, log_dir);
        for &start in segments {
            let path = dir.join(segment_name(start));
            if start >= next {
                match fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(StorageError::io("remove", path, e)),
                }
                continue;
            }
            let Ok(meta) = fs::metadata(&path) else {
                continue;
            };
            let keep_to = keep.get(&(d.index, start)).copied().unwrap_or(0);
            if meta.len() > keep_to {
                let f = OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(|e| StorageError::io("open", &path, e))?;
                f.set_len(keep_to)
                    .and_then(|_| f.sync_all())
                    .map_err(|e| StorageError::io("truncate", &path, e))?;
            }
        }
        if dir.is_dir() {
            fsync_dir(&dir)?;
        }
    }
    Ok(())
}

/// What healing the log found.
#[derive(Debug, Default, Clone, Copy)]
pub struct WalHealReport {
    /// Segments checked.
    pub segments: usize,
    /// Segment files (one drive's copy) rewritten.
    pub rewritten: usize,
}

/// Verifies every frame of the sealed segments (all but the newest, which a running
/// writer may be appending to) and rewrites a drive's segment file when any of its frames
/// is missing or corrupt. `include_last` also heals the newest one (no writer running).
pub fn heal(set: &DriveSet, include_last: bool) -> StorageResult<WalHealReport> {
    heal_in(set, Path::new(DEFAULT_DIR), include_last)
}

/// The directories (relative to a drive) of the cluster nodes' batch logs found on any
/// drive: `nodes/<number>`.
pub fn node_log_dirs(set: &DriveSet) -> Vec<PathBuf> {
    let mut dirs = BTreeSet::new();
    for d in set.drives() {
        let Ok(entries) = fs::read_dir(d.path.join("nodes")) else {
            continue;
        };
        for e in entries.flatten() {
            if let Some(n) = e.file_name().to_str().filter(|n| n.parse::<u16>().is_ok()) {
                dirs.insert(Path::new("nodes").join(n));
            }
        }
    }
    dirs.into_iter().collect()
}

/// [`heal`] for the log in directory `dir` of every drive.
pub fn heal_in(set: &DriveSet, dir: &Path, include_last: bool) -> StorageResult<WalHealReport> {
    let k = set.k();
    let mut report = WalHealReport::default();
    let segments = list_segments(set, dir);
    let sealed = if include_last {
        segments.len()
    } else {
        segments.len().saturating_sub(1)
    };
    for &start in &segments[..sealed] {
        report.segments += 1;
        let frames = read_segment_frames(set, dir, start)?;
        let mut by_lsn: BTreeMap<u64, Vec<(usize, &FrameInfo)>> = BTreeMap::new();
        for (drive, fs) in frames.iter().enumerate() {
            for f in fs {
                by_lsn.entry(f.lsn).or_default().push((drive, f));
            }
        }
        let records: Vec<(u64, (Vec<u8>, u16))> = by_lsn
            .iter()
            .map_while(|(lsn, shards)| decode_record(set, shards).map(|p| (*lsn, p)))
            .collect();
        for d in set.drives().iter().filter(|d| d.is_online()) {
            let good: BTreeSet<u64> = frames[d.index]
                .iter()
                .filter(|f| f.shard.is_some())
                .map(|f| f.lsn)
                .collect();
            let complete = frames[d.index].len() == records.len()
                && records.iter().all(|(lsn, _)| good.contains(lsn));
            if complete {
                continue;
            }
            let mut bytes = Vec::new();
            // Rewritten frames take the current layout; the payload keeps its format.
            for (lsn, (payload, format)) in &records {
                let data = split(payload, k);
                let shard = if d.index < k {
                    data[d.index].clone()
                } else {
                    let refs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
                    set.code().encode(&refs)?.swap_remove(d.index - k)
                };
                let len = u32::try_from(payload.len())
                    .map_err(|_| StorageError::Log(format!("record {lsn} is over 4 GiB")))?;
                bytes.extend_from_slice(&frame(d.index, *lsn, len, *format, &shard));
            }
            crate::drives::write_durable(&wal_dir(&d.path, dir).join(segment_name(start)), &bytes)?;
            report.rewritten += 1;
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drives::DriveSetConfig;

    fn open(dir: &Path, from: u64) -> (Wal, Vec<(u64, Vec<u8>)>) {
        let set = Arc::new(DriveSet::open(&DriveSetConfig::under(dir, 4, 2)).unwrap());
        let mut got = Vec::new();
        let config = WalConfig {
            segment_bytes: 500,
            ..WalConfig::default()
        };
        let wal = Wal::open(set, config, from, |r| {
            got.push((r.lsn, r.payload));
            Ok(())
        })
        .unwrap();
        (wal, got)
    }

    /// A log opened in the empty `dir` holding records 1 to 40 over several segments.
    fn forty_records(dir: &Path) -> Wal {
        let (mut wal, got) = open(dir, 1);
        assert!(got.is_empty());
        for i in 1..=40 {
            assert_eq!(wal.append(payload(i)).unwrap().lsn, i);
        }
        wal
    }

    fn payload(i: u64) -> Vec<u8> {
        (0..(i * 37 % 300)).map(|b| (b ^ i) as u8).collect()
    }

    #[test]
    fn records_survive_reopen_across_segments() {
        let dir = tempfile::tempdir().unwrap();
        let wal = forty_records(dir.path());
        assert!(wal.segments().len() > 3);
        drop(wal);
        let (mut wal, got) = open(dir.path(), 1);
        assert_eq!(got.len(), 40);
        for (lsn, p) in &got {
            assert_eq!(p, &payload(*lsn));
        }
        assert_eq!(wal.append(b"next".to_vec()).unwrap().lsn, 41);
        let removed = wal.detach_before(30, |_| true).remove().unwrap();
        assert!(removed > 0);
        drop(wal);
        let (_, got) = open(dir.path(), 30);
        assert_eq!(got.first().map(|r| r.0), Some(30));
        assert_eq!(got.last().map(|r| r.1.clone()), Some(b"next".to_vec()));
    }

    #[test]
    fn detached_segments_stay_until_removed_and_a_crash_first_leaves_them_to_the_next_trim() {
        let dir = tempfile::tempdir().unwrap();
        let mut wal = forty_records(dir.path());
        let on_drives = |wal: &Wal| list_segments(&wal.set, &wal.dir).len();
        let before = on_drives(&wal);
        let detached = wal.detach_before(30, |_| true);
        let n = detached.segments();
        assert!(n > 0);
        assert_eq!(wal.segments().len(), before - n, "taken out of the log");
        assert_eq!(on_drives(&wal), before, "but no file deleted yet");
        // A crash before the files are deleted: they are found again at the next open
        // and go with the next trim.
        drop(detached);
        drop(wal);
        let (mut wal, got) = open(dir.path(), 30);
        assert_eq!(got.first().map(|r| r.0), Some(30));
        let reopened = on_drives(&wal);
        assert!(reopened >= before, "the detached files are still there");
        assert_eq!(wal.detach_before(30, |_| true).remove().unwrap(), n);
        assert_eq!(on_drives(&wal), reopened - n);
        // Deleted on a thread of its own: awaited by its files going.
        let (mut wal, _) = open(dir.path(), 30);
        for i in 41..=80 {
            wal.append(payload(i)).unwrap();
        }
        let on = on_drives(&wal);
        let detached = wal.detach_before(70, |_| true);
        let n = detached.segments();
        assert!(n > 0);
        detached.remove_in_background();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while on_drives(&wal) > on - n && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(on_drives(&wal), on - n);
    }

    fn copy_tree(from: &Path, to: &Path) {
        fs::create_dir_all(to).unwrap();
        for e in fs::read_dir(from).unwrap().flatten() {
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy_tree(&e.path(), &target);
            } else {
                fs::copy(e.path(), target).unwrap();
            }
        }
    }

    #[test]
    fn zero_filled_segments_are_written_and_a_crash_in_one_recovers_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let set = Arc::new(DriveSet::open(&DriveSetConfig::under(dir.path(), 4, 2)).unwrap());
        let config = WalConfig {
            segment_bytes: 4096,
            ..WalConfig::default()
        };
        let mut wal = Wal::open(set, config, 1, |_| Ok(())).unwrap();
        let seg_file = |drive: usize, start: u64| {
            dir.path()
                .join(format!("drive-{drive}/wal/{}", segment_name(start)))
        };
        let mut appended = Vec::new();
        let mut append = |wal: &mut Wal, i: u64| {
            let pos = wal.append(payload(i)).unwrap();
            appended.push((pos.lsn, payload(i)));
            pos
        };
        // A quarter of the first segment asks for the next one's zeros.
        let mut i = 1;
        while wal.segment_written < 1024 {
            append(&mut wal, i);
            i += 1;
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !wal.zeroed.is_ready() {
            assert!(
                std::time::Instant::now() < deadline,
                "no zero-filled segment"
            );
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let first = wal.segments()[0];
        while wal.segments().len() == 1 {
            append(&mut wal, i);
            i += 1;
        }
        let second = *wal.segments().last().unwrap();
        let second_pos = append(&mut wal, i);
        i += 1;
        assert_eq!(second_pos.segment, second);
        assert!(
            fs::metadata(seg_file(0, second)).unwrap().len() > wal.segment_offset,
            "the new segment is the zero-filled file, longer than its frames"
        );
        let sealed_len = fs::metadata(seg_file(0, first)).unwrap().len();
        assert!(sealed_len > 0);
        // What a crash leaves: every appended record synced, zeros after them, maybe a
        // next segment half made. Tear one more record on fewer than k drives.
        let crashed = tempfile::tempdir().unwrap();
        copy_tree(dir.path(), crashed.path());
        let torn_at = wal.segment_offset;
        for d in 0..3 {
            let path = crashed
                .path()
                .join(format!("drive-{d}/wal/{}", segment_name(second)));
            let f = OpenOptions::new().write(true).open(&path).unwrap();
            let torn = EncodedRecord {
                lsn: i,
                payload_len: 3,
                format: 1,
                data: vec![7, 7, 7, 0],
                shard_len: 1,
                parity: vec![vec![1], vec![2]],
            };
            torn.write_frame(d, &f, torn_at).unwrap();
        }
        let crashed_set =
            Arc::new(DriveSet::open(&DriveSetConfig::under(crashed.path(), 4, 2)).unwrap());
        let mut got = Vec::new();
        let mut reopened = Wal::open(crashed_set.clone(), config, 1, |r| {
            got.push((r.lsn, r.payload));
            Ok(())
        })
        .unwrap();
        assert_eq!(got, appended, "exactly the acknowledged records, in order");
        for d in 0..6 {
            let wal_dir = crashed.path().join(format!("drive-{d}/wal"));
            assert!(!wal_dir.join(wal_zeroed::FILE_NAME).exists());
            let len = fs::metadata(wal_dir.join(segment_name(second)))
                .unwrap()
                .len();
            assert_eq!(
                len, torn_at,
                "drive {d}: the torn frame and the zeros are cut"
            );
        }
        assert_eq!(reopened.append(b"after".to_vec()).unwrap().lsn, i);
        drop(reopened);
        let mut again = Vec::new();
        Wal::open(crashed_set, config, 1, |r| {
            again.push((r.lsn, r.payload));
            Ok(())
        })
        .unwrap();
        appended.push((i, b"after".to_vec()));
        assert_eq!(again, appended);
        // The writer that was not crashed seals the zero-filled segment at its frames.
        while wal.segments().len() == 2 {
            i += 1;
            wal.append(payload(i)).unwrap();
        }
        let sealed = fs::metadata(seg_file(0, second)).unwrap().len();
        let frames: u64 = read_segment_frames(&wal.set, &wal.dir, second).unwrap()[0]
            .last()
            .unwrap()
            .end;
        assert_eq!(sealed, frames, "a sealed segment keeps no zeros");
    }

    #[test]
    fn zero_fill_turned_off_or_for_large_records_makes_no_files() {
        for (threshold, size) in [(0, 100), (1000, 2000)] {
            let dir = tempfile::tempdir().unwrap();
            let set = Arc::new(DriveSet::open(&DriveSetConfig::under(dir.path(), 4, 2)).unwrap());
            let config = WalConfig {
                segment_bytes: 4096,
                zero_fill_below_record_bytes: threshold,
                ..WalConfig::default()
            };
            let mut wal = Wal::open(set, config, 1, |_| Ok(())).unwrap();
            while wal.segments().len() < 3 {
                wal.append(vec![1; size]).unwrap();
            }
            assert!(
                !wal.zeroed.requested(),
                "threshold {threshold}, records of {size}"
            );
        }
    }

    #[test]
    fn opening_from_a_later_lsn_keeps_earlier_segments() {
        let dir = tempfile::tempdir().unwrap();
        drop(forty_records(dir.path()));
        let (_, got) = open(dir.path(), 35);
        assert_eq!(got.first().map(|r| r.0), Some(35));
        let (_, got) = open(dir.path(), 1);
        assert_eq!(
            got.len(),
            40,
            "records before the replay start must survive"
        );
    }

    #[test]
    fn ranges_read_back_healthy_and_degraded() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = open(dir.path(), 1);
        let big: Vec<u8> = (0..700_000u32).map(|i| (i % 251) as u8).collect();
        let pos = wal.append(big.clone()).unwrap();
        let small = wal.append(b"hello log".to_vec()).unwrap();
        let r = wal.reader();
        for (off, len) in [
            (0, 10),
            (70_000, 200_000),
            (174_990, 20),
            (699_990, 10),
            (0, 700_000),
        ] {
            assert_eq!(r.read(&pos, off as u64, len).unwrap(), &big[off..off + len]);
        }
        assert_eq!(r.read(&small, 6, 3).unwrap(), b"log");
        assert!(r.read(&small, 6, 4).is_err());
        drop(wal);
        // Lose a drive and corrupt another: still exact.
        fs::remove_dir_all(dir.path().join("drive-0")).unwrap();
        let victim = dir
            .path()
            .join(format!("drive-1/wal/{}", segment_name(pos.segment)));
        let mut bytes = fs::read(&victim).unwrap();
        bytes[FRAME_HEADER + 1000] ^= 1;
        fs::write(&victim, bytes).unwrap();
        let set = Arc::new(DriveSet::open(&DriveSetConfig::under(dir.path(), 4, 2)).unwrap());
        let r = WalReader {
            set,
            dir: Arc::from(Path::new(DEFAULT_DIR)),
        };
        for (off, len) in [(0, 10), (70_000, 200_000), (350_000, 20)] {
            assert_eq!(r.read(&pos, off as u64, len).unwrap(), &big[off..off + len]);
        }
    }

    #[test]
    fn torn_tail_is_dropped_and_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = open(dir.path(), 1);
        for i in 1..=3 {
            wal.append(payload(i)).unwrap();
        }
        drop(wal);
        // Tear record 3: keep only 3 of its 6 frames (fewer than k = 4).
        for d in 0..3 {
            let path = dir
                .path()
                .join(format!("drive-{d}/wal/{}", segment_name(1)));
            let bytes = fs::read(&path).unwrap();
            let frames = scan_frames(&bytes, d, 4).frames;
            fs::write(&path, &bytes[..frames[1].end as usize + 10]).unwrap();
        }
        let (mut wal, got) = open(dir.path(), 1);
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(wal.append(b"new three".to_vec()).unwrap().lsn, 3);
        drop(wal);
        let (_, got) = open(dir.path(), 1);
        assert_eq!(got.len(), 3);
        assert_eq!(got[2].1, b"new three");
    }

    #[test]
    fn lost_drives_are_read_around_and_healed() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = open(dir.path(), 1);
        for i in 1..=20 {
            wal.append(payload(i)).unwrap();
        }
        drop(wal);
        fs::remove_dir_all(dir.path().join("drive-0")).unwrap();
        let victim = dir.path().join(format!("drive-5/wal/{}", segment_name(1)));
        let mut bytes = fs::read(&victim).unwrap();
        let n = bytes.len();
        bytes[n / 2] ^= 1;
        fs::write(&victim, bytes).unwrap();
        let set = DriveSet::open(&DriveSetConfig::under(dir.path(), 4, 2)).unwrap();
        set.format_missing().unwrap();
        let report = heal(&set, true).unwrap();
        assert!(report.rewritten >= 2, "{report:?}");
        assert_eq!(heal(&set, true).unwrap().rewritten, 0);
        // Healed: any two other drives can now be lost.
        fs::remove_dir_all(dir.path().join("drive-1")).unwrap();
        fs::remove_dir_all(dir.path().join("drive-2")).unwrap();
        let (_, got) = open(dir.path(), 1);
        assert_eq!(got.len(), 20);
        for (lsn, p) in &got {
            assert_eq!(p, &payload(*lsn));
        }
    }

    #[test]
    fn node_logs_are_found_healed_and_read_from_another_reader() {
        let dir = tempfile::tempdir().unwrap();
        let set = Arc::new(DriveSet::open(&DriveSetConfig::under(dir.path(), 4, 2)).unwrap());
        let node = Path::new("nodes/3");
        let config = WalConfig {
            segment_bytes: 500,
            ..WalConfig::default()
        };
        let mut wal = Wal::open_in(set.clone(), node, config, 0, |_| Ok(())).unwrap();
        let mut at = Vec::new();
        for i in 1..=20 {
            at.push((i, wal.append(payload(i)).unwrap()));
        }
        drop(wal);
        assert!(
            !dir.path().join("drive-0/wal").exists(),
            "the catalog log is apart"
        );
        assert_eq!(node_log_dirs(&set), vec![node.to_path_buf()]);
        fs::remove_dir_all(dir.path().join("drive-0")).unwrap();
        fs::remove_dir_all(dir.path().join("drive-4")).unwrap();
        set.format_missing().unwrap();
        let report = heal_in(&set, node, true).unwrap();
        assert!(report.rewritten >= 2, "{report:?}");
        // Healed: two other drives can go, and another process's reader reads it all.
        fs::remove_dir_all(dir.path().join("drive-1")).unwrap();
        fs::remove_dir_all(dir.path().join("drive-2")).unwrap();
        let set = Arc::new(DriveSet::open(&DriveSetConfig::under(dir.path(), 4, 2)).unwrap());
        let reader = WalReader::new_in(set, node);
        for (i, pos) in at {
            let p = payload(i);
            assert_eq!(reader.read(&pos, 0, p.len()).unwrap(), p, "record {i}");
        }
    }

    /// A frame of layout 1, as the builds up to 2026-11-30 wrote it.
    fn v1_frame(shard_index: usize, lsn: u64, payload_len: u64, shard: &[u8]) -> Vec<u8> {
        let mut h = [0u8; FRAME_HEADER];
        h[..4].copy_from_slice(FRAME_MAGIC);
        h[4..6].copy_from_slice(&1u16.to_le_bytes());
        h[6..8].copy_from_slice(&(shard_index as u16).to_le_bytes());
        h[8..16].copy_from_slice(&lsn.to_le_bytes());
        h[16..24].copy_from_slice(&payload_len.to_le_bytes());
        let sum = checksum::bytes(&h[..24]);
        h[24..].copy_from_slice(&sum.to_le_bytes());
        [&h[..], shard, &shard_checksums(shard_index, lsn, shard)].concat()
    }

    /// Writes records 1..=n as layout-1 frames into segment 1 of every drive.
    fn write_v1_log(dir: &Path, n: u64) {
        let set = DriveSet::open(&DriveSetConfig::under(dir, 4, 2)).unwrap();
        for d in set.drives() {
            let mut bytes = Vec::new();
            for lsn in 1..=n {
                let p = payload(lsn);
                let data = split(&p, 4);
                let refs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
                let parity = set.code().encode(&refs).unwrap();
                let shard = if d.index < 4 {
                    &data[d.index]
                } else {
                    &parity[d.index - 4]
                };
                bytes.extend(v1_frame(d.index, lsn, p.len() as u64, shard));
            }
            fs::create_dir_all(wal_dir(&d.path, Path::new(DEFAULT_DIR))).unwrap();
            fs::write(
                wal_dir(&d.path, Path::new(DEFAULT_DIR)).join(segment_name(1)),
                bytes,
            )
            .unwrap();
        }
    }

    #[test]
    fn layout_1_frames_read_back_as_format_1_and_the_log_continues_in_layout_2() {
        let dir = tempfile::tempdir().unwrap();
        write_v1_log(dir.path(), 5);
        let set = Arc::new(DriveSet::open(&DriveSetConfig::under(dir.path(), 4, 2)).unwrap());
        let config = WalConfig {
            payload_format: 7,
            ..WalConfig::default()
        };
        let mut got = Vec::new();
        let mut wal = Wal::open(set.clone(), config, 1, |r| {
            got.push((r.lsn, r.format, r.payload));
            Ok(())
        })
        .unwrap();
        assert_eq!(got.len(), 5);
        for (lsn, format, p) in &got {
            assert_eq!((*format, p), (1, &payload(*lsn)));
        }
        let pos = wal.append(b"after the upgrade".to_vec()).unwrap();
        assert_eq!(pos.lsn, 6);
        // Ranged reads work on both layouts.
        let reader = wal.reader();
        let third = payload(3);
        assert_eq!(
            reader.read(&positions(&got)[2], 2, 10).unwrap(),
            third[2..12].to_vec()
        );
        assert_eq!(reader.read(&pos, 6, 3).unwrap(), b"the".to_vec());
        drop(wal);
        let mut formats = Vec::new();
        Wal::open(set, config, 1, |r| {
            formats.push(r.format);
            Ok(())
        })
        .unwrap();
        assert_eq!(formats, vec![1, 1, 1, 1, 1, 7]);
    }

    /// Positions of records replayed from segment 1, computed from their lengths.
    fn positions(got: &[(u64, u16, Vec<u8>)]) -> Vec<LogPosition> {
        let mut offset = 0;
        got.iter()
            .map(|(lsn, _, p)| {
                let pos = LogPosition {
                    lsn: *lsn,
                    segment: 1,
                    offset,
                };
                offset += frame_len(p.len() as u64, 4);
                pos
            })
            .collect()
    }

    #[test]
    fn a_newer_frame_layout_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = open(dir.path(), 1);
        for i in 1..=3 {
            wal.append(payload(i)).unwrap();
        }
        drop(wal);
        // Record 3's frames on every drive claim a layout from the future.
        let mut before = Vec::new();
        for d in 0..6 {
            let path = dir
                .path()
                .join(format!("drive-{d}/wal/{}", segment_name(1)));
            let mut bytes = fs::read(&path).unwrap();
            let at = scan_frames(&bytes, d, 4).frames[1].end as usize;
            bytes[at + 4..at + 6].copy_from_slice(&9u16.to_le_bytes());
            let sum = checksum::bytes(&bytes[at..at + 24]);
            bytes[at + 24..at + 32].copy_from_slice(&sum.to_le_bytes());
            fs::write(&path, &bytes).unwrap();
            before.push(bytes);
        }
        let set = Arc::new(DriveSet::open(&DriveSetConfig::under(dir.path(), 4, 2)).unwrap());
        let err = Wal::open(set.clone(), WalConfig::default(), 1, |_| Ok(()))
            .err()
            .expect("a newer layout must be refused");
        assert!(
            matches!(
                err,
                StorageError::Format {
                    found: 9,
                    newest: 2,
                    ..
                }
            ),
            "{err}"
        );
        assert!(heal(&set, true).is_err(), "heal must not rewrite it either");
        for (d, bytes) in before.iter().enumerate() {
            let path = dir
                .path()
                .join(format!("drive-{d}/wal/{}", segment_name(1)));
            assert_eq!(&fs::read(&path).unwrap(), bytes, "drive {d} was rewritten");
        }
    }
}
