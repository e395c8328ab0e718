//! Blobs: byte streams of any size, written in stripes of `k` data and `m` parity shards,
//! one shard file per drive.
//!
//! A shard file is a header, one block per stripe and a trailer. A block is the stripe's
//! logical length, the shard bytes and a checksum over the block's identity, so a block is
//! located by arithmetic (ranged reads touch only the stripes they need) and verified
//! before use. The trailer is written last: a shard without one is an unfinished write.
//!
//! It imports its spare shard files from `spare.rs`, which imports this module back on
//! purpose: the pool is a part of the store, making files with the store's ids, paths
//! and headers.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::checksum;
use crate::drives::{Drive, DriveSet, await_writeback, fsync_dir, start_writeback};
use crate::erasure::shard_len;
use crate::error::{StorageError, StorageResult};
use crate::spare::{Spare, SparePool};

const HEADER_MAGIC: &[u8; 8] = b"EDDYBLB1";
const TRAILER_MAGIC: &[u8; 8] = b"EDDYEND1";
const HEADER_LEN: u64 = 64;
const TRAILER_LEN: u64 = 32;
/// Block framing: `data_len` before the shard, checksum after it.
const BLOCK_OVERHEAD: u64 = 4 + 8;

/// Default bytes per shard in a full stripe (a 4+2 stripe then holds 1 MiB of data).
pub const DEFAULT_SHARD_SIZE: usize = 256 * 1024;

/// A blob's name: 128 random bits, shown as 32 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BlobId(pub u128);

impl BlobId {
    /// A fresh random id.
    pub fn random() -> Self {
        Self(rand::random())
    }

    fn file_name(&self) -> PathBuf {
        let hex = self.to_string();
        PathBuf::from("blobs").join(&hex[..2]).join(hex)
    }
}

impl fmt::Display for BlobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl fmt::Debug for BlobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BlobId({self})")
    }
}

impl FromStr for BlobId {
    type Err = std::num::ParseIntError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        u128::from_str_radix(s, 16).map(Self)
    }
}

/// How a blob's writes share the drives with the node log's commits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Urgency {
    /// A client waits on the blob (an S3 upload): each stripe's writeback starts as it is
    /// written and none is waited for before the finish, so the write goes at the drives'
    /// pace.
    #[default]
    Foreground,
    /// No client waits on it (a table seal, a catalog checkpoint): after each stripe the
    /// writer waits until the stripe before it is on the drives, so it has at most two
    /// stripes queued there (with the default 256 KiB shards, half a MiB per shard file)
    /// and a log commit's `fdatasync` does not wait behind megabytes of it. Beside a
    /// process writing 64 MiB files at full speed with their writeback started, a 16 KiB
    /// write and `fdatasync` took 4.8-5.4 ms at p50 and 34-38 ms at p99 (0.2 and 0.3
    /// alone); with that writer holding at most 2 MiB in flight, 0.7 and 11 ms, for 8-12 %
    /// less of its MB/s (`bench/wal_beside_bulk.py --behind 2`, 2026-12-07, one file on
    /// one disk; Eddy's own bound was not measured there).
    Background,
}

/// Writes and reads blobs on a drive set.
#[derive(Clone)]
pub struct BlobStore {
    set: Arc<DriveSet>,
    shard_size: usize,
    /// Threads that finish blobs (trailer and fsync per shard, in parallel), kept alive
    /// rather than six new threads per blob.
    syncers: Arc<rayon::ThreadPool>,
    /// Shard files made ahead of time, when the owner asked for them.
    pub(crate) spares: Option<Arc<SparePool>>,
}

impl BlobStore {
    /// A blob store with full stripes of `shard_size` bytes per shard (rounded up to even).
    /// Makes the 256 fan-out directories of every online drive (durably) up front, so the
    /// first blob in each does not pay for two directory fsyncs per drive in its write.
    pub fn new(set: Arc<DriveSet>, shard_size: usize) -> StorageResult<Self> {
        std::thread::scope(|s| {
            for d in set.drives().iter().filter(|d| d.is_online()) {
                s.spawn(move || {
                    if let Err(e) = make_fan_dirs(&d.path) {
                        // Not fatal: a shard's first write makes its directory itself.
                        tracing::warn!(drive = d.index, error = %e, "making blob directories failed");
                    }
                });
            }
        });
        // Two per drive, so two blobs finishing at once do not queue behind each other.
        let syncers = rayon::ThreadPoolBuilder::new()
            .num_threads(2 * set.drives().len().max(1))
            .thread_name(|i| format!("blob-sync-{i}"))
            .build()
            .map_err(|e| {
                StorageError::io("start blob sync threads", "", std::io::Error::other(e))
            })?;
        Ok(Self {
            set,
            shard_size: shard_len(shard_size, 1),
            syncers: Arc::new(syncers),
            spares: None,
        })
    }

