//! Shard files made ahead of time. Creating six files and fsyncing six directories is a
//! large part of writing a medium-sized blob (on ext4 without a journal an inode
//! allocation also skips every recently deleted inode). A background thread creates the
//! shard files of a batch of future blobs in one fan-out directory per drive, header
//! written, and makes their names durable with one directory fsync per drive per batch;
//! a blob writer then starts from a spare and only has to `fdatasync` its shards.
//!
//! Crash safety: before a batch's files exist, their ids are listed in `blobs/spares` on
//! every drive (written to a temporary file, fsync'd, renamed, directory fsync'd). When
//! a store starts its pool, every listed id that is not a finished blob is removed, so
//! spares never outlive the process that made them; finished blobs (spares that were
//! used) are kept.
//!
//! The pool is a part of the blob store (`blob.rs`), and the two import each other on
//! purpose: the store takes its shard files from the pool, and the pool lays out files
//! with the store's own ids, paths and headers.

use std::collections::{BTreeSet, VecDeque};
use std::fs::{self, File};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

use crate::blob::{BlobId, BlobStore};
use crate::drives::{DriveSet, fsync_dir};
use crate::error::{StorageError, StorageResult};

/// Spare blobs kept ready.
const TARGET: usize = 32;
/// Spare blobs made per batch (all in one fan-out directory).
const BATCH: usize = 16;
const LIST: &str = "spares";
const LIST_TMP: &str = "spares.tmp";

/// One future blob: its id and its shard files (header written, names durable), one
/// per drive that was online when it was made.
pub(crate) struct Spare {
    pub id: BlobId,
    pub files: Vec<Option<File>>,
}

#[derive(Default)]
struct Ready {
    spares: VecDeque<Spare>,
    closed: bool,
}

/// The ready spares and the thread that refills them.
pub(crate) struct SparePool {
    ready: Mutex<Ready>,
    wake: Condvar,
    store: BlobStore,
    refiller: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl SparePool {
    /// Removes what an earlier process left listed, then starts the refill thread. The
    /// caller holds the drives' lock, so no other process writes blobs meanwhile.
    pub fn start(store: BlobStore) -> StorageResult<Arc<Self>> {
        remove_leftovers(&store)?;
        let pool = Arc::new(Self {
            ready: Mutex::new(Ready::default()),
            wake: Condvar::new(),
            store,
            refiller: Mutex::new(None),
        });
        let weak = Arc::downgrade(&pool);
        let handle = std::thread::Builder::new()
            .name("blob-spares".into())
            .spawn(move || refill(weak))
            .map_err(|e| StorageError::io("start spare thread", "", e))?;
        *pool.refiller.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
        Ok(pool)
    }

    /// A spare with a file on every drive that is online now, if one is ready.
    pub fn take(&self) -> Option<Spare> {
        let set = self.store.drives();
        loop {
            let mut spare = {
                let mut ready = self.ready.lock().unwrap_or_else(|p| p.into_inner());
                let s = ready.spares.pop_front();
                if ready.spares.len() <= TARGET - BATCH && !ready.closed {
                    self.wake.notify_one();
                }
                s?
            };
            let mut complete = true;
            for (d, f) in set.drives().iter().zip(spare.files.iter_mut()) {
                if !d.is_online() {
                    *f = None;
                } else if f.is_none() {
                    complete = false;
                }
            }
            if complete {
                return Some(spare);
            }
            // A drive was formatted back in (by the scrub) since: no shard there.
            discard(&self.store, spare);
        }
    }

    /// Spares ready now.
    #[cfg(test)]
    pub fn ready(&self) -> usize {
        self.ready
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .spares
            .len()
    }

    /// Stops refilling and removes the ready spares and the lists: blobs made from now
    /// on create their own files.
    pub fn close(&self) {
        {
            let mut ready = self.ready.lock().unwrap_or_else(|p| p.into_inner());
            ready.closed = true;
            self.wake.notify_one();
        }
        // A batch being made is finished and removed by the thread itself.
        if let Some(h) = self
            .refiller
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            let _ = h.join();
        }
        let spares =
            std::mem::take(&mut self.ready.lock().unwrap_or_else(|p| p.into_inner()).spares);
        spares.into_iter().for_each(|s| discard(&self.store, s));
        for d in self.store.drives().drives() {
            let _ = fs::remove_file(d.join("blobs").join(LIST));
        }
    }
}

