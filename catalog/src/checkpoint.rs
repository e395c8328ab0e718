//! Checkpoints: a consistent dump of every table, written as an erasure-coded blob, with a
//! pointer replicated on every drive. They bound how much log a restart replays, and
//! rebuild the store when the drive holding its file is lost.
//!
//! Dump format: `EDDYCKP1` (the digit is the layout, `format::CHECKPOINT_LAYOUT`), then
//! entries `[table tag u8][key len u32][key][value len u32][value]`, then a `0` tag.
//! Little-endian lengths. Values are in the store's format, which the dump carries as the
//! store does: the `meta` entry `store_format` (absent: format 1).

use std::path::Path;

use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableError};
use storage::{BlobStore, Urgency, replicated};

use crate::apply::{dec, enc};
use crate::error::{CatalogError, CatalogResult};
use crate::format::{self, CHECKPOINT_LAYOUT, STORE_FORMAT_KEY};
use crate::tables::{ALL, APPLIED_LSN, META};

const MAGIC: &[u8; 8] = &[b'E', b'D', b'D', b'Y', b'C', b'K', b'P', CHECKPOINT_LAYOUT];
const POINTER: &str = "checkpoint";
/// The dump tag of the `meta` table.
const META_TAG: u8 = 1;
/// Entries per store transaction while restoring.
const RESTORE_BATCH: usize = 50_000;

pub use crate::model::CheckpointPointer;

/// The newest checkpoint pointer on the drives.
pub fn pointer(blobs: &BlobStore) -> CatalogResult<Option<CheckpointPointer>> {
    replicated::read(blobs.drives(), POINTER)
        .map(|(_, bytes)| dec(&bytes))
        .transpose()
}

/// A big-endian u64 `meta` value.
pub(crate) fn u64_value(v: &[u8]) -> CatalogResult<u64> {
    v.try_into()
        .map(u64::from_be_bytes)
        .map_err(|_| CatalogError::Corrupt("store format value".into()))
}