    /// Removes the spare shard files an earlier process left (see [`crate::spare`]).
    /// Only for the process that holds the drives' lock.
    pub fn remove_spare_leftovers(&self) -> StorageResult<()> {
        crate::spare::remove_leftovers(self)
    }

    /// Keeps shard files of future blobs ready (see [`crate::spare`]), first removing
    /// those an earlier process left. Only for the process that holds the drives' lock
    /// and writes blobs.
    pub fn with_spares(mut self) -> StorageResult<Self> {
        self.spares = Some(SparePool::start(self.clone())?);
        Ok(self)
    }

    /// Removes the spare shard files and stops making more (at shutdown).
    pub fn release_spares(&self) {
        if let Some(p) = &self.spares {
            p.close();
        }
    }

    /// Creates one shard file of a new blob with its header written (not yet durable).
    pub(crate) fn create_shard(&self, drive: &Drive, id: BlobId) -> std::io::Result<File> {
        let (k, m) = (self.set.k(), self.set.m());
        let mut f = create_shard_file(&self.shard_path(drive, id))?;
        f.write_all(&header_bytes(id, drive.index, k, m, self.shard_size))?;
        Ok(f)
    }

    /// The drive set under this store.
    pub fn drives(&self) -> &Arc<DriveSet> {
        &self.set
    }

    fn stripe_data(&self) -> u64 {
        (self.set.k() * self.shard_size) as u64
    }

    /// Starts writing a new blob with a fresh id, for a client waiting on it.
    pub fn create(&self) -> StorageResult<BlobWriter> {
        self.create_with(Urgency::Foreground)
    }

    /// Starts writing a new blob with a fresh id.
    pub fn create_with(&self, urgency: Urgency) -> StorageResult<BlobWriter> {
        match self.spares.as_ref().and_then(|p| p.take()) {
            Some(spare) => BlobWriter::from_spare(self.clone(), spare, urgency),
            None => BlobWriter::new(self.clone(), BlobId::random(), urgency),
        }
    }

    /// Writes `data` as one blob (for payloads already in memory), for a client waiting
    /// on it.
    pub fn put(&self, data: &[u8]) -> StorageResult<BlobMeta> {
        self.put_with(data, Urgency::Foreground)
    }

    /// Writes `data` as one blob (for payloads already in memory).
    pub fn put_with(&self, data: &[u8], urgency: Urgency) -> StorageResult<BlobMeta> {
        let mut w = self.create_with(urgency)?;
        w.write(data)?;
        w.finish()
    }

    /// Opens a blob for reading; fails with [`StorageError::BlobNotFound`] when no shard
    /// has a valid trailer.
    pub fn open(&self, id: BlobId) -> StorageResult<BlobReader> {
        BlobReader::open(self.clone(), id)
    }

    /// Reads a whole blob into memory.
    pub fn get(&self, id: BlobId) -> StorageResult<Vec<u8>> {
        let r = self.open(id)?;
        r.read_range(0, r.len())
    }

    /// Removes every shard of a blob (missing shards are fine).
    pub fn delete(&self, id: BlobId) -> StorageResult<()> {
        let rel = id.file_name();
        for d in self.set.drives() {
            let path = d.join(&rel);
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(StorageError::io("remove", path, e)),
            }
        }
        Ok(())
    }

    /// Every blob with a shard on any drive (finished or not).
    pub fn list(&self) -> StorageResult<Vec<BlobId>> {
        let mut ids = std::collections::BTreeSet::new();
        for d in self.set.drives() {
            let root = d.join("blobs");
            let Ok(fans) = fs::read_dir(&root) else {
                continue;
            };
            for fan in fans.flatten() {
                let Ok(entries) = fs::read_dir(fan.path()) else {
                    continue;
                };
                for e in entries.flatten() {
                    if let Some(id) = e
                        .file_name()
                        .to_str()
                        .filter(|n| n.len() == 32)
                        .and_then(|n| n.parse().ok())
                    {
                        ids.insert(id);
                    }
                }
            }
        }
        Ok(ids.into_iter().collect())
    }

    pub(crate) fn shard_path(&self, drive: &Drive, id: BlobId) -> PathBuf {
        drive.join(id.file_name())
    }
}