/// Closes a spare's files and removes them.
fn discard(store: &BlobStore, spare: Spare) {
    drop(spare.files);
    let _ = store.delete(spare.id);
}

fn refill(pool: Weak<SparePool>) {
    loop {
        let Some(p) = pool.upgrade() else { return };
        let want = {
            let ready = p.ready.lock().unwrap_or_else(|e| e.into_inner());
            let (ready, _) = p
                .wake
                .wait_timeout_while(ready, Duration::from_secs(1), |r| {
                    r.spares.len() > TARGET - BATCH && !r.closed
                })
                .unwrap_or_else(|e| e.into_inner());
            if ready.closed {
                return;
            }
            ready.spares.len() <= TARGET - BATCH
        };
        if !want {
            continue;
        }
        let listed: Vec<BlobId> = {
            let ready = p.ready.lock().unwrap_or_else(|e| e.into_inner());
            ready.spares.iter().map(|s| s.id).collect()
        };
        match make_batch(&p.store, &listed) {
            Ok(batch) => {
                let mut ready = p.ready.lock().unwrap_or_else(|e| e.into_inner());
                if ready.closed {
                    drop(ready);
                    batch.into_iter().for_each(|s| discard(&p.store, s));
                    return;
                }
                ready.spares.extend(batch);
            }
            Err(e) => {
                tracing::warn!(error = %e, "making spare blob files failed; blobs create their own");
                drop(p);
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
}

/// Lists `listed` plus a new batch on every online drive, then creates the batch's
/// shard files and makes their names durable.
fn make_batch(store: &BlobStore, listed: &[BlobId]) -> StorageResult<Vec<Spare>> {
    let set = store.drives().clone();
    let fan = u128::from(rand::random::<u8>()) << 120;
    let ids: Vec<BlobId> = (0..BATCH)
        .map(|_| BlobId((rand::random::<u128>() & !(0xff << 120)) | fan))
        .collect();
    let all: Vec<BlobId> = listed.iter().chain(&ids).copied().collect();
    let per_drive: Vec<Option<Vec<File>>> = std::thread::scope(|s| {
        let handles: Vec<_> = set
            .drives()
            .iter()
            .map(|d| {
                let (ids, all, set, store) = (&ids, &all, &set, store);
                s.spawn(move || -> Option<Vec<File>> {
                    if !d.is_online() {
                        return None;
                    }
                    match make_on_drive(store, set, d.index, ids, all) {
                        Ok(files) => Some(files),
                        Err(e) => {
                            tracing::warn!(drive = d.index, error = %e, "spare blob files");
                            None
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().ok().flatten())
            .collect()
    });
    let mut per_drive: Vec<Option<std::vec::IntoIter<File>>> = per_drive
        .into_iter()
        .map(|f| f.map(Vec::into_iter))
        .collect();
    let present = per_drive.iter().filter(|f| f.is_some()).count();
    if present < set.k() {
        for id in &ids {
            let _ = store.delete(*id);
        }
        return Err(StorageError::TooFewShards {
            present,
            needed: set.k(),
        });
    }
    Ok(ids
        .into_iter()
        .map(|id| Spare {
            id,
            files: per_drive
                .iter_mut()
                .map(|it| it.as_mut().and_then(Iterator::next))
                .collect(),
        })
        .collect())
}

fn make_on_drive(
    store: &BlobStore,
    set: &DriveSet,
    index: usize,
    ids: &[BlobId],
    all: &[BlobId],
) -> StorageResult<Vec<File>> {
    let drive = &set.drives()[index];
    let root = drive.join("blobs");
    write_list(&root, all)?;
    let mut files = Vec::with_capacity(ids.len());
    for id in ids {
        let created = store
            .create_shard(drive, *id)
            .map_err(|e| StorageError::io("create spare", store.shard_path(drive, *id), e))?;
        files.push(created);
    }
    if let Some(dir) = store.shard_path(drive, ids[0]).parent() {
        fsync_dir(dir)?;
    }
    Ok(files)
}

/// Replaces the drive's list of spare ids, durably.
fn write_list(root: &Path, ids: &[BlobId]) -> StorageResult<()> {
    let tmp = root.join(LIST_TMP);
    let bytes: Vec<u8> = ids.iter().flat_map(|id| id.0.to_le_bytes()).collect();
    File::create(&tmp)
        .and_then(|mut f| {
            f.write_all(&bytes)?;
            f.sync_data()
        })
        .map_err(|e| StorageError::io("write", &tmp, e))?;
    let list = root.join(LIST);
    fs::rename(&tmp, &list).map_err(|e| StorageError::io("rename", &list, e))?;
    fsync_dir(root)
}

/// Removes the listed spares that never became finished blobs, and the lists.
pub(crate) fn remove_leftovers(store: &BlobStore) -> StorageResult<()> {
    let mut ids = BTreeSet::new();
    for d in store.drives().drives() {
        let Ok(bytes) = fs::read(d.join("blobs").join(LIST)) else {
            continue;
        };
        ids.extend(
            bytes
                .chunks_exact(16)
                .filter_map(|c| c.try_into().ok())
                .map(|c| BlobId(u128::from_le_bytes(c))),
        );
    }
    let mut removed = 0;
    for id in ids {
        if let Err(StorageError::BlobNotFound(_)) = store.open(id) {
            store.delete(id)?;
            removed += 1;
        }
    }
    if removed > 0 {
        tracing::info!(removed, "removed spare blob files left by an earlier run");
    }
    for d in store.drives().drives().iter().filter(|d| d.is_online()) {
        let root = d.join("blobs");
        for name in [LIST, LIST_TMP] {
            match fs::remove_file(root.join(name)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(StorageError::io("remove", root.join(name), e)),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drives::DriveSetConfig;
    use std::time::Instant;

    fn open(dir: &Path) -> BlobStore {
        let set = Arc::new(DriveSet::open(&DriveSetConfig::under(dir, 4, 2)).unwrap());
        BlobStore::new(set, 4096).unwrap().with_spares().unwrap()
    }

    fn listed(dir: &Path) -> Vec<BlobId> {
        fs::read(dir.join("drive-0/blobs").join(LIST))
            .unwrap_or_default()
            .chunks_exact(16)
            .map(|c| BlobId(u128::from_le_bytes(c.try_into().unwrap())))
            .collect()
    }

    /// Shard files on drive 0 (blobs and spares alike).
    fn shard_files(dir: &Path) -> usize {
        fs::read_dir(dir.join("drive-0/blobs"))
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|fan| fs::read_dir(fan.path()).unwrap().count())
            .sum()
    }

    fn wait_for_spares(store: &BlobStore, n: usize) {
        let pool = store.spares.as_ref().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while pool.ready() < n {
            assert!(Instant::now() < deadline, "no {n} spares made");
            std::thread::yield_now();
        }
    }

    #[test]
    fn blobs_start_from_spares_and_a_restart_removes_only_unused_ones() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        wait_for_spares(&store, BATCH);
        let spares = listed(dir.path());
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        let blob = store.put(&data).unwrap();
        assert!(
            spares.contains(&blob.id),
            "the blob did not start from a spare"
        );
        assert_eq!(store.get(blob.id).unwrap(), data);
        // The refill that the take started has finished (the thread is idle).
        wait_for_spares(&store, 2 * BATCH - 1);

        // As after a crash: the spares and their list stay behind.
        drop(store);
        let left = listed(dir.path());
        assert!(!left.is_empty());
        let store = open(dir.path());
        assert_eq!(
            store.get(blob.id).unwrap(),
            data,
            "a used spare is a blob to keep"
        );
        for id in left.iter().filter(|id| **id != blob.id) {
            assert!(
                matches!(store.open(*id), Err(StorageError::BlobNotFound(_))),
                "spare {id} left"
            );
        }

        // A clean stop removes the new spares too: only the blob stays.
        wait_for_spares(&store, BATCH);
        store.release_spares();
        assert_eq!(shard_files(dir.path()), 1);
        assert!(listed(dir.path()).is_empty());
        let again = store.put(&data).unwrap();
        assert_eq!(store.get(again.id).unwrap(), data);
    }
}
