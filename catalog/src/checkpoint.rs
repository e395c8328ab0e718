//! Checkpoints: a consistent dump of every table, written as an erasure-coded blob, with a
//! pointer replicated on every drive. They bound how much log a restart replays, and
//! rebuild the store when the drive holding its file is lost.
//!
//! Dump format: `EDDYCKP1`, then entries `[table tag u8][key len u32][key][value len u32]
//! [value]`, then a `0` tag. Little-endian lengths.

use std::path::Path;

use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableError};
use serde::{Deserialize, Serialize};
use storage::{BlobMeta, BlobStore, replicated};

use crate::apply::{dec, enc};
use crate::error::{CatalogError, CatalogResult};
use crate::tables::{ALL, APPLIED_LSN, META};

const MAGIC: &[u8; 8] = b"EDDYCKP1";
const POINTER: &str = "checkpoint";
/// Entries per store transaction while restoring.
const RESTORE_BATCH: usize = 50_000;

/// Where the newest checkpoint is.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckpointPointer {
    /// The last log record the checkpoint includes.
    pub lsn: u64,
    /// The dump.
    pub blob: BlobMeta,
}

/// The newest checkpoint pointer on the drives.
pub fn pointer(blobs: &BlobStore) -> CatalogResult<Option<CheckpointPointer>> {
    replicated::read(blobs.drives(), POINTER)
        .map(|(_, bytes)| dec(&bytes))
        .transpose()
}

/// The applied LSN recorded in a store.
pub fn applied_lsn(db: &Database) -> CatalogResult<u64> {
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
    let mut w = blobs.create()?;
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
    let db = Database::create(&tmp)?;
    let reader = blobs.open(ptr.blob.id)?;
    let mut stream = ChunkStream {
        chunks: Box::new(reader.chunks(0, reader.len())?),
        buf: Vec::new(),
        pos: 0,
    };
    if stream.take(8)? != MAGIC {
        return Err(CatalogError::Corrupt("checkpoint magic".into()));
    }
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
            w.open_table(def)?
                .insert(key.as_slice(), value.as_slice())?;
            n += 1;
        }
        w.commit()?;
    }
    let mut w = db.begin_write()?;
    w.set_durability(Durability::Immediate)?;
    w.commit()?;
    drop(db);
    std::fs::rename(&tmp, path).map_err(|e| storage::StorageError::io("rename", path, e))?;
    if let Some(dir) = path.parent() {
        storage::drives::fsync_dir(dir)?;
    }
    tracing::info!(lsn = ptr.lsn, "catalog restored from checkpoint");
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