/// A finished blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobMeta {
    /// Its id.
    pub id: BlobId,
    /// Its length in bytes.
    pub len: u64,
}

pub(crate) fn header_bytes(
    id: BlobId,
    shard: usize,
    k: usize,
    m: usize,
    shard_size: usize,
) -> [u8; 64] {
    let mut h = [0u8; 64];
    h[..8].copy_from_slice(HEADER_MAGIC);
    h[8..24].copy_from_slice(&id.0.to_le_bytes());
    h[24..26].copy_from_slice(&(shard as u16).to_le_bytes());
    h[26..28].copy_from_slice(&(k as u16).to_le_bytes());
    h[28..30].copy_from_slice(&(m as u16).to_le_bytes());
    h[32..36].copy_from_slice(&(shard_size as u32).to_le_bytes());
    let sum = checksum::bytes(&h[..56]);
    h[56..].copy_from_slice(&sum.to_le_bytes());
    h
}

fn trailer_bytes(id: BlobId, shard: usize, len: u64, stripes: u64) -> [u8; 32] {
    let mut t = [0u8; 32];
    t[..8].copy_from_slice(TRAILER_MAGIC);
    t[8..16].copy_from_slice(&len.to_le_bytes());
    t[16..24].copy_from_slice(&stripes.to_le_bytes());
    let sum = checksum::block(&identity(id, shard), u64::MAX, &[&t[..24]]);
    t[24..].copy_from_slice(&sum.to_le_bytes());
    t
}

fn identity(id: BlobId, shard: usize) -> [u8; 18] {
    let mut b = [0u8; 18];
    b[..16].copy_from_slice(&id.0.to_le_bytes());
    b[16..].copy_from_slice(&(shard as u16).to_le_bytes());
    b
}

fn block_checksum(id: BlobId, shard: usize, stripe: u64, data_len: u32, bytes: &[u8]) -> u64 {
    checksum::block(
        &identity(id, shard),
        stripe,
        &[&data_len.to_le_bytes(), bytes],
    )
}

/// Makes `blobs/00` ... `blobs/ff` under a drive root and fsyncs the directories that
/// hold their names.
fn make_fan_dirs(root: &std::path::Path) -> StorageResult<()> {
    let blobs = root.join("blobs");
    fs::create_dir_all(&blobs).map_err(|e| StorageError::io("create dir", &blobs, e))?;
    for fan in 0..=255u8 {
        let dir = blobs.join(format!("{fan:02x}"));
        match fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(StorageError::io("create dir", dir, e)),
        }
    }
    fsync_dir(&blobs)?;
    fsync_dir(root)
}

/// Creates a shard file, and its fan-out directory the first time one is needed (made
/// durable before any blob in it is acknowledged).
fn create_shard_file(path: &std::path::Path) -> std::io::Result<File> {
    let open = || OpenOptions::new().write(true).create_new(true).open(path);
    match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = path.parent().unwrap_or(path);
            fs::create_dir_all(dir)?;
            for d in [dir.parent(), dir.parent().and_then(|p| p.parent())]
                .into_iter()
                .flatten()
            {
                File::open(d)?.sync_all()?;
            }
            open()
        }
        other => other,
    }
}

/// Streams one blob onto the drives with memory bounded by one stripe.
pub struct BlobWriter {
    store: BlobStore,
    id: BlobId,
    files: Vec<Option<File>>,
    buf: Vec<u8>,
    stripe: u64,
    len: u64,
    finished: bool,
    /// The shard files' names are already durable (made from a spare), so finishing
    /// need not fsync their directories.
    names_durable: bool,
    urgency: Urgency,
}

impl BlobWriter {
    fn new(store: BlobStore, id: BlobId, urgency: Urgency) -> StorageResult<Self> {
        let (k, m) = (store.set.k(), store.set.m());
        let mut files = Vec::with_capacity(k + m);
        for d in store.set.drives() {
            if !d.is_online() {
                files.push(None);
                continue;
            }
            match store.create_shard(d, id) {
                Ok(f) => files.push(Some(f)),
                Err(e) => {
                    let path = store.shard_path(d, id);
                    tracing::warn!(drive = d.index, path = %path.display(), error = %e, "blob shard create failed");
                    d.record_error(true);
                    files.push(None);
                }
            }
        }
        Self::with_files(store, id, files, false, urgency)
    }