/// The applied LSN recorded in a store.
pub fn applied_lsn(db: &impl ReadableDatabase) -> CatalogResult<u64> {
    let r = db.begin_read()?;
    let meta = match r.open_table(META) {
        Ok(t) => t,
        Err(TableError::TableDoesNotExist(_)) => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    Ok(meta
        .get(APPLIED_LSN)?
        .and_then(|v| v.value().try_into().ok().map(u64::from_be_bytes))
        .unwrap_or(0))
}

/// Dumps a consistent snapshot of `db` into a blob and points the drives at it; returns
/// the new pointer. The previous checkpoint's blob is deleted once the pointer is durable.
pub fn write(db: &Database, blobs: &BlobStore) -> CatalogResult<CheckpointPointer> {
    let previous = pointer(blobs)?;
    let r = db.begin_read()?;
    let lsn = {
        let meta = r.open_table(META)?;
        meta.get(APPLIED_LSN)?
            .and_then(|v| v.value().try_into().ok().map(u64::from_be_bytes))
            .unwrap_or(0)
    };
    // Commits go on while it is written, and their log syncs share the drives.
    let mut w = blobs.create_with(Urgency::Background)?;
    let mut buf = Vec::with_capacity(1 << 20);
    buf.extend_from_slice(MAGIC);
    for (tag, def) in ALL {
        let table = match r.open_table(def) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        for e in table.iter()? {
            let (k, v) = e?;
            let (k, v) = (k.value(), v.value());
            buf.push(tag);
            buf.extend_from_slice(&(k.len() as u32).to_le_bytes());
            buf.extend_from_slice(k);
            buf.extend_from_slice(&(v.len() as u32).to_le_bytes());
            buf.extend_from_slice(v);
            if buf.len() >= 1 << 20 {
                w.write(&buf)?;
                buf.clear();
            }
        }
    }
    buf.push(0);
    w.write(&buf)?;
    let blob = w.finish()?;
    let ptr = CheckpointPointer { lsn, blob };
    replicated::write(blobs.drives(), POINTER, lsn, &enc(&ptr)?)?;
    if let Some(old) = previous
        && old.blob.id != blob.id
    {
        blobs.delete(old.blob.id)?;
    }
    tracing::info!(lsn, bytes = blob.len, "checkpoint written");
    Ok(ptr)
}

/// Rebuilds a store file at `path` from a checkpoint (replacing whatever is there).
pub fn restore(path: &Path, blobs: &BlobStore, ptr: &CheckpointPointer) -> CatalogResult<()> {
    let tmp = path.with_extension("restoring");
    let _ = std::fs::remove_file(&tmp);
    let restored = restore_into(&tmp, blobs, ptr);
    if restored.is_err() {
        // A refused (newer) or unreadable checkpoint leaves nothing behind.
        let _ = std::fs::remove_file(&tmp);
    }
    restored?;
    std::fs::rename(&tmp, path).map_err(|e| storage::StorageError::io("rename", path, e))?;
    if let Some(dir) = path.parent() {
        storage::drives::fsync_dir(dir)?;
    }
    tracing::info!(lsn = ptr.lsn, "catalog restored from checkpoint");
    Ok(())
}

/// Writes the checkpoint's entries into a new store file at `tmp`.
fn restore_into(tmp: &Path, blobs: &BlobStore, ptr: &CheckpointPointer) -> CatalogResult<()> {
    let db = Database::create(tmp)?;
    let reader = blobs.open(ptr.blob.id)?;
    let mut stream = ChunkStream {
        chunks: Box::new(reader.chunks(0, reader.len())?),
        buf: Vec::new(),
        pos: 0,
    };
    format::check_checkpoint_magic(&stream.take(8)?)?;
    let mut done = false;
    while !done {
        let mut w = db.begin_write()?;
        w.set_durability(Durability::None)?;
        let mut n = 0;
        while n < RESTORE_BATCH {
            let tag = stream.take(1)?[0];
            if tag == 0 {
                done = true;
                break;
            }
            let def = ALL
                .iter()
                .find(|(t, _)| *t == tag)
                .map(|(_, d)| *d)
                .ok_or_else(|| CatalogError::Corrupt(format!("checkpoint table tag {tag}")))?;
            let klen = u32::from_le_bytes(stream.take(4)?.try_into().unwrap_or_default());
            let key = stream.take(klen as usize)?;
            let vlen = u32::from_le_bytes(stream.take(4)?.try_into().unwrap_or_default());
            let value = stream.take(vlen as usize)?;
            // A dump of a newer store is refused before the store file is replaced.
            if tag == META_TAG && key == STORE_FORMAT_KEY {
                format::check_store_format(u64_value(&value)?)?;
            }
            w.open_table(def)?
                .insert(key.as_slice(), value.as_slice())?;
            n += 1;
        }
        w.commit()?;
    }
    let mut w = db.begin_write()?;
    w.set_durability(Durability::Immediate)?;
    w.commit()?;
    Ok(())
}

/// A byte reader over a blob's stripe chunks.
struct ChunkStream<'a> {
    chunks: Box<dyn Iterator<Item = storage::StorageResult<Vec<u8>>> + 'a>,
    buf: Vec<u8>,
    pos: usize,
}

impl ChunkStream<'_> {
    fn take(&mut self, n: usize) -> CatalogResult<Vec<u8>> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            if self.pos == self.buf.len() {
                self.buf = self
                    .chunks
                    .next()
                    .ok_or_else(|| CatalogError::Corrupt("checkpoint ends early".into()))??;
                self.pos = 0;
            }
            let take = (n - out.len()).min(self.buf.len() - self.pos);
            out.extend_from_slice(&self.buf[self.pos..self.pos + take]);
            self.pos += take;
        }
        Ok(out)
    }
}
