//! Orphaned blobs: blobs no catalog record references. A crash can leave them between a
//! blob's write and the commit that would reference it (an upload, a copy, a table seal),
//! mid-write, or between a commit that frees blobs and their removal.
//!
//! Only blobs that existed when the catalog opened are candidates: the list is taken
//! before any writer of this process starts, so nothing in it can be in flight, and no
//! later commit can reference a blob it did not already reference (copies and seals
//! write new blobs). The references are then read in one snapshot, and the current
//! checkpoint's blob is kept with them.

use std::collections::HashSet;

use storage::{BlobId, BlobStore};

use crate::checkpoint;
use crate::error::CatalogResult;
use crate::kv::KvRead;
use crate::read;

/// What a collection found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OrphanReport {
    /// Blobs on the drives when the catalog opened.
    pub candidates: usize,
    /// Of those, the ones nothing referenced, now removed.
    pub removed: usize,
}

/// Removes every candidate the store and the checkpoint pointer do not reference.
pub(crate) async fn collect(
    kv: &dyn KvRead,
    blobs: &BlobStore,
    candidates: Vec<BlobId>,
) -> CatalogResult<OrphanReport> {
    let mut referenced: HashSet<BlobId> = read::referenced_blobs(kv).await?;
    // Read after the snapshot: a checkpoint written meanwhile points at a new blob and
    // removes its predecessor itself.
    if let Some(p) = checkpoint::pointer(blobs)? {
        referenced.insert(p.blob.id);
    }
    let mut report = OrphanReport {
        candidates: candidates.len(),
        removed: 0,
    };
    for id in candidates {
        if !referenced.contains(&id) {
            blobs.delete(id)?;
            report.removed += 1;
        }
    }
    Ok(report)
}