    fn from_spare(store: BlobStore, spare: Spare, urgency: Urgency) -> StorageResult<Self> {
        Self::with_files(store, spare.id, spare.files, true, urgency)
    }

    fn with_files(
        store: BlobStore,
        id: BlobId,
        files: Vec<Option<File>>,
        names_durable: bool,
        urgency: Urgency,
    ) -> StorageResult<Self> {
        let capacity = store.stripe_data() as usize;
        let w = Self {
            store,
            id,
            files,
            buf: Vec::with_capacity(capacity),
            stripe: 0,
            len: 0,
            finished: false,
            names_durable,
            urgency,
        };
        w.check_quorum()?;
        Ok(w)
    }

    /// The id the blob will have.
    pub fn id(&self) -> BlobId {
        self.id
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.len + self.buf.len() as u64
    }

    /// Whether nothing has been written yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where the first `stripes` stripes end in each shard file: only the last stripe of
    /// a blob can be short, so every one before it is a full block.
    fn shard_end(&self, stripes: u64) -> u64 {
        HEADER_LEN + stripes * (self.store.shard_size as u64 + BLOCK_OVERHEAD)
    }

    fn check_quorum(&self) -> StorageResult<()> {
        let alive = self.files.iter().filter(|f| f.is_some()).count();
        let k = self.store.set.k();
        if alive < k {
            return Err(StorageError::TooFewShards {
                present: alive,
                needed: k,
            });
        }
        Ok(())
    }

    /// Appends bytes, writing every stripe that fills up.
    pub fn write(&mut self, mut data: &[u8]) -> StorageResult<()> {
        let cap = self.store.stripe_data() as usize;
        while !data.is_empty() {
            let take = (cap - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.buf.len() == cap {
                self.flush_stripe()?;
            }
        }
        Ok(())
    }

    fn flush_stripe(&mut self) -> StorageResult<()> {
        let set = self.store.set.clone();
        let k = set.k();
        let data_len = self.buf.len();
        let sl = shard_len(data_len, k);
        self.buf.resize(sl * k, 0);
        let data: Vec<&[u8]> = self.buf.chunks(sl).collect();
        let parity = set.code().encode(&data)?;
        let dl = (data_len as u32).to_le_bytes();
        for (i, slot) in self.files.iter_mut().enumerate() {
            let Some(f) = slot else { continue };
            let shard: &[u8] = if i < k { data[i] } else { &parity[i - k] };
            let sum = block_checksum(self.id, i, self.stripe, data_len as u32, shard);
            let written = f
                .write_all(&dl)
                .and_then(|_| f.write_all(shard))
                .and_then(|_| f.write_all(&sum.to_le_bytes()));
            if let Err(e) = written {
                tracing::warn!(drive = i, blob = %self.id, error = %e, "blob shard write failed");
                set.drives()[i].record_error(true);
                *slot = None;
                continue;
            }
            start_writeback(f);
        }
        if self.urgency == Urgency::Background && self.stripe > 0 {
            let end = self.shard_end(self.stripe);
            for f in self.files.iter().flatten() {
                await_writeback(f, end);
            }
        }
        self.stripe += 1;
        self.len += data_len as u64;
        self.buf.clear();
        self.check_quorum()
    }

    /// Writes the last stripe and the trailers and fsyncs every shard and its directory;
    /// the blob is durable when this returns.
    pub fn finish(mut self) -> StorageResult<BlobMeta> {
        if !self.buf.is_empty() {
            self.flush_stripe()?;
        }
        let set = self.store.set.clone();
        let (id, len, stripes) = (self.id, self.len, self.stripe);
        let store = &self.store;
        let (tx, rx) = std::sync::mpsc::channel::<(usize, std::io::Result<()>)>();
        store.syncers.scope(|s| {
            for (i, f) in self
                .files
                .iter_mut()
                .enumerate()
                .filter_map(|(i, f)| f.as_mut().map(|f| (i, f)))
            {
                let dir = (!self.names_durable)
                    .then(|| store.shard_path(&set.drives()[i], id))
                    .and_then(|p| p.parent().map(PathBuf::from));
                let tx = tx.clone();
                s.spawn(move |_| {
                    let r = f
                        .write_all(&trailer_bytes(id, i, len, stripes))
                        .and_then(|_| f.sync_data())
                        .and_then(|_| match dir {
                            Some(dir) => File::open(dir)?.sync_all(),
                            None => Ok(()),
                        });
                    let _ = tx.send((i, r));
                });
            }
        });
        drop(tx);
        let results: Vec<(usize, std::io::Result<()>)> = rx.into_iter().collect();
        for (i, r) in results {
            if let Err(e) = r {
                tracing::warn!(drive = i, blob = %id, error = %e, "blob shard sync failed");
                set.drives()[i].record_error(true);
                self.files[i] = None;
            }
        }
        self.check_quorum()?;
        self.finished = true;
        Ok(BlobMeta { id, len })
    }
}

impl Drop for BlobWriter {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.store.delete(self.id);
        }
    }
}

