//! Deletes the blobs that commits free (overwritten and deleted versions, replaced and
//! aborted parts) on a thread of its own. Removing six shard files per blob took about
//! a millisecond here (docs/benchmarks.md, deletes); done on the committer, it held up
//! every commit queued behind one that freed blobs.
//!
//! A blob is only handed over once the commit that freed it is durable, so no record
//! references it any more. If the process stops before the reaper gets to it, it is an
//! orphan, removed at the next start (see `orphans`).

use std::sync::mpsc;
use std::thread::JoinHandle;

use prometheus_client::metrics::gauge::Gauge;
use storage::{BlobMeta, BlobStore};

use crate::error::{CatalogError, CatalogResult};

/// What the reaper thread is asked to do.
pub(crate) enum Job {
    /// Delete these blobs.
    Delete(Vec<BlobMeta>),
    /// Answer once every earlier job is done.
    Barrier(mpsc::Sender<()>),
}

/// Handle on the reaper thread: the thread ends once every sender is dropped, after
/// finishing what was queued.
pub(crate) struct Reaper {
    pub jobs: mpsc::Sender<Job>,
    pub thread: JoinHandle<()>,
}

impl Reaper {
    /// Starts the thread; `pending` counts the blobs queued and not yet deleted.
    pub fn start(blobs: BlobStore, pending: Gauge) -> CatalogResult<Self> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("blob-reaper".into())
            .spawn(move || {
                for job in rx {
                    match job {
                        Job::Delete(freed) => {
                            for blob in freed {
                                if let Err(e) = blobs.delete(blob.id) {
                                    tracing::warn!(blob = %blob.id, error = %e, "could not delete a freed blob");
                                }
                                pending.dec();
                            }
                        }
                        Job::Barrier(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            })
            .map_err(|e| CatalogError::Store(format!("spawn blob reaper: {e}")))?;
        Ok(Self { jobs, thread })
    }
}
