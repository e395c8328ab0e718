//! Healing: verify every block of every blob and log segment, and rebuild what is missing
//! or corrupt from the other shards. `eddy heal` runs it once with a progress bar; the
//! server runs it slowly in the background as a scrub.

use std::time::Duration;

use crate::blob::BlobStore;
use crate::error::StorageResult;
use crate::wal;

/// What a heal pass found and fixed.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct HealReport {
    /// Drives formatted because they were missing or empty.
    pub drives_formatted: Vec<usize>,
    /// Blobs checked.
    pub blobs_checked: u64,
    /// Blobs with at least one shard rebuilt.
    pub blobs_healed: u64,
    /// Shards rebuilt or patched.
    pub shards_rebuilt: u64,
    /// Unfinished blobs (no shard with a valid trailer) that were removed.
    pub blobs_unfinished_removed: u64,
    /// Blobs that could not be rebuilt (more than `m` shards lost), by id.
    pub blobs_unrecoverable: Vec<String>,
    /// Log segments checked.
    pub log_segments_checked: usize,
    /// Log segment copies rewritten.
    pub log_segments_rewritten: usize,
}

/// Progress callbacks: `total` once, then `tick` per blob.
pub trait Progress {
    /// The number of blobs that will be checked.
    fn total(&self, blobs: u64);
    /// One more blob checked.
    fn tick(&self);
}

/// Progress that reports nothing.
pub struct NoProgress;

impl Progress for NoProgress {
    fn total(&self, _: u64) {}
    fn tick(&self) {}
}

/// Options for a heal pass.
#[derive(Debug, Clone, Copy, Default)]
pub struct HealOptions {
    /// Also heal the newest log segment (only when no writer is running).
    pub include_active_segment: bool,
    /// Pause between blobs, so a background scrub stays slow.
    pub pause: Option<Duration>,
    /// Blobs that must be kept even when unfinished (being written right now).
    pub keep_unfinished: bool,
}

/// Runs one heal pass over the blob store's drives.
pub fn heal(
    blobs: &BlobStore,
    options: HealOptions,
    progress: &dyn Progress,
) -> StorageResult<HealReport> {
    let set = blobs.drives().clone();
    let mut report = HealReport {
        drives_formatted: set.format_missing()?,
        ..HealReport::default()
    };
    if !report.drives_formatted.is_empty() {
        tracing::info!(drives = ?report.drives_formatted, "formatted replacement drives");
    }
    let w = wal::heal(&set, options.include_active_segment)?;
    report.log_segments_checked = w.segments;
    report.log_segments_rewritten = w.rewritten;
    // The batch logs of a cluster's nodes (`nodes/<number>`): their last segment is its
    // node's to write, like the catalog log's.
    for dir in wal::node_log_dirs(&set) {
        let w = wal::heal_in(&set, &dir, options.include_active_segment)?;
        report.log_segments_checked += w.segments;
        report.log_segments_rewritten += w.rewritten;
    }
    let ids = blobs.list()?;
    progress.total(ids.len() as u64);
    for id in ids {
        report.blobs_checked += 1;
        match blobs.open(id) {
            Ok(reader) => match reader.heal() {
                Ok(fixed) if fixed.is_empty() => {}
                Ok(fixed) => {
                    tracing::info!(blob = %id, shards = ?fixed, "healed blob");
                    report.blobs_healed += 1;
                    report.shards_rebuilt += fixed.len() as u64;
                }
                Err(e) => {
                    tracing::error!(blob = %id, error = %e, "blob cannot be healed");
                    report.blobs_unrecoverable.push(id.to_string());
                }
            },
            Err(crate::StorageError::BlobNotFound(_)) if !options.keep_unfinished => {
                blobs.delete(id)?;
                report.blobs_unfinished_removed += 1;
            }
            Err(_) => {}
        }
        progress.tick();
        if let Some(p) = options.pause {
            std::thread::sleep(p);
        }
    }
    Ok(report)
}