/// Reads a finished blob, verifying every block and rebuilding from parity when a shard
/// is missing or corrupt.
pub struct BlobReader {
    store: BlobStore,
    id: BlobId,
    files: Vec<Option<File>>,
    len: u64,
    stripes: u64,
    shard_size: usize,
}

impl BlobReader {
    fn open(store: BlobStore, id: BlobId) -> StorageResult<Self> {
        let (k, m) = (store.set.k(), store.set.m());
        let mut files = Vec::with_capacity(k + m);
        let mut trailers: Vec<(u64, u64, usize)> = Vec::new();
        for d in store.set.drives() {
            let path = store.shard_path(d, id);
            let Ok(f) = File::open(&path) else {
                files.push(None);
                continue;
            };
            let mut h = [0u8; 64];
            let read = f.read_exact_at(&mut h, 0).is_ok();
            // A whole header of a newer layout: refused, not rebuilt as if missing.
            if read
                && h[..7] == HEADER_MAGIC[..7]
                && h[7].is_ascii_digit()
                && h[7] > HEADER_MAGIC[7]
                && u64::from_le_bytes(h[56..64].try_into().unwrap_or_default())
                    == checksum::bytes(&h[..56])
            {
                return Err(StorageError::Format {
                    what: format!("blob {id} shard {}", d.index),
                    found: u32::from(h[7] - b'0'),
                    newest: u32::from(HEADER_MAGIC[7] - b'0'),
                });
            }
            let header_ok = read
                && h[..8] == HEADER_MAGIC[..]
                && u64::from_le_bytes(h[56..64].try_into().unwrap_or_default())
                    == checksum::bytes(&h[..56])
                && h[8..24] == id.0.to_le_bytes()
                && u16::from_le_bytes([h[24], h[25]]) as usize == d.index;
            if !header_ok {
                files.push(None);
                continue;
            }
            let shard_size = u32::from_le_bytes([h[32], h[33], h[34], h[35]]) as usize;
            if let Some((len, stripes)) = read_trailer(&f, id, d.index) {
                trailers.push((len, stripes, shard_size));
            }
            files.push(Some(f));
        }
        // Every valid trailer of one blob agrees; take the most common in case one lies.
        trailers.sort_unstable();
        let best = trailers
            .chunk_by(|a, b| a == b)
            .max_by_key(|g| g.len())
            .map(|g| g[0])
            .ok_or_else(|| StorageError::BlobNotFound(id.to_string()))?;
        let (len, stripes, shard_size) = best;
        Ok(Self {
            store,
            id,
            files,
            len,
            stripes,
            shard_size,
        })
    }

    /// The blob's length.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the blob is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The blob's id.
    pub fn id(&self) -> BlobId {
        self.id
    }

    fn stripe_data(&self) -> u64 {
        (self.store.set.k() * self.shard_size) as u64
    }

    fn full_block(&self) -> u64 {
        self.shard_size as u64 + BLOCK_OVERHEAD
    }

    /// Logical bytes held by stripe `s`.
    fn stripe_len(&self, s: u64) -> u64 {
        (self.len - s * self.stripe_data()).min(self.stripe_data())
    }

    /// Reads `len` bytes at `offset`, touching only the stripes (and, when healthy, only
    /// the data shards) that hold them.
    pub fn read_range(&self, offset: u64, len: u64) -> StorageResult<Vec<u8>> {
        let mut out = Vec::with_capacity(len as usize);
        for chunk in self.chunks(offset, len)? {
            out.extend_from_slice(&chunk?);
        }
        Ok(out)
    }

    /// The bytes of `offset..offset+len` as one chunk per stripe, read lazily: memory
    /// stays at one stripe whatever the range.
    pub fn chunks(
        &self,
        offset: u64,
        len: u64,
    ) -> StorageResult<impl Iterator<Item = StorageResult<Vec<u8>>> + '_> {
        let end = offset
            .checked_add(len)
            .filter(|e| *e <= self.len)
            .ok_or_else(|| StorageError::OutOfRange {
                blob: self.id.to_string(),
                offset,
                len,
                size: self.len,
            })?;
        let sd = self.stripe_data();
        let first = offset / sd;
        let last = if len == 0 { first } else { (end - 1) / sd + 1 };
        Ok((first..last).map(move |s| {
            let base = s * sd;
            let from = offset.max(base) - base;
            let to = end.min(base + sd) - base;
            self.read_stripe(s, from as usize, to as usize)
        }))
    }

    /// Reads one shard block of stripe `s`, `None` when missing or failing its checksum.
    fn read_block(&self, shard: usize, s: u64) -> Option<Vec<u8>> {
        let f = self.files[shard].as_ref()?;
        let data_len = self.stripe_len(s) as u32;
        let sl = shard_len(data_len as usize, self.store.set.k());
        let mut block = vec![0u8; sl + BLOCK_OVERHEAD as usize];
        f.read_exact_at(&mut block, HEADER_LEN + s * self.full_block())
            .ok()?;
        let stored_len = u32::from_le_bytes(block[..4].try_into().ok()?);
        let sum = u64::from_le_bytes(block[4 + sl..].try_into().ok()?);
        if stored_len != data_len
            || sum != block_checksum(self.id, shard, s, data_len, &block[4..4 + sl])
        {
            tracing::warn!(blob = %self.id, shard, stripe = s, "corrupt block; reading from parity");
            return None;
        }
        block.truncate(4 + sl);
        block.drain(..4);
        Some(block)
    }

    /// Every shard of stripe `s`, reconstructed where needed, plus which ones were bad.
    fn stripe_shards(
        &self,
        s: u64,
        mut shards: Vec<Option<Vec<u8>>>,
    ) -> StorageResult<(Vec<Vec<u8>>, Vec<bool>)> {
        for (i, slot) in shards.iter_mut().enumerate() {
            if slot.is_none() {
                *slot = self.read_block(i, s);
            }
        }
        let bad: Vec<bool> = shards.iter().map(Option::is_none).collect();
        let present = bad.iter().filter(|b| !**b).count();
        if bad.iter().any(|b| *b) {
            self.store
                .set
                .code()
                .reconstruct(&mut shards)
                .map_err(|_| StorageError::Unrecoverable {
                    blob: self.id.to_string(),
                    stripe: s,
                    present,
                    needed: self.store.set.k(),
                })?;
        }
        Ok((shards.into_iter().flatten().collect(), bad))
    }

    fn read_stripe(&self, s: u64, from: usize, to: usize) -> StorageResult<Vec<u8>> {
        let k = self.store.set.k();
        let sl = shard_len(self.stripe_len(s) as usize, k);
        let (first, last) = (from / sl, (to.max(from + 1) - 1) / sl);
        let mut shards: Vec<Option<Vec<u8>>> = vec![None; k + self.store.set.m()];
        let mut healthy = true;
        for (i, slot) in shards.iter_mut().enumerate().take(last + 1).skip(first) {
            *slot = self.read_block(i, s);
            healthy &= slot.is_some();
        }
        let data: Vec<Vec<u8>> = if healthy {
            shards.into_iter().map(Option::unwrap_or_default).collect()
        } else {
            self.stripe_shards(s, shards)?.0
        };
        let mut out = Vec::with_capacity(to - from);
        for (i, shard) in data.iter().enumerate().take(last + 1).skip(first) {
            let lo = from.max(i * sl) - i * sl;
            let hi = to.min((i + 1) * sl) - i * sl;
            out.extend_from_slice(&shard[lo..hi]);
        }
        Ok(out)
    }

    /// Verifies every block of every shard and rewrites the shards that are missing or
    /// corrupt from the others; returns which drives were rewritten.
    pub fn heal(&self) -> StorageResult<Vec<usize>> {
        let set = self.store.set.clone();
        let (k, m) = (set.k(), set.m());
        // A shard whose file is gone or whose header/trailer is bad is rewritten whole;
        // one with a few bad blocks is patched in place.
        let whole: Vec<bool> = (0..k + m)
            .map(|i| {
                self.files[i]
                    .as_ref()
                    .and_then(|f| read_trailer(f, self.id, i))
                    .map(|(len, stripes)| (len, stripes) != (self.len, self.stripes))
                    .unwrap_or(true)
            })
            .collect();
        let mut rewrites: Vec<Option<(PathBuf, File)>> = Vec::with_capacity(k + m);
        for (i, d) in set.drives().iter().enumerate() {
            if !whole[i] || !d.is_online() {
                rewrites.push(None);
                continue;
            }
            let path = self.store.shard_path(d, self.id);
            let tmp = path.with_extension("heal");
            if let Some(dir) = path.parent().filter(|d| !d.is_dir()) {
                fs::create_dir_all(dir).map_err(|e| StorageError::io("create dir", dir, e))?;
                if let Some(parent) = dir.parent() {
                    fsync_dir(parent)?;
                }
            }
            let mut f = File::create(&tmp).map_err(|e| StorageError::io("create", &tmp, e))?;
            f.write_all(&header_bytes(self.id, i, k, m, self.shard_size))
                .map_err(|e| StorageError::io("write", &tmp, e))?;
            rewrites.push(Some((tmp, f)));
        }
        let mut patched = vec![false; k + m];
        for s in 0..self.stripes {
            let (shards, bad) = self.stripe_shards(s, vec![None; k + m])?;
            let data_len = self.stripe_len(s) as u32;
            for i in 0..k + m {
                let block = || {
                    let sum = block_checksum(self.id, i, s, data_len, &shards[i]);
                    [&data_len.to_le_bytes()[..], &shards[i], &sum.to_le_bytes()].concat()
                };
                if let Some((tmp, f)) = rewrites[i].as_mut() {
                    f.write_all(&block())
                        .map_err(|e| StorageError::io("write", tmp.clone(), e))?;
                } else if bad[i] && set.drives()[i].is_online() {
                    let path = self.store.shard_path(&set.drives()[i], self.id);
                    let f = OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .map_err(|e| StorageError::io("open", &path, e))?;
                    f.write_all_at(&block(), HEADER_LEN + s * self.full_block())
                        .map_err(|e| StorageError::io("write", &path, e))?;
                    f.sync_data()
                        .map_err(|e| StorageError::io("fsync", &path, e))?;
                    patched[i] = true;
                }
            }
        }
        let mut healed = Vec::new();
        for (i, rewrite) in rewrites.into_iter().enumerate() {
            if let Some((tmp, mut f)) = rewrite {
                let path = self.store.shard_path(&set.drives()[i], self.id);
                f.write_all(&trailer_bytes(self.id, i, self.len, self.stripes))
                    .and_then(|_| f.sync_all())
                    .and_then(|_| fs::rename(&tmp, &path))
                    .map_err(|e| StorageError::io("rewrite shard", &path, e))?;
                if let Some(dir) = path.parent() {
                    fsync_dir(dir)?;
                }
                healed.push(i);
            } else if patched[i] {
                healed.push(i);
            }
        }
        Ok(healed)
    }
}

fn read_trailer(f: &File, id: BlobId, shard: usize) -> Option<(u64, u64)> {
    let size = f.metadata().ok()?.len();
    if size < HEADER_LEN + TRAILER_LEN {
        return None;
    }
    let mut t = [0u8; 32];
    f.read_exact_at(&mut t, size - TRAILER_LEN).ok()?;
    let len = u64::from_le_bytes(t[8..16].try_into().ok()?);
    let stripes = u64::from_le_bytes(t[16..24].try_into().ok()?);
    (t == trailer_bytes(id, shard, len, stripes)).then_some((len, stripes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drives::DriveSetConfig;
    use proptest::prelude::*;

    fn store(dir: &std::path::Path, k: usize, m: usize, shard: usize) -> BlobStore {
        let set = DriveSet::open(&DriveSetConfig::under(dir, k, m)).unwrap();
        BlobStore::new(Arc::new(set), shard).unwrap()
    }

    fn pattern(len: usize, seed: u64) -> Vec<u8> {
        (0..len as u64)
            .map(|i| (i.wrapping_mul(2654435761) ^ seed) as u8)
            .collect()
    }

    #[test]
    fn round_trip_sizes_and_ranges() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path(), 4, 2, 64);
        for len in [0usize, 1, 2, 255, 256, 257, 1000, 4096] {
            let data = pattern(len, len as u64);
            let meta = s.put(&data).unwrap();
            assert_eq!(meta.len, len as u64);
            let r = s.open(meta.id).unwrap();
            assert_eq!(r.read_range(0, len as u64).unwrap(), data);
            for (off, l) in [(0, 1), (3, 70), (100, 300), (255, 2)] {
                if off + l <= len {
                    assert_eq!(
                        r.read_range(off as u64, l as u64).unwrap(),
                        &data[off..off + l]
                    );
                }
            }
            assert!(matches!(
                r.read_range(len as u64, 1),
                Err(StorageError::OutOfRange { .. })
            ));
        }
    }

    #[test]
    fn a_background_blobs_wait_ends_where_its_whole_stripes_end_and_it_reads_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path(), 4, 2, 64);
        let data = pattern(40 * 256 + 100, 3);
        let mut w = s.create_with(Urgency::Background).unwrap();
        w.write(&data[..10 * 256]).unwrap();
        // The range it waits for after a stripe ends where the stripes before end: what
        // ten of them take in a shard file, no more and no less. (Whether the wait
        // happened is not visible here: the writeback may finish on its own.)
        let shard = s.shard_path(&s.drives().drives()[5], w.id());
        assert_eq!(fs::metadata(&shard).unwrap().len(), w.shard_end(10));
        w.write(&data[10 * 256..]).unwrap();
        let meta = w.finish().unwrap();
        assert_eq!(s.get(meta.id).unwrap(), data);
        let eager = s.put(&data).unwrap();
        let size = |id| {
            fs::metadata(s.shard_path(&s.drives().drives()[5], id))
                .unwrap()
                .len()
        };
        assert_eq!(size(meta.id), size(eager.id));
    }

    #[test]
    fn unfinished_blob_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path(), 2, 1, 64);
        let mut w = s.create().unwrap();
        w.write(&pattern(1000, 1)).unwrap();
        let id = w.id();
        drop(w);
        assert!(matches!(s.open(id), Err(StorageError::BlobNotFound(_))));
        assert!(s.list().unwrap().is_empty());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]
        /// With at most `m` shards lost or corrupted the blob reads back exactly and heals
        /// to full health; with more, reads fail with a clear error.
        #[test]
        fn degraded_reads_and_heal(
            len in 0usize..3000,
            damage in proptest::collection::vec((0usize..6, any::<bool>(), any::<u16>()), 0..4),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let s = store(dir.path(), 4, 2, 64);
            let data = pattern(len, 7);
            let meta = s.put(&data).unwrap();
            let mut damaged = std::collections::BTreeSet::new();
            for (drive, delete, at) in &damage {
                let path = s.shard_path(&s.drives().drives()[*drive], meta.id);
                damaged.insert(*drive);
                if *delete {
                    let _ = fs::remove_file(&path);
                } else if let Ok(mut bytes) = fs::read(&path) {
                    let i = *at as usize % bytes.len();
                    bytes[i] ^= 0x5a;
                    fs::write(&path, bytes).unwrap();
                }
            }
            let read = s.open(meta.id).and_then(|r| r.read_range(0, len as u64));
            if damaged.len() <= 2 {
                prop_assert_eq!(read.unwrap(), data.clone());
                s.open(meta.id).unwrap().heal().unwrap();
                // Healed: every shard verifies on its own.
                let r = s.open(meta.id).unwrap();
                for i in 0..6 {
                    for st in 0..r.stripes {
                        prop_assert!(r.read_block(i, st).is_some());
                    }
                }
                prop_assert!(r.heal().unwrap().is_empty());
            } else if let Ok(got) = read {
                // More than m damaged drives can still read if the damage missed the data.
                prop_assert_eq!(got, data);
            }
        }
    }

    #[test]
    fn a_shard_header_of_a_newer_layout_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path(), 2, 1, 1024);
        let mut w = s.create().unwrap();
        w.write(b"written by a later build").unwrap();
        let meta = w.finish().unwrap();
        for d in s.set.drives() {
            let path = s.shard_path(d, meta.id);
            let mut bytes = std::fs::read(&path).unwrap();
            bytes[7] = b'2';
            let sum = checksum::bytes(&bytes[..56]);
            bytes[56..64].copy_from_slice(&sum.to_le_bytes());
            std::fs::write(&path, bytes).unwrap();
        }
        let err = s
            .open(meta.id)
            .err()
            .expect("a newer layout must be refused");
        assert!(
            matches!(
                err,
                StorageError::Format {
                    found: 2,
                    newest: 1,
                    ..
                }
            ),
            "{err}"
        );
    }
}
